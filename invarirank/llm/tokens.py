"""Canonical tokenisation of prompts, cut into segments at character offsets.

The model must see exactly the ids its tokenizer gives for the whole prompt text (the *canonical* ids):
``bos_ids + tokenizer(text, add_special_tokens=False)``, where ``bos_ids`` are the ids ``tokenizer(text)`` puts in
front by default (none for SmolLM2, ``<bos>`` for Gemma 3; the choice scorer leaves them out when its chat template
already writes the BOS as text). Encoding the prompt's parts one by one does not give these ids: a tokenizer merges
or splits a run of whitespace according to what follows it (SmolLM2 writes the ``"\\n\\n"`` before ``[ITEM]`` as two
tokens in the whole text but as one at the end of a part; Gemma 3 does the reverse with ``"\\n" + "\\n"``).

So a scorer tokenises the whole prompt once (:meth:`PromptTokenizer.tokenize`, with the character range of every
token from the fast tokenizer's offset mapping) and cuts those ids at the character offsets of its parts:

* :meth:`TokenizedText.floor` — the tokens that end at or before an offset (the reusable history prefix: these
  ids are a prefix of the canonical ids of every presented order that shares the text before the offset);
* :meth:`TokenizedText.covering` — the tokens that hold a character of a range (a candidate's scored span).

:meth:`PromptTokenizer.check_canonical` then verifies that a plan's ids are the canonical ids of its text and
raises :class:`~invarirank.errors.InvariRankError` naming the model, the token, the character offset and the
prompt segment of the first difference — never a silent difference. Its cost is one tokenizer call per pass
(about 1-2 ms for a 1,600-token prompt, memoised so that building and checking a plan share it) against about
0.6 s for a forward pass of SmolLM2 on the CPU.

Conventions: character offsets are 0-based positions in the prompt text (Python ``str`` indices), ranges are
half-open ``[start, end)``; token indices are 0-based positions in the ids *without* the BOS ids.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from invarirank.errors import InvariRankError

__all__ = ["TokenizedText", "PromptTokenizer"]

#: Prompt texts whose tokenisation is kept (a plan is built and then checked; the truncation search re-plans).
_MEMO_SIZE = 16


@dataclass(frozen=True, eq=False)
class TokenizedText:
    """The canonical tokenisation of one text: ``ids`` (no special tokens added) and the character range
    ``[starts[i], ends[i])`` that token ``i`` covers (the byte pieces of one character share its range)."""

    text: str
    ids: tuple[int, ...]
    starts: np.ndarray
    ends: np.ndarray

    def __post_init__(self) -> None:  # running maxima: offsets of overlapping byte pieces need not increase
        object.__setattr__(self, "_start_max", np.maximum.accumulate(self.starts) if len(self.ids) else self.starts)
        object.__setattr__(self, "_end_max", np.maximum.accumulate(self.ends) if len(self.ids) else self.ends)

    def floor(self, offset: int) -> int:
        """Number of leading tokens that end at or before character ``offset``."""
        return int(np.searchsorted(self._end_max, offset, side="right"))

    def covering(self, start: int, end: int) -> tuple[int, int]:
        """Token range ``[i, j)`` of the tokens that hold a character of ``[start, end)``."""
        i = int(np.searchsorted(self._end_max, start, side="right"))
        j = int(np.searchsorted(self._start_max, end, side="left"))
        return i, max(i, j)

    def char_range(self, i: int, j: int) -> tuple[int, int]:
        """Characters covered by tokens ``[i, j)`` (``j > i``)."""
        return int(self.starts[i:j].min()), int(self.ends[i:j].max())


class PromptTokenizer:
    """Canonical tokenisation, decoding and the canonical-ids check for one tokenizer (see the module docstring).

    ``model_name`` only names the model in error messages.
    """

    def __init__(self, tokenizer: Any, model_name: str = "model"):
        self.tokenizer = tokenizer
        self.model_name = model_name
        if not getattr(tokenizer, "is_fast", False):
            raise InvariRankError(
                f"model {model_name}: its tokenizer {type(tokenizer).__name__} is not a fast (Rust) tokenizer; the "
                f"scorers need the character offsets of the tokens to cut the canonical ids of a prompt")
        self._memo: OrderedDict[str, TokenizedText] = OrderedDict()
        self.bos_ids: tuple[int, ...] = self._added_prefix_ids()

    def _raw(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Decode without skipping special tokens or cleaning up spaces."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def _added_prefix_ids(self) -> tuple[int, ...]:
        """Ids that ``tokenizer(text)`` puts in front of the text by default (its BOS), possibly none."""
        probe = "Hello"
        plain = self._raw(probe)
        full = list(self.tokenizer(probe, add_special_tokens=True)["input_ids"])
        n = len(plain)
        for start in range(len(full) - n + 1):
            if full[start:start + n] == plain:
                return tuple(full[:start])
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return (bos,) if bos is not None and full[:1] == [bos] else ()

    def tokenize(self, text: str) -> TokenizedText:
        """The canonical ids of ``text`` (no special tokens added) with their character ranges (memoised)."""
        got = self._memo.get(text)
        if got is not None:
            self._memo.move_to_end(text)
            return got
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
        got = TokenizedText(text, tuple(int(i) for i in enc["input_ids"]), offsets[:, 0], offsets[:, 1])
        self._memo[text] = got
        while len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return got

    def check_canonical(self, text: str, ids: Sequence[int], bos: Sequence[int],
                        segments: Sequence[tuple[str, int, int]], where: str) -> None:
        """Raise unless ``ids == bos + tokenize(text).ids``; the error names the model, ``where`` (e.g. the
        scorer and query), the first differing token, its character offset and the segment holding it
        (``segments``: ``(name, start, end)`` character ranges of the prompt's parts)."""
        tok = self.tokenize(text)
        canonical = list(bos) + list(tok.ids)
        ids = list(ids)
        if ids == canonical:
            return
        k = next((n for n, (a, b) in enumerate(zip(ids, canonical)) if a != b), min(len(ids), len(canonical)))
        t = k - len(bos)
        if 0 <= t < len(tok.ids):
            offset = int(tok.starts[t])
        else:
            offset = len(text) if t >= 0 else 0
        segment = next((name for name, a, b in segments if a <= offset < b), "the end of the prompt")
        got = self.decode(ids[k:k + 3]) if k < len(ids) else "(end)"
        want = self.decode(canonical[k:k + 3]) if k < len(canonical) else "(end)"
        raise InvariRankError(
            f"model {self.model_name}, {where}: the prompt's token ids differ from the canonical tokenisation of its "
            f"text at token {k} (character offset {offset}, in {segment}; text there {text[offset:offset + 24]!r}): "
            f"the scorer has {got!r}, tokenizer(prompt) has {want!r} ({len(ids)} vs {len(canonical)} ids)")

    def single_token_after(self, context: str, piece: str) -> int | None:
        """The id ``t`` with ``encode(context + piece) == encode(context) + [t]``, or None when ``piece`` is not
        one token in that context."""
        ctx = self._raw(context)
        full = self._raw(context + piece)
        if len(full) == len(ctx) + 1 and full[:len(ctx)] == ctx:
            return int(full[-1])
        return None
