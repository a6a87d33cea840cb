"""The ``choice`` scorer (PROTOCOL §3, the paper's wording): log-probabilities of the candidates' labels.

Candidates are labelled ``[A]``, ``[B]``, ... in the presented order (``labels="upper"``: A..Z, at most 26;
``labels="upper+lower"``: A..Z then a..z, at most 52). The user message of :mod:`invarirank.llm.prompts` is
rendered with the model's chat template (generation prompt added); a tokenizer without a chat template gets the
plain turn format ``User: <message>\\n\\nAssistant: `` after its BOS. The prompt then ends with the answer prefix
``[``, i.e. exactly where the model names the best candidate. The score of the candidate at presented position
``i`` is ``log_softmax(logits at the last position)[id of label i]`` in float32, all K read from that one pass.

Every label must be one token right after the answer prefix (``encode(prompt_end + L) == encode(prompt_end) +
[id]``) with distinct ids; the check runs for the tokenizer at construction and a call with more candidates than
the tokenizer can label fails with an :class:`~invarirank.errors.InvariRankError` that names the largest K
supported.

Ids: the whole prompt text is tokenised once (canonical ids, :mod:`invarirank.llm.tokens`); the tokens that end
before the first candidate line (chat-template text before the message, instruction, history) form the prefix
shared by every order; the rest (labelled candidate lines, question, end of turn, generation prompt, answer prefix)
form the suffix. Only the last position is projected to the vocabulary.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from invarirank.errors import InvariRankError
from invarirank.types import HistoryEntry, Item, Query

from .engine import CausalLMScorer, Plan, _string
from .prompts import LABEL_SETS, ChoiceTemplate, choice_message

__all__ = ["ChoiceScorer"]

_PROBE = "\x00INVARIRANK-MESSAGE\x00"


class ChoiceScorer(CausalLMScorer):
    """Label log-prob scorer; see the module docstring and :class:`CausalLMScorer` for the options."""

    kind = "choice"
    OPTIONS = {**CausalLMScorer.OPTIONS, "labels": (_string, "a label set name such as upper"),
               "use_chat_template": (lambda v: v is None or isinstance(v, bool), "true or false")}
    VERSION = "1"

    def __init__(self, model: Any = "smollm2-135m", *, labels: str = "upper", template: ChoiceTemplate | None = None,
                 use_chat_template: bool | None = None, **options: Any):
        if labels not in LABEL_SETS:
            raise InvariRankError(f"choice scorer: labels={labels!r}; expected one of {', '.join(LABEL_SETS)}")
        self.template = template or ChoiceTemplate(labels=labels)
        if template is not None and template.labels != labels and labels != "upper":
            raise InvariRankError("choice scorer: give labels either through the template or the labels option")
        super().__init__(model, **options)
        has_template = bool(self.loaded.has_chat_template)
        self.use_chat_template = has_template if use_chat_template is None else bool(use_chat_template)
        if self.use_chat_template and not has_template:
            raise InvariRankError(f"choice scorer: {self.loaded.name} has no chat template "
                                  f"(use_chat_template=True was asked)")
        self._before, self._after, self._bos_ids = self._frame()
        self.label_ids, self.max_k = self._check_labels()

    # -- identity ----------------------------------------------------------------------------------------------
    def score_options(self) -> dict[str, Any]:
        return {"labels": self.template.labels, "chat_template": self.use_chat_template}

    def template_json(self) -> dict[str, Any]:
        return self.template.to_json()

    # -- prompt frame --------------------------------------------------------------------------------------------
    def _frame(self) -> tuple[str, str, tuple[int, ...]]:
        """Text before and after the user message, and the BOS ids to prepend (if the text has none)."""
        tok = self.loaded.tokenizer
        if self.use_chat_template:
            rendered = tok.apply_chat_template([{"role": "user", "content": _PROBE}], tokenize=False,
                                               add_generation_prompt=True)
            if not isinstance(rendered, str) or rendered.count(_PROBE) != 1:
                raise InvariRankError(f"choice scorer: the chat template of {self.loaded.name} does not render the "
                                      f"user message verbatim; pass use_chat_template=False")
            before, after = rendered.split(_PROBE)
            bos_text = getattr(tok, "bos_token", None)
            bos_ids = () if (bos_text and before.startswith(bos_text)) else tuple(self.encoder.bos_ids)
        else:
            turn = self.template.plain_turn
            before, after = turn.user_prefix, turn.assistant_prefix
            bos_ids = tuple(self.encoder.bos_ids)
        return before, after + self.template.answer_prefix, bos_ids

    def _end_text(self) -> str:
        return f"\n{self.template.question}" + self._after

    def _check_labels(self) -> tuple[list[int], int]:
        context = self._end_text()
        ids: list[int] = []
        for lab in self.template.label_alphabet():
            tid = self.encoder.single_token_after(context, lab)
            if tid is None or tid in ids:
                break
            ids.append(tid)
        return ids, len(ids)

    def _labels_for(self, query: Query, k: int) -> list[str]:
        alphabet = self.template.label_alphabet()
        if k > self.max_k:
            shown = f"{alphabet[0]}..{alphabet[k - 1]}" if k <= len(alphabet) else \
                f"{k} labels but the label set {self.template.labels!r} has only {len(alphabet)}"
            hint = " (labels='upper+lower' allows up to 52)" if self.template.labels == "upper" else ""
            raise InvariRankError(
                f"query {query.query_id}: the choice scorer cannot label {k} candidates ({shown}) with single "
                f"tokens for the tokenizer of {self.loaded.name}; the largest K supported is {self.max_k}{hint}")
        return list(alphabet[:k])

    def _length_probe(self, presented: Sequence[Item]) -> Sequence[Item]:
        return list(presented)[: max(1, self.max_k)]

    # -- plans --------------------------------------------------------------------------------------------------
    def _plan(self, query: Query, history: Sequence[HistoryEntry], presented: Sequence[Item]) -> Plan:
        labels = self._labels_for(query, len(presented))
        msg = choice_message(history, presented, labels, self.template)
        text = self._before + msg.text + self._after
        tok = self.encoder.tokenize(text)
        pos = len(self._before) + len(msg.head)
        cut = tok.floor(pos)  # the shared prefix: every token that ends before the first candidate line
        segments = [("the chat frame, instruction and history", 0, pos)]
        for lab, line in zip(labels, msg.candidates):
            segments.append((f"the line of candidate [{lab}]", pos, pos + len(line)))
            pos += len(line)
        segments.append(("the question and answer prefix", pos, len(text)))
        suffix = list(tok.ids[cut:])
        return Plan(text=text, prefix=tuple(self._bos_ids) + tok.ids[:cut], suffix=suffix, tail=[],
                    needed=[len(suffix) - 1], bos=tuple(self._bos_ids), segments=tuple(segments),
                    extra={"label_ids": self.label_ids[:len(presented)]})

    def _reduce(self, plan: Plan, logits: Any) -> np.ndarray:
        import torch

        logp = torch.log_softmax(logits[-1], dim=-1)
        ids = torch.tensor(plan.extra["label_ids"], dtype=torch.long, device=logp.device)
        return logp[ids].to("cpu", torch.float32).numpy().astype(np.float32)

    def prompt_ids(self, query: Query, presented: Sequence[Item]) -> list[int]:
        """The whole prompt's ids (prefix + suffix): for tests and inspection."""
        return self.plan(query, presented).full_ids

    def explain(self, query: Query, presented: Sequence[Item]) -> dict[str, Any]:
        plan = self.plan(query, presented)
        return {"text": plan.text, "ids": plan.full_ids, "label_ids": plan.extra["label_ids"],
                "labels": self._labels_for(query, len(presented)), "history_used": plan.extra["history_used"]}
