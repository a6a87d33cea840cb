"""An observations file read straight into integer codes (:mod:`._codes`), for ``invarirank evaluate`` and
:func:`invarirank.evaluate` given a path: the rows are not kept, and the checks run on codes.

The file's lines are parsed by the reader's own JSON scanner (:func:`~invarirank.evaluation.observations.read_text`
and the line iterator of :mod:`.observations`: the same values, the same refusals). Each row is then encoded
through its query's :class:`~invarirank.evaluation._codes.QueryCoder`, built from the query's first line, with
one dictionary look-up per id, and the rules of the file (:func:`~invarirank.evaluation._observation_rows.
validate_rows`) are checked on what that leaves:

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
ids) or names its first problem as ``FILE:LINE``. The codes are then the same either way: only the time differs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ._codes import Codes, QueryCoder
from .observations import _is_parquet, _iter_json_lines, gc_paused, read_text


class _Off(Exception):
    """The fast path does not take this file (the row-by-row reader decides)."""


class _Pending:
    """One method's rows of one query while the file is read: their encoded orders and their permutations."""

    __slots__ = ("coder", "inp", "out", "perms")

    def __init__(self, coder: QueryCoder) -> None:
        self.coder = coder
        self.inp: list[bytes] = []
        self.out: list[bytes] = []
        self.perms: list[int] = []


def read_codes(path: str | os.PathLike) -> Codes | None:
    """The observations of a JSON Lines file (plain or gzip) as codes, or ``None`` when the file needs the
    row-by-row reader (see the module docstring). Raises nothing a file can cause."""
    p = Path(path)
    try:
        with gc_paused():
            if _is_parquet(p):
                return None
            return _codes(_iter_json_lines(read_text(p), str(p)))
    except Exception:  # every problem (and every unusual file) is left to the row-by-row reader to name
        return None


def _first_line(qid: str, inp: list, rel: list) -> QueryCoder:
    """The coder of a query from its first line, after that line's checks (:class:`_Off` otherwise)."""
    if not qid or not qid.isascii() or not inp or not rel:
        raise _Off
    ids = "".join(inp) + "".join(rel)  # (a TypeError for an id that is not a string)
    if not ids.isascii() or any(type(x) is not str for x in inp) or any(type(x) is not str for x in rel):
        raise _Off
    coder = QueryCoder(inp, rel)
    if len(coder.code) != len(inp):  # repeated ids
        raise _Off
    return coder


def _codes(records) -> Codes:
    pending: dict[str, dict[str, _Pending]] = {}
    coders: dict[str, QueryCoder] = {}
    for _line, rec in records:
        if type(rec) is not dict:
            raise _Off
        qid, method, perm = rec["query_id"], rec["method"], rec["permutation"]
        inp, out, rel = rec["input"], rec["output"], rec["relevant"]
        if "schema_version" in rec and (rec["schema_version"] != 1 or isinstance(rec["schema_version"], bool)):
            raise _Off
        if (
            type(qid) is not str
            or type(method) is not str
            or type(perm) is not int
            or perm < 0
            or type(inp) is not list
            or type(out) is not list
            or type(rel) is not list
        ):
            raise _Off
        queries = pending.get(method)
        if queries is None:
            if not method or not method.isascii():
                raise _Off
            queries = pending[method] = {}
        rows = queries.get(qid)
        if rows is None:
            coder = coders.get(qid)
            if coder is None:
                coder = coders[qid] = _first_line(qid, inp, rel)
            rows = queries[qid] = _Pending(coder)
        coder = rows.coder
        if len(inp) != coder.K or len(out) != coder.K or rel != coder.truth:
            raise _Off
        rows.inp.append(coder.encode(inp))
        rows.out.append(coder.encode(out))
        rows.perms.append(perm)
    if not pending:
        raise _Off
    codes: Codes = {}
    by_k: dict[int, list[np.ndarray]] = {}
    for method, queries in pending.items():
        codes[method] = {}
        for qid, rows in queries.items():
            if len(set(rows.perms)) != len(rows.perms):
                raise _Off
            q = codes[method][qid] = rows.coder.rows(rows.inp, rows.out)
            by_k.setdefault(q.inp.shape[1], []).extend((q.inp, q.out))
    for arrays in by_k.values():  # every row a permutation of its query's K codes
        c = np.concatenate(arrays)
        seen = np.zeros(c.shape, dtype=bool)
        seen[np.arange(len(c))[:, None], c] = True
        if not seen.all():
            raise _Off
    return codes
