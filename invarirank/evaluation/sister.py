"""Sister measures of order sensitivity (the book's metrics chapter, "Sister measures"): what rank-stability studies
and evaluation libraries report, computed from the same rows as PPI, GPI and LOC.

Computed on request — :func:`sister_measures` — and never part of ``metrics.json`` (whose schema, and the committed
runs' files, they leave as they are). Conventions: one query's M rows rank the same K candidates; ``R[t, i]`` is
the 0-based output rank of candidate i in row t (1-based where a name says so); ``W[i, j]`` counts the rows that
rank i above j (:mod:`._consistency`). Per query, then the plain mean over the queries where a measure is defined
(``null`` where none is). Each is one numpy expression over the query's M × K ranks:

* ``spearman`` — the mean over the C(M, 2) pairs of rows of Spearman's ρ between their rankings,
  ρ = 1 - 6 Σ_i d_i² / (K(K² - 1)); with Σ_{s<t} (a_s - a_t)² = M Σ a² - (Σ a)² per candidate, all pairs at once.
  1: the same ranking for every order. Undefined for M < 2 or K < 2.
* ``jaccard@k`` — the mean over pairs of rows of |T_s ∩ T_t| / |T_s ∪ T_t|, T = the output's top k. Undefined for
  M < 2 or K <= k (every top k holds every candidate).
* ``first_place`` — first-place agreement: the share of pairs of rows that put the same candidate first,
  Σ_i C(n_i, 2) / C(M, 2) with n_i the rows that rank i first (a position-blind reranker: 1; one that always picks
  the item shown first, under random orders: about 1/K). Undefined for M < 2.
* ``relevant_rank_mean`` / ``relevant_rank_sd`` — for each relevant candidate, the mean and the standard deviation
  (population, ddof = 0: the M orders are all there is) of its **1-based** output rank over the rows; averaged over
  the query's relevant candidates. Undefined when no relevant item is a candidate.
* ``flip_rate`` — the share of candidate pairs whose order is not the same in all M outputs (0 < W[i, j] < M).
  (The mean share of *row pairs* that disagree on a candidate pair is (1 - LOC) / 2, already reported as LOC.)
  Undefined for M < 2 or K < 2.
* ``intransitive_triads`` — in the induced majority preferences (i ≻ j when q(i, j) > 1/2; a pair with
  q = 1/2 is undecided), the share of cyclic triads (i ≻ j ≻ l ≻ i) among the triads whose three pairs are all
  decided: trace(A³)/3 over trace(D³)/6 with A the majority matrix and D = A + Aᵀ. Undefined when no triad is
  fully decided (K < 3 among them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvariRankError
from .observations import as_rows

__all__ = ["sister_measures"]

#: the measures' names in the order they are reported (``jaccard@k`` with the chosen k)
SISTER_MEASURES = (
    "spearman",
    "jaccard@{k}",
    "first_place",
    "relevant_rank_mean",
    "relevant_rank_sd",
    "flip_rate",
    "intransitive_triads",
)


def rank_matrix(outputs: Sequence[Sequence[str]]) -> tuple[list[str], np.ndarray]:
    """The candidates (sorted ids) and ``R[t, i]`` = the 0-based output rank of candidate i in row t."""
    items = sorted(outputs[0])
    index = {x: i for i, x in enumerate(items)}
    order = np.array([[index[x] for x in out] for out in outputs], dtype=np.int64)  # order[t, r] = item at rank r
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(len(items))[None, :].repeat(len(outputs), 0), axis=1)
    return items, ranks


def _pairs(m: int) -> int:
    return m * (m - 1) // 2


def query_sister_measures(outputs: Sequence[Sequence[str]], relevant: Sequence[str] = (), k: int = 5) -> dict[str, Any]:
    """The sister measures of one query's rows (``outputs``: complete rankings of the same candidates, best first;
    ``relevant``: the ground truth) — module docstring; ``None`` where undefined."""
    items, R = rank_matrix(outputs)
    M, K = R.shape
    out: dict[str, Any] = dict.fromkeys(m.format(k=k) for m in SISTER_MEASURES)
    W = (R[:, :, None] < R[:, None, :]).sum(axis=0)  # W[i, j]: rows ranking i above j
    if M >= 2 and K >= 2:
        Rf = R.astype(np.float64)
        spread = M * (Rf**2).sum(axis=0) - Rf.sum(axis=0) ** 2  # Σ_{s<t} (R_si - R_ti)², per candidate
        out["spearman"] = float(1.0 - 6.0 * spread.sum() / (_pairs(M) * K * (K * K - 1)))
        upper = W[np.triu_indices(K, 1)]
        out["flip_rate"] = float(((upper > 0) & (upper < M)).mean())
    if M >= 2:
        firsts = np.bincount(np.argmin(R, axis=1), minlength=K)
        out["first_place"] = float((firsts * (firsts - 1) // 2).sum() / _pairs(M))
        if K > k:
            top = (R < k).astype(np.int64)
            inter = top @ top.T
            iu = np.triu_indices(M, 1)
            out[f"jaccard@{k}"] = float((inter[iu] / (2 * k - inter[iu])).mean())
    if K >= 3:
        # 0/1 matrices in float64 (BLAS matmul); the traces are integers far below 2**53, so exact
        A = (2 * W > M).astype(np.float64)
        D = A + A.T
        decided = round(float(np.trace(D @ D @ D))) // 6
        if decided:
            out["intransitive_triads"] = round(float(np.trace(A @ A @ A))) // 3 / decided
    truth = set(relevant)
    cols = [i for i, x in enumerate(items) if x in truth]
    if cols:
        ranks1 = R[:, cols].astype(np.float64) + 1.0
        out["relevant_rank_mean"] = float(ranks1.mean(axis=0).mean())
        out["relevant_rank_sd"] = float(ranks1.std(axis=0, ddof=0).mean())
    return out


def sister_measures(observations: Any, *, k: int = 5) -> dict[str, Any]:
    """Observations (a file, a DataFrame or rows; validated) → ``{"settings": {"k": k}, "methods": {METHOD:
    {"overall": {NAME: mean over defined queries, "queries": Q}, "per_query": {QUERY_ID: {NAME: value}}}}}``;
    methods and queries in the order of their first row.

    Stability: caller (Spearman, top-k Jaccard, first place, relevant ranks, flips, intransitive triads)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvariRankError(f"sister_measures: k = {k!r}; expected an integer >= 1 (the top-k of jaccard@k)")
    rows = as_rows(observations)
    groups: dict[str, dict[str, list[dict]]] = {}
    for row in rows:
        groups.setdefault(row["method"], {}).setdefault(row["query_id"], []).append(row)
    names = [m.format(k=k) for m in SISTER_MEASURES]
    methods: dict[str, Any] = {}
    for method, queries in groups.items():
        per_query = {
            qid: query_sister_measures([r["output"] for r in qrows], qrows[0]["relevant"], k)
            for qid, qrows in queries.items()
        }
        overall: dict[str, Any] = {}
        for name in names:
            vals = [d[name] for d in per_query.values() if d[name] is not None]
            overall[name] = float(np.mean(vals)) if vals else None
        overall["queries"] = len(per_query)
        methods[method] = {"overall": overall, "per_query": per_query}
    return {"settings": {"k": int(k)}, "methods": methods}
