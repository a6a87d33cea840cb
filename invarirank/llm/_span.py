"""The ``span`` scorer (default; the protocol chapter): mean log-probability of each candidate's own tokens.

The prompt is plain text without a chat template (only the tokenizer's own BOS in front), laid out as in
:mod:`invarirank.llm._prompts`, and the model sees its canonical ids (the tokenizer's ids for the whole text,
:mod:`invarirank.llm._tokens`). The score of the candidate at presented position ``i`` is the mean, over the tokens
strictly between its ``[ITEM]`` and ``[/ITEM]`` that hold a character of its line ``Title (Year), genres: A, B``,
of ``log p(token | everything before it)``, read in float32 from one forward pass over the whole serialised order.
Higher = preferred; ties go to the earlier presented position (:func:`invarirank.types.rank_by_scores`).

For SmolLM2 and Gemma 3 (and any tokenizer that never merges a newline with a non-whitespace character) those are
exactly the tokens of the line: the newlines around it are tokens of their own, belonging to the delimiters (the
tests check this on random prompts). A tokenizer that writes a line's last character and the following newline as
one token (the Llama 3 / Qwen 2 pre-tokenizers do so for punctuation: ``")\\n"``) scores that token with the line.
A token that holds characters of both the line and a delimiter tag is an error naming the model and the offset.

Work: the shared prefix (instruction + history) is computed once per query; a pass computes the candidate part
only, up to the second-to-last token of the last candidate (nothing after it influences any score), and the output
projection runs only on the positions that predict a candidate token.

``special_delimiters=True`` reproduces the authors' variant: ``[SPAN] [/SPAN] [ITEM] [/ITEM]`` become new special
tokens whose input (and, if untied, output) embeddings are initialised to the mean of the existing rows. The model
is modified, so the scorer works on its own copy (the weights hash in its identity is derived from the base hash).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from invarirank.errors import InvariRankError
from invarirank.types import HistoryEntry, Item, Query

from ._engine import CausalLMScorer
from ._missing_passes import PassPlan
from ._options import CAUSAL_LM_OPTIONS, SPAN_OPTIONS, own_options
from ._prompts import SpanTemplate, span_segments
from ._tokens import TokenizedText


class SpanScorer(CausalLMScorer):
    """Span log-prob scorer; see the module docstring and :class:`CausalLMScorer` for the options."""

    kind = "span"
    OPTIONS = SPAN_OPTIONS
    VERSION = "1"

    def __init__(self, model: Any = "smollm2-135m", *, seed: int = 0, cache_dir: Any = None, **options: Any):
        """Options: :data:`invarirank.llm._options.SPAN_OPTIONS` (``special_delimiters``, ``template``: a
        :class:`~invarirank.llm._prompts.SpanTemplate`, and those of :class:`CausalLMScorer`)."""
        own, options = own_options(SPAN_OPTIONS, CAUSAL_LM_OPTIONS, options, "span scorer")
        self.template = own["template"] or SpanTemplate()
        self.special_delimiters = bool(own["special_delimiters"])
        if self.special_delimiters:
            if options.get("backend") == "vllm":
                raise InvariRankError("span scorer: special_delimiters=True changes the model; backend='vllm' cannot")
            model = _with_special_delimiters(model, self.template, options)
        super().__init__(model, seed=seed, cache_dir=cache_dir, **options)

    def score_options(self) -> dict[str, Any]:
        return {"special_delimiters": self.special_delimiters}

    def template_json(self) -> dict[str, Any]:
        return self.template.to_json()

    def _plan(self, query: Query, history: Sequence[HistoryEntry], presented: Sequence[Item]) -> PassPlan:
        seg = span_segments(history, presented, self.template)
        tok = self.encoder.tokenize(seg.text)
        bos = tuple(self.encoder.bos_ids)
        pos = len(seg.prefix)
        cut = tok.floor(pos)  # the history prefix: every token that ends before the first [ITEM]
        segments = [("the instruction and history", 0, pos)]
        targets: list[int] = []
        needed: list[int] = []
        groups: list[tuple[int, int]] = []
        spans: list[tuple[int, int]] = []
        for i, (open_, body, close) in enumerate(seg.items):
            where = f"position {i + 1} (item {presented[i].item_id})"
            a = pos + len(open_)
            b = a + len(body)
            segments += [
                (f"the [ITEM] of {where}", pos, a),
                (f"the line of {where}", a, b),
                (f"the [/ITEM] of {where}", b, b + len(close)),
            ]
            start, end = self._scored_tokens(
                query,
                tok,
                where,
                a,
                b,
                lo=pos + len(self.template.item_open),
                hi=b + close.index(self.template.item_close),
                cut=cut,
            )
            pos = b + len(close)
            start, end = start - cut, end - cut  # suffix-relative
            spans.append((start, end))
            g0 = len(needed)
            needed.extend(range(start - 1, end - 1))  # position q predicts token q + 1
            targets.extend(tok.ids[cut + start : cut + end])
            groups.append((g0, len(needed)))
        ids = list(tok.ids[cut:])
        last = needed[-1] + 1  # nothing after the last needed position influences a score
        return PassPlan(
            text=seg.text,
            prefix=bos + tok.ids[:cut],
            suffix=ids[:last],
            tail=ids[last:],
            needed=needed,
            bos=bos,
            segments=tuple(segments),
            extra={"targets": targets, "groups": groups, "spans": spans, "suffix_all": ids},
        )

    def _scored_tokens(
        self, query: Query, tok: TokenizedText, where: str, a: int, b: int, *, lo: int, hi: int, cut: int
    ) -> tuple[int, int]:
        """Token range ``[i, j)`` (canonical, without BOS) scored for the line ``[a, b)``: every token holding one
        of its characters. Those tokens must lie between the end of ``[ITEM]`` (character ``lo``) and the start of
        ``[/ITEM]`` (``hi``) and after the ``cut`` tokens of the history prefix."""
        i, j = tok.covering(a, b)
        if a == b or j == i:  # an empty line first: on Llama 3 / Qwen its newlines merge with "]"
            raise InvariRankError(
                f"query {query.query_id}: the candidate at {where} renders as an empty line (no title, year or genres)"
            )
        first, last = tok.char_range(i, j)
        if first < lo or last > hi or i <= cut:
            off = first if first < lo or i <= cut else hi
            raise InvariRankError(
                f"model {self.loaded.name}, span prompt of query {query.query_id}: the tokens of the line of the "
                f"candidate at {where} (characters {a}..{b}) reach into its delimiters at character offset {off} "
                f"(tokens {tok.text[first:last]!r}): this tokenizer merges the line with [ITEM] or [/ITEM], so "
                f"the line's own tokens cannot be scored"
            )
        return i, j

    def _reduce(self, plan: PassPlan, logits: Any) -> np.ndarray:
        import torch

        logp = torch.log_softmax(logits, dim=-1)
        tgt = torch.tensor(plan.extra["targets"], dtype=torch.long, device=logp.device)
        tok_lp = logp.gather(1, tgt[:, None])[:, 0].to("cpu", torch.float32).numpy().astype(np.float64)
        scores = np.array([tok_lp[a:b].mean() for a, b in plan.extra["groups"]], dtype=np.float32)
        return scores

    def scored_texts(self, query: Query, presented: Sequence[Item]) -> list[str]:
        """For each presented candidate, the decoded text of exactly the tokens its score averages over."""
        plan = self.plan(query, presented)
        tg = plan.extra["targets"]
        return [self.encoder.decode(tg[a:b]) for a, b in plan.extra["groups"]]

    def explain(self, query: Query, presented: Sequence[Item]) -> dict[str, Any]:
        """The prompt text, its ids and the scored spans (for inspection and tests)."""
        plan = self.plan(query, presented)
        return {
            "text": plan.text,
            "prefix_ids": list(plan.prefix),
            "suffix_ids": plan.extra["suffix_all"],
            "spans": plan.extra["spans"],
            "scored_texts": self.scored_texts(query, presented),
            "history_used": plan.extra["history_used"],
        }


def _with_special_delimiters(model: Any, template: SpanTemplate, options: dict[str, Any]) -> Any:
    """A private copy of the model + tokenizer with the four delimiters as mean-initialised special tokens."""
    import torch

    from .models import LoadedModel, load_model

    if isinstance(model, LoadedModel):
        base = model
        net, tok = copy.deepcopy(base.model), copy.deepcopy(base.tokenizer)
    else:
        load = {k: options.pop(k) for k in list(options) if k in CAUSAL_LM_OPTIONS and CAUSAL_LM_OPTIONS[k].load}
        base = load_model(model or "smollm2-135m", reuse=False, **load)
        net, tok = base.model, base.tokenizer
    old_in = net.get_input_embeddings().weight.detach().clone()
    out_layer = net.get_output_embeddings()
    tied = out_layer is not None and out_layer.weight.data_ptr() == net.get_input_embeddings().weight.data_ptr()
    old_out = out_layer.weight.detach().clone() if out_layer is not None and not tied else None
    added = (
        tok.add_special_tokens(
            {"additional_special_tokens": list(template.delimiters)}, replace_extra_special_tokens=False
        )
        if "replace_extra_special_tokens" in _params(tok.add_special_tokens)
        else tok.add_special_tokens({"additional_special_tokens": list(template.delimiters)})
    )
    n_old = old_in.shape[0]
    if len(tok) > n_old:
        net.resize_token_embeddings(len(tok), mean_resizing=False)
    with torch.no_grad():
        emb = net.get_input_embeddings().weight
        emb[n_old:] = old_in.mean(dim=0, keepdim=True).to(emb.dtype)
        out_layer = net.get_output_embeddings()
        if old_out is not None and out_layer is not None:
            out_layer.weight[n_old:] = old_out.mean(dim=0, keepdim=True).to(out_layer.weight.dtype)
    digest = hashlib.sha256(f"{base.weights_sha256}|special-delimiters-mean-v1|{added}".encode()).hexdigest()
    from ._weights import hash_tokenizer

    return LoadedModel(
        name=f"{base.name}+special-delimiters",
        model=net.eval(),
        tokenizer=tok,
        device=base.device,
        dtype=base.dtype,
        folder=None,
        weights_sha256=digest,
        tokenizer_sha256=hash_tokenizer(tok),
        max_length=base.max_length,
        has_chat_template=base.has_chat_template,
        info=dict(base.info),
    )


def _params(fn: Any) -> set[str]:
    import inspect

    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()
