"""Exact tokenisation of prompt segments.

A prompt is a concatenation of *segments* (prefix, item delimiters, candidate lines, ...). Each segment is
tokenised on its own and the ids are concatenated, so that

* the boundaries of every candidate's span are exact token boundaries (the scored tokens decode to exactly the
  candidate's text, which the tests check), and
* the shared prefix of a query has the same ids in every order (the precondition of prefix KV reuse).

A segment is encoded as it would be tokenised **after a newline**: first ``tokenizer.encode(text)`` without special
tokens; when that does not reproduce the text in that context (SentencePiece tokenizers that add a dummy prefix
space, e.g. Mistral's), the segment is encoded behind a sentinel (``"\\n"``, else ``"\\x1e"``, else a space) whose
own ids are then cut off. Each
encoding is verified: ``decode(anchor + ids) == decode(anchor) + text``; a segment that cannot be encoded exactly
raises :class:`~invarirank.errors.InvariRankError`. Encodings are memoised per text (candidate lines repeat across
orders).

The tokenizer's own begin-of-sequence ids (what ``tokenizer(text)`` adds in front by default) are available as
:attr:`SegmentEncoder.bos_ids`; nothing is appended at the end.
"""

from __future__ import annotations

from typing import Any, Sequence

from invarirank.errors import InvariRankError

__all__ = ["SegmentEncoder"]

_ANCHOR = "\n"
# Characters put in front of a segment when its plain encoding is not exact (dummy prefix space): a newline,
# then a control character that byte-fallback vocabularies hold only as a byte token (so it merges with nothing).
_SENTINELS = ("\n", "\x1e", " ")


class SegmentEncoder:
    """Encodes prompt segments into token ids exactly (see the module docstring)."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self._memo: dict[str, tuple[int, ...]] = {}
        self._anchor_ids = tuple(self._raw(_ANCHOR))
        self._anchor_text = self.decode(self._anchor_ids)
        self.bos_ids: tuple[int, ...] = self._added_prefix_ids()

    # -- helpers -------------------------------------------------------------------------------------------
    def _raw(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Decode without skipping special tokens or cleaning up spaces (the exact inverse we verify against)."""
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

    def _ok(self, text: str, ids: Sequence[int]) -> bool:
        return self.decode(tuple(self._anchor_ids) + tuple(ids)) == self._anchor_text + text

    # -- public --------------------------------------------------------------------------------------------
    def encode(self, text: str) -> tuple[int, ...]:
        """Token ids of one segment, exact in context (memoised)."""
        got = self._memo.get(text)
        if got is not None:
            return got
        if text == "":
            ids: tuple[int, ...] = ()
        else:
            direct = self._raw(text)
            if self._ok(text, direct):
                ids = tuple(direct)
            else:
                ids = self._behind_sentinel(text)
        if len(self._memo) > 200_000:
            self._memo.clear()
        self._memo[text] = ids
        return ids

    def _behind_sentinel(self, text: str) -> tuple[int, ...]:
        for sentinel in _SENTINELS:
            s_ids = self._raw(sentinel)
            both = self._raw(sentinel + text)
            if both[:len(s_ids)] == s_ids and self._ok(text, both[len(s_ids):]):
                return tuple(both[len(s_ids):])
        raise InvariRankError(
            f"tokenizer {type(self.tokenizer).__name__}: cannot encode the prompt segment {text[:60]!r} so that "
            f"its tokens decode back to exactly that text")

    def single_token_after(self, context: str, piece: str) -> int | None:
        """The id ``t`` with ``encode(context + piece) == encode(context) + [t]``, or None when ``piece`` is not
        one token in that context."""
        ctx = self._raw(context)
        full = self._raw(context + piece)
        if len(full) == len(ctx) + 1 and full[:len(ctx)] == ctx:
            return int(full[-1])
        return None
