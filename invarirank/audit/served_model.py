"""A served model as a :class:`~invarirank.audit.Reranker`: any OpenAI-compatible server (vLLM, llama.cpp, ...).

Stability: full (``invarirank.audit.served(...)`` and ``invarirank audit --server URL --model NAME --mode ...``).

Both modes write the project's choice prompt (:mod:`invarirank.llm._prompts`: instruction, the user's history,
the candidates labelled ``[A]``, ``[B]``, ... in the presented order — ``presented.labels``, so the ``label-swap``
design works) and differ in the question and in what is read:

* ``logprobs`` (``/v1/completions``): the prompt is the choice message in a *frame* — the plain turn
  ``User: <message>\\n\\nAssistant: `` (default; the choice scorer's frame for a model without a chat template)
  or a given ``frame=(before, after)`` — e.g. a chat template rendered as the choice scorer renders it
  (:func:`invarirank.llm._frames.served_frame`; ``--tokenizer FOLDER`` on the command line) — followed by ``[``;
  the score of presented position ``i`` is the next-token log-probability of label ``i``'s token. The label
  tokens are found with the server's ``/tokenize`` (``tokenize(prompt + L)`` must be ``tokenize(prompt)`` plus one
  token; else the label is refused by name), and their log-probabilities asked by
  id (``logprob_token_ids``, a vLLM extension: exact for every label). A server without these answers a top-k
  (``top_logprobs``; ``logprob_source="top-k"``): a label missing from it fails the audit, naming the labels —
  never a silent guess. The ranking is by descending log-probability, ties to the earlier presented position.
* ``generate`` (``/v1/chat/completions``): the question asks for the whole ranking in RankGPT's form
  ``[B] > [A] > [C]``; the answer is parsed **strictly** (the whole answer, stripped, must be labels in brackets
  joined by ``>``; anything else is *unparsable* and contributes no id). The order rule of
  :mod:`invarirank.audit.rerankers` then completes the ranking and counts ``unknown``, ``duplicate`` and
  ``missing`` ids in the row's ``repairs``; the row's ``parse`` holds ``unparsable``, ``reasoning`` (a closed
  ``<think>...</think>`` block that was removed before parsing) and ``truncated`` (the server stopped at
  ``max_tokens``), each 0 or 1.

**Reasoning blocks.** A chat template that opens the answer with ``<think>`` is never read as an answer: in
``generate`` mode a closed block is removed (counted) and an unclosed one fails the audit with one line (raise
``max_tokens`` or turn the model's thinking off); in ``logprobs`` mode a frame whose answer opens with ``<think>``
is refused when the reranker is built (the next token would be the block's, not a label).

**Reproducibility.** Sampling is fixed (``temperature`` 0, ``top_p`` 1, ``seed``) and recorded in
:meth:`identity`; every request and answer goes to the journal (:mod:`invarirank.audit._served_http`), so a rerun
of an interrupted audit with the same journal re-sends only the unanswered requests and gives identical rows.
The server's URL is not part of the identity (the manifest holds what equal runs share, never a machine's address).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..llm._prompts import ChoiceTemplate, choice_message
from ..types import Query, rank_by_scores
from ._served_http import Journal, ServerClient, ServerRejected
from .rerankers import Presentation, Ranking, complete_ranking

__all__ = ["served"]

MODES = ("logprobs", "generate")

#: the generation mode's question (RankGPT's answer form); ``{k}``: the number of candidates
RANK_QUESTION = (
    "Rank all {k} candidates by how much the user will prefer them, best first. Answer only with their labels in "
    "the form [B] > [A] > [C], and nothing else."
)

_STRICT = re.compile(r"\[([^\[\]\s]+)\](?:\s*>\s*\[([^\[\]\s]+)\])*")
_LABEL = re.compile(r"\[([^\[\]\s]+)\]")


def strip_reasoning(text: str) -> tuple[str, bool]:
    """``text`` without a leading reasoning block, and whether there was one. A block is ``<think>...</think>``
    at the start, or text up to a ``</think>`` the template's own ``<think>`` opened. An unclosed block raises."""
    s = text.lstrip()
    if "</think>" in s and (s.startswith("<think>") or "<think>" not in s):
        return s.split("</think>", 1)[1], True
    if s.startswith("<think>"):
        raise InvariRankError("open")
    return text, False


def parse_ranking(answer: str) -> list[str] | None:
    """The labels of a strict RankGPT answer (``[B] > [A] > [C]``, whitespace around ``>`` allowed), best first;
    ``None`` when the stripped answer is anything else."""
    s = answer.strip()
    if not _STRICT.fullmatch(s):
        return None
    return _LABEL.findall(s)


class ServedReranker:
    """See the module docstring and :func:`served`."""

    uses_labels = True

    def __init__(
        self,
        server: str,
        model: str,
        mode: str,
        *,
        name: str | None = None,
        journal: str | Path | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        retries: int = 4,
        backoff: float = 1.0,
        seed: int = 0,
        max_tokens: int | None = None,
        top_logprobs: int = 20,
        logprob_source: str = "auto",
        frame: tuple[str, str] | None = None,
        frame_name: str = "chat",
        template: ChoiceTemplate | None = None,
    ):
        if mode not in MODES:
            raise InvariRankError(f"served reranker: mode = {mode!r}; expected one of {', '.join(MODES)}")
        if not isinstance(model, str) or not model:
            raise InvariRankError("served reranker: --model is required (the name the server serves)")
        if logprob_source not in ("auto", "fixed", "top-k"):
            raise InvariRankError(f"served reranker: logprob_source = {logprob_source!r}; expected auto, fixed, top-k")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvariRankError(f"served reranker: seed = {seed!r}; expected an integer >= 0")
        self.model, self.mode, self.seed = model, mode, seed
        self.name = name or f"{model.rstrip('/').rsplit('/', 1)[-1]}-{mode}"
        self.client = ServerClient(
            server, journal=Journal(journal), concurrency=concurrency, timeout=timeout, retries=retries, backoff=backoff
        )
        self.template = template or ChoiceTemplate()
        self.max_tokens, self.top_logprobs, self.source = max_tokens, int(top_logprobs), logprob_source
        self.label_ids: dict[str, int] = {}
        turn = self.template.plain_turn
        self.frame_name, self.before, self.after = "plain", turn.user_prefix, turn.assistant_prefix
        if frame is not None:
            self._set_frame(frame, frame_name)
        self._checked = False

    # -- set-up ----------------------------------------------------------------------------------------------------
    def _set_frame(self, frame: tuple[str, str], frame_name: str) -> None:
        before, after = frame
        if "<think>" in after:
            raise InvariRankError(
                f"served reranker: the frame {frame_name!r} opens the answer with a reasoning block (<think>), so the "
                f"next token is not a label; use the plain frame or --mode generate"
            )
        self.frame_name, self.before, self.after = frame_name, before, after

    def _check_model(self) -> None:
        if self._checked:
            return
        listed = self.client.get("models")
        served = [m.get("id") for m in (listed.get("data") or [])] if isinstance(listed, dict) else []
        if self.model not in served:
            raise InvariRankError(f"--model {self.model!r}: the server serves {', '.join(map(str, served)) or 'none'}")
        self._checked = True

    def identity(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "adapter": f"served-{self.mode}",
            "name": self.name,
            "model": self.model,
            "endpoint": "completions" if self.mode == "logprobs" else "chat/completions",
            "sampling": {"temperature": 0.0, "top_p": 1.0, "seed": self.seed, "max_tokens": self.max_tokens},
            "prompt": self.template.to_json(),
        }
        if self.mode == "logprobs":
            out.update(frame=self.frame_name, logprob_source=self.source, label_token_ids=dict(self.label_ids))
            if self.source == "top-k":
                out["top_logprobs"] = self.top_logprobs
        else:
            out["question"] = RANK_QUESTION
        return out

    # -- prompts ---------------------------------------------------------------------------------------------------
    @staticmethod
    def _labels(query: Query, p: Presentation) -> tuple[str, ...]:
        if len(p.labels) != len(p):
            raise InvariRankError(
                f"served reranker: query {query.query_id!r}, order t={p.t}: {len(p)} candidates but "
                f"{len(p.labels)} labels (the label alphabet has fewer letters than K)"
            )
        return p.labels

    def prompt(self, query: Query, p: Presentation) -> str:
        """The log-prob mode's completion prompt (frame + choice message + ``[``)."""
        msg = choice_message(query.history, p, self._labels(query, p), self.template)
        return self.before + msg.text + self.after + self.template.answer_prefix

    def messages(self, query: Query, p: Presentation) -> list[dict[str, str]]:
        """The generation mode's chat messages (one user turn)."""
        template = dataclasses.replace(self.template, question=RANK_QUESTION.format(k=len(p)))
        return [{"role": "user", "content": choice_message(query.history, p, self._labels(query, p), template).text}]

    # -- log-prob mode ---------------------------------------------------------------------------------------------
    def _find_label_ids(self, prompt: str, labels: Sequence[str]) -> bool:
        """Label token ids through the server's ``/tokenize``; False when it has none (then top-k)."""
        root = ServerClient(self.client.base_url.removesuffix("/v1"), timeout=self.client.timeout, retries=0)

        def ids(text: str) -> list[int]:
            body = {"model": self.model, "prompt": text, "add_special_tokens": False}
            return list(root.post("tokenize", body, journal=False)["tokens"])

        try:
            base = ids(prompt)
        except (ServerRejected, InvariRankError):
            return False
        for lab in labels:
            got = ids(prompt + lab)
            if len(got) != len(base) + 1 or got[: len(base)] != base:
                raise InvariRankError(
                    f"served reranker: label {lab!r} is not one token after the prompt's "
                    f"{self.template.answer_prefix!r} for {self.model} (tokenize(prompt + {lab!r}) adds "
                    f"{len(got) - len(base)} tokens)"
                )
            self.label_ids[lab] = got[-1]
        return True

    def _body_logprobs(self, prompt: str, labels: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
            "top_p": 1.0,
            "seed": self.seed,
        }
        if self.source == "fixed":
            body.update(logprobs=1, logprob_token_ids=[self.label_ids[lab] for lab in labels])
            body["return_tokens_as_token_ids"] = True
        else:
            body["logprobs"] = self.top_logprobs
        return body

    def _label_scores(self, answer: Any, labels: Sequence[str], where: str) -> list[float]:
        try:
            top = answer["choices"][0]["logprobs"]["top_logprobs"][0]
        except (KeyError, IndexError, TypeError):
            raise InvariRankError(f"served reranker ({where}): the answer holds no top_logprobs") from None
        keys = {lab: f"token_id:{self.label_ids[lab]}" for lab in labels} if self.source == "fixed" else None
        scores, missing = [], []
        for lab in labels:
            value = top.get(keys[lab] if keys else lab)
            if value is None:
                missing.append(lab)
            else:
                scores.append(float(value))
        if missing:
            how = "the fixed-token-id log-probs" if keys else f"the top-{self.top_logprobs} log-probs"
            raise InvariRankError(
                f"served reranker ({where}): {how} at the answer position lack label(s) {', '.join(missing)}; "
                f"a missing label is never guessed (raise --top-logprobs, or use a server with logprob_token_ids)"
            )
        return scores

    def _rerank_logprobs(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]:
        prompts = [self.prompt(q, p) for q, p in requests]
        needed = sorted({lab for _, p in requests for lab in p.labels} - set(self.label_ids))
        if self.source in ("auto", "fixed") and needed:
            if self._find_label_ids(prompts[0], needed):
                self.source = "fixed"
            elif self.source == "fixed":
                raise InvariRankError(f"server {self.client.base_url}: no /tokenize, so no fixed-token-id log-probs")
            else:
                self.source = "top-k"
        bodies = [self._body_logprobs(t, p.labels) for t, (_, p) in zip(prompts, requests)]
        answers = self.client.post_many("completions", bodies)
        out = []
        for (q, p), answer in zip(requests, answers):
            scores = self._label_scores(answer, p.labels, f"query {q.query_id!r}, order t={p.t}")
            ids = p.ids
            out.append(Ranking([ids[i] for i in rank_by_scores(scores)], scores))
        return out

    # -- generation mode -------------------------------------------------------------------------------------------
    def _rerank_generate(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]:
        bodies = []
        for q, p in requests:
            body = {"model": self.model, "messages": self.messages(q, p), "temperature": 0.0, "top_p": 1.0}
            body.update(seed=self.seed, max_tokens=self.max_tokens or 6 * len(p) + 16)
            bodies.append(body)
        answers = self.client.post_many("chat/completions", bodies)
        return [self._read_generation(q, p, a) for (q, p), a in zip(requests, answers)]

    def _read_generation(self, q: Query, p: Presentation, answer: Any) -> Ranking:
        where = f"query {q.query_id!r}, order t={p.t}"
        try:
            choice = answer["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            raise InvariRankError(f"served reranker ({where}): the answer holds no message content") from None
        try:
            text, reasoning = strip_reasoning(text)
        except InvariRankError:
            raise InvariRankError(
                f"served reranker ({where}): {self.model} answered with an unclosed reasoning block (<think> without "
                f"</think>); it is never read as a ranking: raise --max-tokens or turn the model's thinking off"
            ) from None
        labels = parse_ranking(text)
        by_label = dict(zip(p.labels, p.ids))
        returned = [by_label.get(lab, f"\x00unknown label {lab}") for lab in (labels or [])]
        output, counts = complete_ranking(returned, p.ids, who=f"served reranker ({where})")
        parse = {"unparsable": int(labels is None), "reasoning": int(reasoning)}
        parse["truncated"] = int(choice.get("finish_reason") == "length")
        return Ranking(output, None, counts, parse=parse)

    def rerank(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]:
        if not requests:
            return []
        self._check_model()
        for q, p in requests:
            self._labels(q, p)
        if self.mode == "logprobs":
            return self._rerank_logprobs(requests)
        return self._rerank_generate(requests)


def served(server: str, model: str, mode: str = "logprobs", **options: Any) -> ServedReranker:
    """A served model as a :class:`~invarirank.audit.Reranker` (module docstring). ``server``: the base URL ending
    in ``/v1``; ``model``: the name it serves; ``mode``: ``logprobs`` or ``generate``. Options: ``name`` (the rows'
    method; default ``<model>-<mode>``), ``journal`` (a file: the requests and answers, for resuming),
    ``concurrency`` (requests in flight, default 4), ``timeout`` (seconds per request, default 120), ``retries``
    (default 4) and ``backoff`` (seconds, doubled per retry, default 1), ``seed`` (default 0), ``max_tokens``
    (generate; default 6K + 16), ``top_logprobs`` (the top-k fallback, default 20), ``logprob_source``
    (``auto``: fixed ids where the server has them, else top-k; ``fixed``; ``top-k``), ``frame`` (the text before
    and after the log-prob prompt's message, generation prompt included:
    :func:`invarirank.llm._frames.served_frame`) and its ``frame_name`` (recorded), ``template`` (a
    :class:`~invarirank.llm._prompts.ChoiceTemplate`).

    Stability: full (a model behind an OpenAI-compatible server, by label log-probs or a generated ranking)."""
    return ServedReranker(server, model, mode, **options)
