"""The choice prompt's chat frame and label scheme, derived from the model's own chat template and tokenizer.

**Frame.** :func:`chat_frame` renders the chat template twice: one user message with the generation prompt (the
text before and after the message) and the same message followed by an assistant turn answering ``[A]``; the text
between the generation prompt and the label's bracket is the *answer lead* (``""`` for ChatML, Llama 3 and Qwen 2.5;
``" "`` for Mistral v0.3, whose template writes an assistant turn as ``" " + content``, so the answer is read after
``▁[`` as Mistral's own encoder writes it). Templates are rendered with fixed values of the variables a template may
take from the clock (:data:`TEMPLATE_VARIABLES`: ``date_string``, which Llama 3.x writes as ``Today Date: ...``) and
under two different fake clocks: a template whose rendering still changes with the clock is an error naming the
model (nothing volatile enters a prompt). :attr:`Frame.sha256` is the hash of the rendered frame.

**Label scheme** (:func:`label_scheme`), decided when the scorer is built from how the tokenizer writes each label
after the frame (``tokenizer(prompt + lead + "[L")``: the answer up to its letter; the closing bracket is not read,
as in version 1):

* ``bracket`` (SmolLM2, Gemma 3, Mistral): the bracket is its own token; the prompt ends with ``lead + "["`` and the
  label's id is read at the last position (the scheme of choice scorer version 1);
* ``merged`` (Llama 3, Qwen 2.5: their pre-tokenizers attach one punctuation character to a run of letters and their
  vocabularies hold ``[A`` ... ``[z`` except ``[O`` and ``[Q``): the prompt ends with ``lead`` and the merged ``[L``
  id is read at the last position; a label whose ``[L`` is not one token is scored as its own two tokens,
  ``log p("[") + log p(L | "[")``, with ``[`` appended to the prompt as one more position.

Either way the ids read are exactly those the tokenizer gives for the answer. A label that fits neither scheme ends
the usable alphabet there (the scorer's largest K); when not even the first label fits, building the scorer fails
with the merge named.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from unittest import mock

from invarirank.errors import InvariRankError

#: values given to every chat template so that nothing in a prompt depends on the day: Llama 3.x's template writes
#: ``Today Date: {date_string}`` (its own fallback when no clock is available is this same date)
TEMPLATE_VARIABLES: dict[str, str] = {"date_string": "26 Jul 2024"}
_CLOCKS = (datetime(2001, 2, 3, 4, 5, 6), datetime(2019, 11, 12, 13, 14, 15))
_PROBE = "\x00INVARIRANK-MESSAGE\x00"
_ANSWER_PROBE = "[A]"


@contextmanager
def _clock(now: datetime) -> Iterator[None]:
    """transformers' ``strftime_now`` (the clock a chat template may read) returning ``now``."""
    import transformers.utils.chat_template_utils as ctu

    class _Fixed(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # noqa: D102
            return now

    if not isinstance(getattr(ctu, "datetime", None), type):  # another transformers layout: the real clock
        yield
        return
    with mock.patch.object(ctu, "datetime", _Fixed):
        yield


def render_chat(
    tokenizer: Any,
    messages: list[dict[str, str]],
    *,
    add_generation_prompt: bool,
    model_name: str,
    variables: dict[str, str] | None = None,
) -> str:
    """The chat template's text for ``messages`` with :data:`TEMPLATE_VARIABLES` (or ``variables``), rendered under
    two fake clocks; raises :class:`InvariRankError` when the two differ (a template that writes the time)."""
    values = TEMPLATE_VARIABLES if variables is None else variables
    out = []
    for now in _CLOCKS:
        with _clock(now):
            out.append(
                tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=add_generation_prompt, **values
                )
            )
    if not isinstance(out[0], str):
        raise InvariRankError(f"model {model_name}: its chat template does not render to text")
    if out[0] != out[1]:
        raise InvariRankError(
            f"model {model_name}: its chat template writes the current date or time even with "
            f"{', '.join(f'{k}={v!r}' for k, v in values.items())}; prompts would change by day"
        )
    return out[0]


@dataclass(frozen=True)
class Frame:
    """Text before and after the user message (generation prompt included) and the answer lead; ``volatile``:
    whether rendering without :data:`TEMPLATE_VARIABLES` gives another frame (the template reads the clock)."""

    before: str
    after: str
    lead: str
    volatile: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256("\x00".join((self.before, self.after, self.lead)).encode("utf-8")).hexdigest()


def chat_frame(tokenizer: Any, model_name: str) -> Frame:
    """The chat frame of ``tokenizer``'s template (see the module docstring)."""
    user = [{"role": "user", "content": _PROBE}]
    gen = render_chat(tokenizer, user, add_generation_prompt=True, model_name=model_name)
    if gen.count(_PROBE) != 1:
        raise InvariRankError(
            f"choice scorer: the chat template of {model_name} does not render the user message "
            f"verbatim; pass use_chat_template=False"
        )
    before, after = gen.split(_PROBE)
    turn = render_chat(
        tokenizer,
        user + [{"role": "assistant", "content": _ANSWER_PROBE}],
        add_generation_prompt=False,
        model_name=model_name,
    )
    at = turn.find(_ANSWER_PROBE, len(gen)) if turn.startswith(gen) else -1
    if at < 0:
        raise InvariRankError(
            f"choice scorer: the chat template of {model_name} does not write an assistant turn "
            f"after its generation prompt, so where the answer starts is unknown; pass "
            f"use_chat_template=False"
        )
    with _clock(_CLOCKS[0]):
        plain = tokenizer.apply_chat_template(user, tokenize=False, add_generation_prompt=True)
    return Frame(before, after, turn[len(gen) : at], volatile=plain != gen)


@dataclass(frozen=True)
class LabelRead:
    """How one label's answer is read: ``ids[j]`` at the ``j``-th of the read positions (0: the prompt's last
    position; 1: the appended ``[``). ``split``: the label is its bracket and letter as two tokens."""

    label: str
    ids: tuple[int, ...]
    split: bool


@dataclass(frozen=True)
class LabelScheme:
    """``name`` (``bracket`` or ``merged``), the answer text the prompt ends with after the frame (``lead + "["``
    or ``lead``),
    the bracket's id appended for split labels, and the reads of the usable labels (alphabet order);
    ``stop``: why the next label of the alphabet is not usable (None when all are)."""

    name: str
    answer: str
    bracket_id: int | None
    reads: tuple[LabelRead, ...]
    stop: str | None

    @property
    def max_k(self) -> int:
        return len(self.reads)


def _read(encoder: Any, context: str, answer: str, label: str, label_format: str) -> tuple[str, tuple[int, ...]]:
    """``(text the prompt ends with, ids read)`` for one label: the tokens of ``context + answer + "[L]"`` up to the
    one that holds the letter are the prompt, that token is read."""
    shown = label_format.format(label)
    shown = shown[: shown.index(label) + len(label)]  # the answer up to its letter: what follows is not read
    text = context + answer + shown
    tok = encoder.tokenize(text)
    letter = len(context) + len(answer) + shown.index(label)
    i = tok.floor(letter)  # tokens that end at or before the letter
    if i >= len(tok.ids) or int(tok.ends[i]) != letter + len(label) or int(tok.starts[i]) > letter:
        raise _NoScheme(
            f"the tokenizer writes {shown!r} after the prompt as "
            f"{[encoder.decode([t]) for t in tok.ids[max(0, i - 1) : i + 2]]!r}, so the label is not "
            f"one token"
        )
    end = text[: int(tok.starts[i])]
    if tuple(encoder.tokenize(end).ids) != tuple(tok.ids[:i]):
        raise _NoScheme(f"the prompt's own ids change when {shown!r} follows it")
    return end, (int(tok.ids[i]),)


class _NoScheme(Exception):
    pass


def label_scheme(
    encoder: Any,
    context: str,
    lead: str,
    alphabet: Sequence[str],
    label_format: str = "[{}]",
) -> LabelScheme:
    """The label scheme for prompts that end with ``context`` (see the module docstring); ``encoder`` is a
    :class:`~invarirank.llm._tokens.PromptTokenizer`. The first label decides the scheme; the usable alphabet ends
    at the first label that fits it not. Raises :class:`InvariRankError` when the first label fits no scheme."""
    opening = label_format[: label_format.index("{}")]
    base = context + lead
    try:
        first_end, _ = _read(encoder, context, lead, alphabet[0], label_format)
    except _NoScheme as exc:
        raise InvariRankError(
            f"choice scorer: model {encoder.model_name}: no label scheme works: label {alphabet[0]!r}: {exc}"
        ) from None
    name = "bracket" if first_end == base + opening else "merged" if first_end == base else None
    if name is None:
        raise InvariRankError(
            f"choice scorer: model {encoder.model_name}: no label scheme works: the tokenizer "
            f"merges the answer {label_format.format(alphabet[0])!r} with the text before it "
            f"({first_end[len(context) - 8 :]!r} ends the prompt)"
        )
    bracket_id = None
    if name == "merged":
        pieces = encoder.tokenize(base + opening).ids
        head = encoder.tokenize(base).ids
        if len(pieces) == len(head) + 1 and tuple(pieces[: len(head)]) == tuple(head):
            bracket_id = int(pieces[-1])
    reads: list[LabelRead] = []
    stop = None
    for lab in alphabet:
        shown = label_format.format(lab)
        try:
            end, ids = _read(encoder, context, lead, lab, label_format)
        except _NoScheme as exc:
            stop = f"label {lab!r}: {exc}"
            break
        if end == base + opening and name == "merged" and bracket_id is not None:
            reads.append(LabelRead(lab, (bracket_id,) + ids, True))
        elif end == (base + opening if name == "bracket" else base):
            reads.append(LabelRead(lab, ids, False))
        else:
            how = (
                "is one token with the bracket"
                if name == "bracket"
                else f"is written apart from {opening!r}, which is not one token after the prompt"
            )
            stop = f"label {lab!r}: {shown!r} {how} (scheme {name!r} of label {alphabet[0]!r})"
            break
    return _distinct(
        encoder, LabelScheme(name, lead + opening if name == "bracket" else lead, bracket_id, tuple(reads), stop)
    )


def _distinct(encoder: Any, scheme: LabelScheme) -> LabelScheme:
    seen: dict[tuple[int, ...], str] = {}
    for n, r in enumerate(scheme.reads):
        if r.ids in seen:
            why = f"label {r.label!r} reads the same ids as label {seen[r.ids]!r}"
            return LabelScheme(scheme.name, scheme.answer, scheme.bracket_id, scheme.reads[:n], why)
        seen[r.ids] = r.label
    return scheme


def served_frame(folder: str) -> tuple[tuple[str, str], str]:
    """The chat frame of a local tokenizer folder as the choice scorer renders it (``after`` ends with the answer
    lead), for a served model's log-prob prompt (:func:`invarirank.audit.served_model.served`'s ``frame``), and the
    name it records: ``chat:<folder name>:<the frame's sha256, first 16 hex>``. Reads the folder, never downloads."""
    from pathlib import Path

    from .models import load_tokenizer

    frame = chat_frame(load_tokenizer(str(folder), allow_download=False), str(folder))
    return (frame.before, frame.after + frame.lead), f"chat:{Path(str(folder)).name}:{frame.sha256[:16]}"
