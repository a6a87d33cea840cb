"""The ``choice`` scorer (the protocol chapter; the paper's wording): log-probabilities of the candidates' labels.

Candidates are labelled ``[A]``, ``[B]``, ... in the presented order (``labels="upper"``: A..Z, at most 26;
``labels="upper+lower"``: A..Z then a..z, at most 52). The user message of :mod:`invarirank.llm._prompts` is
rendered with the model's chat template (generation prompt added, fixed template variables and no clock:
:mod:`invarirank.llm._frames`); a tokenizer without a chat template gets the plain turn format
``User: <message>\n\nAssistant: `` after its BOS. The prompt then ends where the model writes its answer: the
template's own text before an assistant answer (the *lead*: ``""`` for ChatML, Llama 3 and Qwen 2.5, ``" "`` for
Mistral v0.3) and, in the ``bracket`` label scheme, the label's opening ``[``. The score of the candidate at
presented position ``i`` is the log-probability, in float32, of label ``i``'s answer tokens (a
:class:`~invarirank.types.LabelledOrder` names the label at each position instead: the audit's ``label-swap``
design; the prompt then writes, and the scorer reads, those labels):

* ``bracket`` scheme (the bracket is its own token: SmolLM2, Gemma 3, Mistral): ``log_softmax(last logits)[id(L)]``;
* ``merged`` scheme (Llama 3, Qwen 2.5 write ``[A`` as one token): ``log_softmax(last logits)[id("[L")]``, and for a
  label whose ``[L`` is two tokens (``O`` and ``Q`` there) ``log p("[") + log p(L | "[")`` read from one appended
  position (the prompt then ends with ``[``).

The scheme is derived from the tokenizer when the scorer is built (:func:`invarirank.llm._frames.label_scheme`): the
ids read are those ``tokenizer(prompt + answer)`` gives. A call with more candidates than the scheme can label fails
with an :class:`~invarirank.errors.InvariRankError` naming the largest K supported and why the next label is not.

Ids: the whole prompt text is tokenised once (canonical ids, :mod:`invarirank.llm._tokens`; special-token strings in
the data stay text); the tokens that end before the first candidate line (chat-template text before the message,
instruction, history) form the prefix shared by every order; the rest form the suffix. Only the read positions are
projected to the vocabulary. Each plan checks that every label's read ids are what the tokenizer gives for the
prompt followed by that answer (:meth:`ChoiceScorer._check_reads`).

Identity: ``options`` holds ``labels`` and ``chat_template`` as in version 1; ``label_scheme`` and
``frame_sha256`` (the rendered frame's hash) join them only where the prompts differ from version 1's (a
``merged`` scheme, an answer lead, or a template that would otherwise write the date), so the pass-cache keys and
run fingerprints of SmolLM2 and Gemma 3 are unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from invarirank.errors import InvariRankError
from invarirank.types import HistoryEntry, Item, Query, labels_of

from ._engine import CausalLMScorer
from ._frames import Frame, LabelScheme, chat_frame, label_scheme
from ._missing_passes import PassPlan
from ._options import CAUSAL_LM_OPTIONS, CHOICE_OPTIONS, own_options
from ._prompts import LABEL_SETS, ChoiceTemplate, choice_message, render_item


def current_frame_sha256(model: Any, options: Mapping[str, Any]) -> str:
    """The ``frame_sha256`` a choice scorer on ``model`` with a run's stored ``options`` (``labels``,
    ``chat_template``) would record today, from the tokenizer alone (no weights): a finished run whose stored hash
    differs was made with another rendered frame (a changed chat template) and is ``outdated``."""
    if options.get("chat_template"):
        from .models import load_tokenizer

        return chat_frame(load_tokenizer(str(model), allow_download=False), str(model)).sha256
    turn = ChoiceTemplate(labels=str(options.get("labels", "upper"))).plain_turn
    return Frame(turn.user_prefix, turn.assistant_prefix, "", False).sha256


class ChoiceScorer(CausalLMScorer):
    """Label log-prob scorer; see the module docstring and :class:`CausalLMScorer` for the options."""

    kind = "choice"
    #: it writes a label before each candidate and reads the labels' log-probabilities, so the audit's
    #: ``label-swap`` design can permute them (a :class:`~invarirank.types.LabelledOrder`)
    uses_labels = True
    OPTIONS = CHOICE_OPTIONS
    VERSION = "1"

    def __init__(self, model: Any = "smollm2-135m", *, seed: int = 0, cache_dir: Any = None, **options: Any):
        """Options: :data:`invarirank.llm._options.CHOICE_OPTIONS` (``labels``, ``use_chat_template``, ``template``:
        a :class:`~invarirank.llm._prompts.ChoiceTemplate`, and those of :class:`CausalLMScorer`)."""
        own, options = own_options(CHOICE_OPTIONS, CAUSAL_LM_OPTIONS, options, "choice scorer")
        labels, template, use_chat_template = own["labels"], own["template"], own["use_chat_template"]
        if labels not in LABEL_SETS:
            raise InvariRankError(f"choice scorer: labels={labels!r}; expected one of {', '.join(LABEL_SETS)}")
        self.template = template or ChoiceTemplate(labels=labels)
        if template is not None and template.labels != labels and labels != "upper":
            raise InvariRankError("choice scorer: give labels either through the template or the labels option")
        fmt = self.template.label_format
        if "{}" not in fmt or fmt[: fmt.index("{}")] != self.template.answer_prefix:
            raise InvariRankError(
                f"choice scorer: the template's answer_prefix {self.template.answer_prefix!r} must "
                f"be the label's opening in label_format {fmt!r}"
            )
        super().__init__(model, seed=seed, cache_dir=cache_dir, **options)
        has_template = bool(self.loaded.has_chat_template)
        self.use_chat_template = has_template if use_chat_template is None else bool(use_chat_template)
        if self.use_chat_template and not has_template:
            raise InvariRankError(
                f"choice scorer: {self.loaded.name} has no chat template (use_chat_template=True was asked)"
            )
        self._reads_checked: set[tuple] = set()
        self.frame, self._bos_ids = self._frame()
        self._before, self._after = self.frame.before, self.frame.after
        self.encoder.frame = (self.frame.before, self.frame.after)
        self.scheme: LabelScheme = label_scheme(
            self.encoder, self._end_text(), self.frame.lead, self.template.label_alphabet(), self.template.label_format
        )
        #: the id read last for each usable label (the label's own token)
        self.label_ids = [r.ids[-1] for r in self.scheme.reads]
        self.max_k = self.scheme.max_k

    # -- identity ----------------------------------------------------------------------------------------------
    def score_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"labels": self.template.labels, "chat_template": self.use_chat_template}
        if self.scheme.name != "bracket":
            opts["label_scheme"] = self.scheme.name
        if self.scheme.name != "bracket" or self.frame.lead or self.frame.volatile:
            opts["frame_sha256"] = self.frame.sha256
        return opts

    def template_json(self) -> dict[str, Any]:
        return self.template.to_json()

    # -- prompt frame --------------------------------------------------------------------------------------------
    def _frame(self) -> tuple[Frame, tuple[int, ...]]:
        """The chat frame (or the plain turn) and the BOS ids to prepend (if the text has none)."""
        tok = self.loaded.tokenizer
        if self.use_chat_template:
            frame = chat_frame(tok, self.loaded.name)
            bos_text = getattr(tok, "bos_token", None)
            bos_ids = () if (bos_text and frame.before.startswith(bos_text)) else tuple(self.encoder.bos_ids)
            return frame, bos_ids
        turn = self.template.plain_turn
        return Frame(turn.user_prefix, turn.assistant_prefix, "", False), tuple(self.encoder.bos_ids)

    def _end_text(self) -> str:
        return f"\n{self.template.question}" + self._after

    def _labels_for(self, query: Query, k: int, given: Sequence[str] | None = None) -> list[str]:
        """The label written before each presented position: the alphabet's first ``k`` in order, or ``given``
        (a :class:`~invarirank.types.LabelledOrder`'s labels: ``k`` distinct labels the scheme can read)."""
        alphabet = self.template.label_alphabet()
        if given is not None:
            usable = alphabet[: self.max_k]
            bad = [x for x in given if x not in usable]
            if len(given) != k or len(set(given)) != k or bad:
                why = f"label {bad[0]!r} is not one of {''.join(usable)!r}" if bad else "expected distinct labels"
                raise InvariRankError(
                    f"query {query.query_id}: the choice scorer got labels {list(given)} for {k} presented candidates "
                    f"({why}; the label scheme {self.scheme.name!r} of {self.loaded.name} reads {len(usable)})"
                )
            return list(given)
        if k > self.max_k:
            shown = (
                f"{alphabet[0]}..{alphabet[k - 1]}"
                if k <= len(alphabet)
                else f"{k} labels but the label set {self.template.labels!r} has only {len(alphabet)}"
            )
            hint = (
                " (labels='upper+lower' allows up to 52)"
                if (self.template.labels == "upper" and self.max_k == len(alphabet))
                else ""
            )
            why = f": {self.scheme.stop}" if self.scheme.stop and self.max_k < len(alphabet) else ""
            raise InvariRankError(
                f"query {query.query_id}: the choice scorer cannot label {k} candidates ({shown}) for the tokenizer "
                f"of {self.loaded.name} (label scheme {self.scheme.name!r}); the largest K supported is "
                f"{self.max_k}{hint}{why}"
            )
        return list(alphabet[:k])

    def _length_probe(self, presented: Sequence[Item]) -> Sequence[Item]:
        return list(presented)[: max(1, self.max_k)]

    # -- plans --------------------------------------------------------------------------------------------------
    def _plan(self, query: Query, history: Sequence[HistoryEntry], presented: Sequence[Item]) -> PassPlan:
        for i, it in enumerate(presented):  # before anything tokenizer-specific can fail
            if not render_item(it, self.template.attribute_label):
                raise InvariRankError(
                    f"query {query.query_id}: the candidate at position {i + 1} (item "
                    f"{it.item_id}) renders as an empty line (no title, year or genres)"
                )
        labels = self._labels_for(query, len(presented), labels_of(presented))
        alphabet = self.template.label_alphabet()
        at = [alphabet.index(lab) for lab in labels]  # 0..k-1 in presented order unless the labels are given
        reads = [self.scheme.reads[j] for j in at]
        split = any(r.split for r in reads)
        msg = choice_message(history, presented, labels, self.template)
        opening = self.template.label_format[: self.template.label_format.index("{}")]
        base = self._before + msg.text + self._after + self.scheme.answer
        text = base + (opening if split else "")
        tok = self.encoder.tokenize(text)
        pos = len(self._before) + len(msg.head)
        cut = tok.floor(pos)  # the shared prefix: every token that ends before the first candidate line
        segments = [("the chat frame, instruction and history", 0, pos)]
        for lab, line in zip(labels, msg.candidates):
            segments.append((f"the line of candidate [{lab}]", pos, pos + len(line)))
            pos += len(line)
        segments.append(("the question and answer prefix", pos, len(text)))
        suffix = list(tok.ids[cut:])
        # read positions: the prompt's last token (and the appended bracket when a label is written apart)
        needed = [len(suffix) - 2, len(suffix) - 1] if split else [len(suffix) - 1]
        plan = PassPlan(
            text=text,
            prefix=tuple(self._bos_ids) + tok.ids[:cut],
            suffix=suffix,
            tail=[],
            needed=needed,
            bos=tuple(self._bos_ids),
            segments=tuple(segments),
            extra={
                "label_ids": [self.label_ids[j] for j in at],
                "reads": [r.ids for r in reads],
                "label_scheme": self.scheme.name,
            },
        )
        self._check_reads(query, plan, base, labels, split)
        return plan

    def _check_reads(self, query: Query, plan: PassPlan, base: str, labels: Sequence[str], split: bool) -> None:
        """Every label's read ids must be what ``tokenizer(prompt + answer)`` gives after the prompt's ids: checked
        on the text from the frame's last special token on (special tokens cut the tokenisation, so this tail is
        tokenised as in the whole text; verified), else on the whole text."""
        ids = plan.full_ids[len(plan.bos) :]
        n_base = len(ids) - (1 if split else 0)
        tok = self.encoder.tokenize(plan.text)
        start = self._tail_start(plan.text, tok)
        i0 = tok.floor(start)
        if start and tuple(self.encoder.tokenize(plan.text[start:]).ids) != tuple(ids[i0:]):
            start, i0 = 0, 0
        memo_key = (base[start:], tuple(ids[i0:]), tuple(labels))
        if memo_key in self._reads_checked:
            return
        fmt = self.template.label_format
        cut = len(fmt[: fmt.index("{}")]) if self.scheme.name == "bracket" else 0  # the prompt ends with "["
        for lab, read in zip(labels, plan.extra["reads"]):
            want = list(ids[i0:n_base]) + list(read)
            shown = fmt.format(lab)[: fmt.index("{}") + len(lab)]  # up to the letter (what is read)
            got = list(self.encoder.tokenize(base[start:] + shown[cut:]).ids)
            if got[: len(want)] != want:
                raise InvariRankError(
                    f"model {self.loaded.name}, choice prompt of query {query.query_id}: label {lab!r} is read as "
                    f"{self.encoder.decode(read)!r} (ids {list(read)}) but tokenizer(prompt + {shown!r}) "
                    f"gives {self.encoder.decode(got[n_base - i0 : n_base - i0 + len(read)])!r} there"
                )
        self._reads_checked.add(memo_key)
        if len(self._reads_checked) > 64:
            self._reads_checked.clear()

    def _tail_start(self, text: str, tok: Any) -> int:
        """Character offset of the first special token of the frame after the message (0 when there is none)."""
        j = text.rfind(self._after) if self._after else -1
        if j < 0:
            return 0
        i = tok.floor(j)
        special = self.encoder.special_tokens
        for t in range(i, len(tok.ids)):
            if tok.ids[t] in special:
                return int(tok.starts[t])
        return 0

    def _reduce(self, plan: PassPlan, logits: Any) -> np.ndarray:
        import torch

        reads = plan.extra["reads"]
        if len(plan.needed) == 1:  # one read position (version 1's computation, bit for bit)
            logp = torch.log_softmax(logits[-1], dim=-1)
            ids = torch.tensor([r[0] for r in reads], dtype=torch.long, device=logp.device)
            return logp[ids].to("cpu", torch.float32).numpy().astype(np.float32)
        rows = [torch.log_softmax(logits[j], dim=-1).to("cpu", torch.float32) for j in range(len(plan.needed))]
        return np.array([sum(float(rows[j][t]) for j, t in enumerate(r)) for r in reads], dtype=np.float32)

    def prompt_ids(self, query: Query, presented: Sequence[Item]) -> list[int]:
        """The whole prompt's ids (prefix + suffix): for tests and inspection."""
        return self.plan(query, presented).full_ids

    def explain(self, query: Query, presented: Sequence[Item]) -> dict[str, Any]:
        plan = self.plan(query, presented)
        return {
            "text": plan.text,
            "ids": plan.full_ids,
            "label_ids": plan.extra["label_ids"],
            "reads": plan.extra["reads"],
            "label_scheme": self.scheme.name,
            "labels": self._labels_for(query, len(presented), labels_of(presented)),
            "history_used": plan.extra["history_used"],
        }
