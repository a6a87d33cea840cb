"""An observations file read straight into integer codes (:mod:`._codes`), for ``invarirank evaluate`` and
:func:`invarirank.evaluate` given a path: the rows are not kept, and the checks run on codes.

Each line is parsed by msgspec's JSON decoder (about half the time of the row reader's scanner; :func:`_parse`
states what it adds so that it accepts no line the row reader refuses). Each row is then encoded through its
query's :class:`~invarirank.evaluation._codes.QueryCoder`, built from the query's first line, with one dictionary
look-up per id, and the rules of the file (:func:`~invarirank.evaluation._observation_rows.validate_rows`) are
checked on what that leaves:

- a row is a JSON object whose required fields have the exact types the file allows (strings, an integer
  ``permutation`` >= 0, lists), ``schema_version`` 1 when given;
- a query's first line: ids that are strings, ASCII (so none holds a lone surrogate and no two print alike), a
  non-empty ``input`` without repeats, a non-empty ``relevant``; an ASCII, non-empty query id and method;
- every other line of the query: the same ``relevant`` list, and ``input`` and ``output`` of K ids that are all
  the query's candidates (a look-up that fails is an id from elsewhere), each a permutation (checked on the codes);
- no repeated (query, method, permutation).

Anything else, a file that is not JSON Lines (Parquet) or anything unexpected, and :func:`read_codes` returns
``None``: the caller reads the file again row by row (:func:`~invarirank.evaluation.observations.
read_observations`), which either accepts it (integer ids, a ground truth given in another order, non-ASCII
ids, a NaN or a lone surrogate outside the ids, whitespace beyond JSON's) or names its first problem as
``FILE:LINE``. The codes are then the same either way: only the time differs.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from ._codes import Codes, QueryCoder, QueryRows
from .observations import _is_parquet, _unique_keys, gc_paused

#: the most '{' and '[' a line may hold (a bound on its nesting) on the fast path
_MAX_OPEN = 32


class _Off(Exception):
    """The fast path does not take this file (the row-by-row reader decides)."""


class _Pending:
    """One method's rows of one query while the file is read, with the coder's K and ground truth at hand (one
    attribute read each per row): each row's input then output as codes, appended by ``add(map(get, ids))`` (ints
    into one growing byte string up to 256 candidates, else each row's bytes), and its permutation."""

    __slots__ = ("coder", "K", "truth", "get", "add", "parts", "perms", "add_perm")

    def __init__(self, coder: QueryCoder) -> None:
        self.coder = coder
        self.K = coder.K
        self.truth = coder.truth
        self.perms: list[int] = []
        self.add_perm = self.perms.append
        self.get: Callable[[str], Any]
        self.add: Callable[[Iterator[Any]], None]
        if coder.dtype.itemsize == 1:
            self.parts: bytearray | list[bytes] = bytearray()
            self.get, self.add = coder.index.__getitem__, self.parts.extend
        else:
            parts: list[bytes] = []
            self.parts, self.get = parts, coder.code.__getitem__
            self.add = lambda codes: parts.append(b"".join(codes))

    def rows(self) -> QueryRows:
        """The rows as :class:`QueryRows` (their inputs and outputs as views of one array of codes)."""
        data = self.parts if isinstance(self.parts, bytearray) else b"".join(self.parts)
        both = np.frombuffer(data, dtype=self.coder.dtype).reshape(len(self.perms), 2, self.K)
        both.flags.writeable = False  # (a view of the byte string, which nothing changes again)
        c = self.coder
        return QueryRows(c.items, both[:, 0], both[:, 1], c.relevant, c.n_relevant)


def read_codes(path: str | os.PathLike) -> Codes | None:
    """The observations of a JSON Lines file (plain or gzip) as codes, or ``None`` when the file needs the
    row-by-row reader (see the module docstring). Raises nothing a file can cause."""
    p = Path(path)
    try:
        with gc_paused():
            if _is_parquet(p):
                return None
            data = p.read_bytes()
            if data[:2] == b"\x1f\x8b":
                data = gzip.decompress(data)
            if data[:3] == b"\xef\xbb\xbf":  # a leading byte-order mark, dropped as the row reader drops it
                data = data[3:]
            return _codes(data)
    except Exception:  # every problem (and every unusual file) is left to the row-by-row reader to name
        return None


def _first_line(qid: str, inp: list, rel: list) -> QueryCoder:
    """The coder of a query from its first line, after that line's checks (:class:`_Off` otherwise)."""
    if type(qid) is not str or not qid or not qid.isascii() or type(rel) is not list or not inp or not rel:
        raise _Off
    # a TypeError for an id that is not a string (msgspec makes strings of no subclass: these are str)
    if not ("".join(inp) + "".join(rel)).isascii():
        raise _Off
    coder = QueryCoder(inp, rel)
    if len(coder.code) != len(inp):  # repeated ids
        raise _Off
    return coder


def _codes(data: bytes) -> Codes:
    """The codes of a file's bytes (:class:`_Off`, or any other exception, when the row reader must decide).

    Lines end at ``b"\n"`` (which no UTF-8 sequence holds, so these are the row reader's lines); a line msgspec
    finds no value in is skipped when it is blank (ASCII whitespace), and any other line must be one JSON object. A
    value that is not an object fails at its first field look-up (a string key on a list, a string or a number:
    ``TypeError``). The query id and the method are checked where first met: a later row's look-up that finds them
    compared equal to a checked string, and msgspec makes no other type equal to one."""
    decode = msgspec.json.Decoder().decode
    pending: dict[str, dict[str, _Pending]] = {}
    coders: dict[str, QueryCoder] = {}
    n_keys = 0
    for raw in io.BytesIO(data):  # one line at a time (with its b"\n", JSON whitespace): no list of every line
        try:
            rec = decode(raw)
        except msgspec.DecodeError:
            if raw.isspace():
                continue
            raise
        qid, method, perm = rec["query_id"], rec["method"], rec["permutation"]
        inp, out, rel = rec["input"], rec["output"], rec["relevant"]
        n_keys += len(rec)
        version = rec.get("schema_version", 1)
        if version != 1 or version is True or type(perm) is not int or perm < 0:
            raise _Off
        if type(inp) is not list or type(out) is not list:
            raise _Off
        queries = pending.get(method)
        if queries is None:
            if type(method) is not str or not method or not method.isascii():
                raise _Off
            queries = pending[method] = {}
        rows = queries.get(qid)
        if rows is None:
            coder = coders.get(qid)
            if coder is None:
                coder = coders[qid] = _first_line(qid, inp, rel)
            rows = queries[qid] = _Pending(coder)
        # (a ground truth equal to the query's list is a list of the same strings)
        if rel != rows.truth or len(inp) != rows.K or len(out) != rows.K:
            raise _Off
        add, get = rows.add, rows.get
        add(map(get, inp))
        add(map(get, out))
        rows.add_perm(perm)
    n_rows = sum(len(rows.perms) for queries in pending.values() for rows in queries.values())
    if not pending or not _one_object_each(data, n_rows, n_keys):
        raise _Off
    codes: Codes = {}
    by_k: dict[int, list[np.ndarray]] = {}
    for method, queries in pending.items():
        codes[method] = {}
        for qid, rows in queries.items():
            if len(set(rows.perms)) != len(rows.perms):
                raise _Off
            q = codes[method][qid] = rows.rows()
            by_k.setdefault(q.inp.shape[1], []).extend((q.inp, q.out))
    for K, arrays in by_k.items():  # every row a permutation of its query's K codes
        if not _permutations(np.concatenate(arrays), K):
            raise _Off
    return codes


def _permutations(c: np.ndarray, K: int) -> bool:
    """Whether every row of ``c`` (R x K codes, each below K) holds K distinct codes: for K <= 64 the rows whose
    bits 1 << code fill all K bits, else the rows whose every code is marked."""
    if K <= 64:
        word = np.uint32 if K <= 32 else np.uint64  # (half the bytes when they suffice)
        bits = np.left_shift(word(1), c.astype(word))
        return bool((np.bitwise_or.reduce(bits, axis=1) == word((1 << K) - 1)).all())
    seen = np.zeros(c.shape, dtype=bool)
    seen[np.arange(len(c))[:, None], c] = True
    return bool(seen.all())


def _one_object_each(data: bytes, n_rows: int, n_keys: int) -> bool:
    """Whether the ``n_rows`` objects decoded from the non-blank lines of ``data`` (``n_keys`` keys in all) are what
    the row reader's parse gives: each key once in each object, and a nesting far below the interpreter's recursion
    limit (the row reader's scanner and msgspec both stop at it, at depths that differ by their callers' stacks).

    msgspec keeps the last of a repeated key silently. Every key of every object of a line, nested ones included, is
    followed by a ":", so a line with as many ":" as its object has keys repeats none (and nests only empty
    objects); summed over the file, as many ":" as keys says that of every line at once, as no line has fewer. The
    row reader parses such a line to the same value. A line then nests at most two levels more than it has "[", and
    it has at least three (``input``, ``output`` and ``relevant``): at most :data:`_MAX_OPEN` - 5 more "[" in the file
    than three a row keep every line's nesting within :data:`_MAX_OPEN`. Otherwise each line is looked at on its own:
    one with more openings than that is left to the row reader, and one with other ":" is parsed again by the row
    reader's own scanner with its repeated-key check (a nested object, a ":" inside a string)."""
    colons, opens = _byte_counts(data, ord(":"), ord("["))
    if colons == n_keys and opens - 3 * n_rows <= _MAX_OPEN - 5:
        return True
    decode = msgspec.json.Decoder().decode
    strict = json.JSONDecoder(object_pairs_hook=_unique_keys).decode
    for raw in io.BytesIO(data):
        if raw.isspace():
            continue
        if raw.count(b"{") + raw.count(b"[") > _MAX_OPEN:
            return False
        if raw.count(b":") != len(decode(raw)):
            try:
                strict(raw.decode("utf-8"))
            except Exception:  # a repeated key (or anything else): the row reader names it
                return False
    return True


def _byte_counts(data: bytes, *values: int, chunk: int = 1 << 18) -> list[int]:
    """How many bytes of ``data`` equal each of ``values``: numpy comparisons a chunk at a time into one buffer
    (``bytes.count`` takes about three times as long, and a whole-file comparison faults in a file-sized array)."""
    a = np.frombuffer(data, dtype=np.uint8)
    flags = np.empty(min(chunk, len(a)), dtype=bool)
    out = [0] * len(values)
    for i in range(0, len(a), chunk):
        part = a[i : i + chunk]
        f = flags[: len(part)]
        for k, v in enumerate(values):
            np.equal(part, v, out=f)
            out[k] += int(np.count_nonzero(f))
    return out
