"""Observations as integer codes: what the metrics take, one method's rows of one query at a time.

Conventions: a query's K candidates are numbered 0..K-1 in ascending code-point order of their ids (GPI's
tie-break, :mod:`._consistency`), so code ``i`` is ``items[i]``; a row is its presented order and its output as
those codes. Methods and queries keep the order of their first row and a query's rows their order in the input:
the sums over rows and queries are taken in that order, so one input gives the same bits by either way in.

Two ways in build the same codes: :func:`codes_of_rows` from validated rows (a file's rows, a DataFrame's, rows in
memory) and :func:`invarirank.evaluation._code_reader.read_codes`, which reads a JSON Lines file straight into
codes without keeping its rows. Both encode a row through :class:`QueryCoder`, so the arrays are the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

import numpy as np

#: (dtype, bytes per code) of the codes of a query of K candidates: one byte up to 256 candidates, then two, then four
_WIDTHS = ((256, np.dtype(np.uint8), 1), (1 << 16, np.dtype("<u2"), 2), (1 << 32, np.dtype("<u4"), 4))


class QueryRows(NamedTuple):
    """One method's rows of one query as codes: ``items`` (the candidate ids, code-point order), ``inp`` and
    ``out`` (M x K codes of the presented orders and outputs, rows in input order), ``relevant`` (the codes of
    the ground-truth ids that are candidates) and ``n_relevant`` (the number of distinct ground-truth ids,
    non-candidates included)."""

    items: list[str]
    inp: np.ndarray
    out: np.ndarray
    relevant: list[int]
    n_relevant: int


#: method -> query id -> its rows as codes, both in order of first row
Codes = dict[str, dict[str, QueryRows]]

#: the one-byte codes 0..255
_ONE_BYTE = tuple(i.to_bytes(1, "little") for i in range(256))


class QueryCoder:
    """A query's candidates numbered in code-point order, from the ids of its first row: encodes rows into bytes
    (one code per id, :data:`_WIDTHS`) with one dictionary look-up per id. ``relevant`` and ``n_relevant`` as
    in :class:`QueryRows`; ``truth`` is the ground-truth list it was made from."""

    __slots__ = ("items", "K", "code", "index", "relevant", "n_relevant", "truth", "dtype")

    def __init__(self, candidates: Iterable[str], truth: list[str]) -> None:
        self.items = items = sorted(candidates)
        self.K = K = len(items)
        width: int
        self.dtype: np.dtype
        _, self.dtype, width = next(w for w in _WIDTHS if K <= w[0])
        codes = _ONE_BYTE[:K] if width == 1 else [i.to_bytes(width, "little") for i in range(K)]
        self.code = dict(zip(items, codes))
        #: id -> its code as an int
        self.index = index = dict(zip(items, range(K)))
        truth_set = set(truth)
        self.relevant = [index[x] for x in truth_set if x in index]
        self.n_relevant = len(truth_set)
        self.truth = truth

    def encode(self, ids: Iterable[str]) -> bytes:
        """The codes of ``ids`` (each one of the query's candidates: a ``KeyError`` otherwise)."""
        return b"".join(map(self.code.__getitem__, ids))

    def rows(self, inp: list[bytes], out: list[bytes]) -> QueryRows:
        """:class:`QueryRows` of encoded rows (``inp``/``out``: one :meth:`encode` result per row)."""
        shape = (len(inp), self.K)
        return QueryRows(
            self.items,
            np.frombuffer(b"".join(inp), dtype=self.dtype).reshape(shape),
            np.frombuffer(b"".join(out), dtype=self.dtype).reshape(shape),
            self.relevant,
            self.n_relevant,
        )


def codes_of_queries(queries: Mapping[str, list[dict]]) -> dict[str, QueryRows]:
    """One method's validated rows, grouped by query (in order), as codes."""
    out: dict[str, QueryRows] = {}
    for qid, rows in queries.items():
        coder = QueryCoder(rows[0]["input"], rows[0]["relevant"])
        encode = coder.encode
        out[qid] = coder.rows([encode(r["input"]) for r in rows], [encode(r["output"]) for r in rows])
    return out


def codes_of_rows(rows: Iterable[Mapping[str, Any]]) -> Codes:
    """Validated rows as codes, grouped by method and query in order of first row."""
    grouped: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        grouped.setdefault(r["method"], {}).setdefault(r["query_id"], []).append(r)  # type: ignore[arg-type]
    return {m: codes_of_queries(queries) for m, queries in grouped.items()}


def list_lengths(codes: Codes) -> tuple[int, int]:
    """(shortest, longest) K over the rows (0, 0 when there are none)."""
    ks = [q.inp.shape[1] for queries in codes.values() for q in queries.values()]
    return (min(ks), max(ks)) if ks else (0, 0)


def reference_queries(codes: Codes) -> dict[str, QueryRows]:
    """The rows whose presented orders the references take: per query, those of the first method (in method
    order) that holds it (:func:`invarirank.evaluation._references.reference_inputs` on rows)."""
    out: dict[str, QueryRows] = {}
    for queries in codes.values():
        for qid, q in queries.items():
            out.setdefault(qid, q)
    return out


class KGroup(NamedTuple):
    """A method's queries with K candidates: their indices ``qi`` among its queries, the rows of each in turn as
    ``inp``/``out`` (R x K int64 codes), ``rel`` (G x K: is candidate i relevant) and ``n_rel`` (G)."""

    K: int
    qi: np.ndarray
    inp: np.ndarray
    out: np.ndarray
    rel: np.ndarray
    n_rel: np.ndarray


def k_groups(queries: list[QueryRows], k_of: np.ndarray) -> Iterable[KGroup]:
    """The queries of one method by K, ascending (``k_of``: each query's K)."""
    for K in sorted(set(k_of.tolist())):  # (np.unique would import numpy.ma: slow start-up)
        qi = np.flatnonzero(k_of == K)
        group = [queries[q] for q in qi.tolist()]
        rel = np.zeros((len(qi), K), dtype=bool)
        for g, q in enumerate(group):
            rel[g, q.relevant] = True
        yield KGroup(
            K,
            qi,
            np.concatenate([q.inp for q in group]).astype(np.int64),
            np.concatenate([q.out for q in group]).astype(np.int64),
            rel,
            np.array([q.n_relevant for q in group], dtype=np.int64),
        )


def stacked_positions(queries: list[QueryRows]) -> np.ndarray:
    """G x M x K: the 0-based presented position of each candidate in each row of G queries with the same K and
    M, candidates labelled in the order of each query's first row."""
    inp = np.stack([q.inp for q in queries]).astype(np.int64)  # G x M x K
    G, M, K = inp.shape
    pos = np.empty_like(inp)
    np.put_along_axis(pos, inp, np.broadcast_to(np.arange(K, dtype=np.int64), inp.shape), axis=2)
    return np.take_along_axis(pos, np.broadcast_to(inp[:, :1, :], inp.shape), axis=2)
