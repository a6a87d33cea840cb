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

Data never becomes control tokens: a *special* token of the tokenizer (``special=True`` among its added
tokens: ``<|eot_id|>``, ``<|im_end|>``, ``[INST]``, ``<start_of_turn>``, ...) counts as one only where the prompt
template writes it — inside the chat frame of the choice prompt (:attr:`PromptTokenizer.frame`: the text before
and after the user message) or, for the span scorer's ``special_delimiters`` variant, the four delimiter tags.
Anywhere else (a title, a genre) its string is tokenised as text: the text is cut at the template's own special
tokens, each piece is encoded with ``split_special_tokens=True`` and the template's special ids are spliced back in
between. The cut is checked: encoding the same pieces without ``split_special_tokens`` must give the ordinary ids
of the whole text, else the prompt is rejected with one line naming the token and where it is. A text without
such a string (every committed prompt) takes the ordinary single call, so its ids are unchanged. Non-special added
tokens (Gemma's newline runs and HTML tags, Qwen's ``<tool_call>``) are ordinary text pieces of their tokenizer
and stay as they are.

:meth:`PromptTokenizer.check_prefix` checks what prefix reuse relies on: every plan whose shared prefix has the
same text has the same prefix ids (the engine keys the prefix's key/value cache by those ids), and those ids are
the head of the plan's canonical ids.

Conventions: character offsets are 0-based positions in the prompt text (Python ``str`` indices), ranges are
half-open ``[start, end)``; token indices are 0-based positions in the ids *without* the BOS ids.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from invarirank.errors import InvariRankError

#: Prompt texts whose tokenisation is kept (a plan is built and then checked; the truncation search re-plans).
_MEMO_SIZE = 16
#: Prefix texts whose ids :meth:`PromptTokenizer.check_prefix` remembers.
_PREFIX_MEMO_SIZE = 256
#: The span template's delimiter tags: the only special tokens a span prompt may own (``special_delimiters``).
_SPAN_TAGS = ("[SPAN]", "[/SPAN]", "[ITEM]", "[/ITEM]")


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
                f"scorers need the character offsets of the tokens to cut the canonical ids of a prompt"
            )
        self._memo: OrderedDict[str, TokenizedText] = OrderedDict()
        self._prefixes: OrderedDict[str, tuple[int, ...]] = OrderedDict()
        self.bos_ids: tuple[int, ...] = self._added_prefix_ids()
        decoder = getattr(tokenizer, "added_tokens_decoder", None) or {}
        #: ids of the tokenizer's special (control) tokens -> their strings
        self.special_tokens: dict[int, str] = {
            int(i): str(t.content) for i, t in decoder.items() if getattr(t, "special", False)
        }
        self._special_array = np.fromiter(self.special_tokens, dtype=np.int64, count=len(self.special_tokens))
        #: ``(before, after)``: the chat frame around the user message whose special tokens the template owns
        #: (set by the choice scorer); a text that starts with ``before`` owns the specials there, and one that
        #: holds ``after`` owns those from its last occurrence on
        self.frame: tuple[str, str] | None = None

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
            if full[start : start + n] == plain:
                return tuple(full[:start])
        bos = getattr(self.tokenizer, "bos_token_id", None)
        return (bos,) if bos is not None and full[:1] == [bos] else ()

    def tokenize(self, text: str) -> TokenizedText:
        """The canonical ids of ``text`` (no special tokens added) with their character ranges (memoised)."""
        got = self._memo.get(text)
        if got is not None:
            self._memo.move_to_end(text)
            return got
        ids, offsets = self._encode(text)
        data = self._data_specials(text, ids, offsets)
        if data:
            ids, offsets = self._encode_as_text(text, ids, offsets, data)
        got = TokenizedText(text, tuple(int(i) for i in ids), offsets[:, 0], offsets[:, 1])
        self._memo[text] = got
        while len(self._memo) > _MEMO_SIZE:
            self._memo.popitem(last=False)
        return got

    def _encode(self, text: str, split_special: bool = False) -> tuple[list[int], np.ndarray]:
        kwargs = {"split_special_tokens": True} if split_special else {}
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, **kwargs)
        return list(enc["input_ids"]), np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)

    def _owned(self, text: str) -> list[tuple[int, int]]:
        """Character ranges of ``text`` in which the template writes special tokens (see the module docstring)."""
        if self.frame is None:
            return []
        before, after = self.frame
        ranges = [(0, len(before))] if before and text.startswith(before) else []
        j = text.rfind(after) if after else -1
        if j >= (len(before) if ranges else 0) and j >= 0:
            ranges.append((j, len(text)))
        return ranges

    def _data_specials(self, text: str, ids: Sequence[int], offsets: np.ndarray) -> list[int]:
        """Indices of the special tokens in ``ids`` that the template does not own (data text)."""
        if not len(self._special_array) or not len(ids):
            return []
        hits = np.flatnonzero(np.isin(np.asarray(ids, dtype=np.int64), self._special_array))
        if not len(hits):
            return []
        owned = self._owned(text)
        out = []
        for h in hits:
            a, b = int(offsets[h, 0]), int(offsets[h, 1])
            if any(lo <= a and b <= hi for lo, hi in owned):
                continue
            if self.special_tokens[int(ids[h])] in _SPAN_TAGS and self.frame is None:
                continue  # the span scorer's special_delimiters variant owns its four tags
            out.append(int(h))
        return out

    def _encode_as_text(
        self,
        text: str,
        ids: list[int],
        offsets: np.ndarray,
        data: list[int],
    ) -> tuple[list[int], np.ndarray]:
        """Encode ``text`` with the special tokens at ``data`` (token indices) as text: cut at the template's own
        special tokens, encode each piece with ``split_special_tokens=True``, splice the template's ids back."""
        keep = [
            i
            for i in np.flatnonzero(np.isin(np.asarray(ids, dtype=np.int64), self._special_array))
            if int(i) not in set(data)
        ]
        cuts, pos = [], 0
        for i in keep:  # pieces of text between the template's special tokens
            a, b = int(offsets[i, 0]), int(offsets[i, 1])
            cuts.append((pos, a, None))
            cuts.append((a, b, int(ids[i])))
            pos = b
        cuts.append((pos, len(text), None))
        plain: list[int] = []
        out_ids: list[int] = []
        out_off: list[np.ndarray] = []
        for a, b, special in cuts:
            if special is not None:
                plain.append(special)
                out_ids.append(special)
                out_off.append(np.array([[a, b]], dtype=np.int64))
            elif b > a:
                p_ids, _ = self._encode(text[a:b])
                plain += p_ids
                t_ids, t_off = self._encode(text[a:b], split_special=True)
                out_ids += t_ids
                out_off.append(t_off + a)
        first = data[0]
        token = self.special_tokens[int(ids[first])]
        at = int(offsets[first, 0])
        if plain != list(ids):
            raise InvariRankError(
                f"model {self.model_name}: the prompt text holds the special token {token!r} at character offset "
                f"{at} (text there {text[max(0, at - 12) : at + len(token) + 12]!r}) outside the prompt template, and "
                f"this tokenizer cannot encode it as text without changing the ids around it; remove it from the "
                f"data"
            )
        return out_ids, (np.concatenate(out_off) if out_off else np.zeros((0, 2), dtype=np.int64))

    def data_special_tokens(self, text: str) -> list[tuple[int, str]]:
        """``(character offset, token string)`` of every special token's string in ``text`` that the template does
        not own (these are tokenised as text: see the module docstring)."""
        ids, offsets = self._encode(text)
        return [(int(offsets[i, 0]), self.special_tokens[int(ids[i])]) for i in self._data_specials(text, ids, offsets)]

    def check_prefix(self, prefix_text: str, prefix: Sequence[int], ids: Sequence[int], where: str) -> None:
        """Raise unless ``prefix`` is the head of ``ids`` (a plan's canonical ids) and equals the prefix ids of
        every earlier plan whose shared prefix had the same text ``prefix_text`` (prefix reuse keys the prefix's
        key/value cache by these ids, so every order of a query must cut its canonical ids at the same tokens)."""
        prefix = tuple(prefix)
        if tuple(ids[: len(prefix)]) != prefix:
            raise InvariRankError(
                f"model {self.model_name}, {where}: the prefix ids ({len(prefix)}) are not the head "
                f"of the prompt's canonical ids"
            )
        seen = self._prefixes.get(prefix_text)
        if seen is None:
            self._prefixes[prefix_text] = prefix
            while len(self._prefixes) > _PREFIX_MEMO_SIZE:
                self._prefixes.popitem(last=False)
            return
        self._prefixes.move_to_end(prefix_text)
        if seen != prefix:
            k = next((n for n, (a, b) in enumerate(zip(seen, prefix)) if a != b), min(len(seen), len(prefix)))
            raise InvariRankError(
                f"model {self.model_name}, {where}: the shared prefix (history) has the same text as in another "
                f"order of this query but other ids ({len(prefix)} vs {len(seen)} ids, first difference at token "
                f"{k}): the canonical ids are cut at an order-dependent place, so the prefix cannot be reused"
            )

    def check_canonical(
        self, text: str, ids: Sequence[int], bos: Sequence[int], segments: Sequence[tuple[str, int, int]], where: str
    ) -> None:
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
        got = self.decode(ids[k : k + 3]) if k < len(ids) else "(end)"
        want = self.decode(canonical[k : k + 3]) if k < len(canonical) else "(end)"
        raise InvariRankError(
            f"model {self.model_name}, {where}: the prompt's token ids differ from the canonical tokenisation of its "
            f"text at token {k} (character offset {offset}, in {segment}; text there {text[offset : offset + 24]!r}): "
            f"the scorer has {got!r}, tokenizer(prompt) has {want!r} ({len(ids)} vs {len(canonical)} ids)"
        )
