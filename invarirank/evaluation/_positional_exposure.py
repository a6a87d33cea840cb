"""Positional exposure (the book's metrics chapter): how often the item shown at presented position p reaches the
output top-k.

E_k(p) = over every row with K > p (pooled over queries and orders), the share whose item at presented position p
lands in the output top-k. The expected value at p is the mean over those same rows of min(k, K)/K (what a ranker
that ignores positions gets). Reported: the list E_k(p) for p = 0..max K - 1, the expected list, the mean absolute
deviation (unweighted mean over positions of |E_k(p) - expected(p)|) and the maximum absolute deviation.
A position follower (output = input) gets 1 on the first k positions and 0 elsewhere.

Figure 1's band (:func:`exposure_band`) resamples queries with the one bootstrap of
:mod:`invarirank.evaluation._bootstrap`: each replicate recomputes every position's pooled E_k(p).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._bootstrap import collect, percentile_interval, ratio


def position_hits(pos: np.ndarray, rank: np.ndarray, starts: np.ndarray, k: int) -> np.ndarray:
    """``hits[g, p]``: rows of query g (contiguous rows, ``starts`` = G+1 offsets) whose item at presented position
    p has output rank < k. ``pos``/``rank``: R x K presented position / 0-based output rank of item i."""
    R, K = pos.shape
    G = len(starts) - 1
    group = np.repeat(np.arange(G), np.diff(starts))
    idx = (group[:, None] * K + pos).ravel()
    return np.bincount(idx, weights=(rank < k).ravel(), minlength=G * K).reshape(G, K)


def exposure_summary(hits: np.ndarray, rows: np.ndarray, expected_sum: np.ndarray) -> dict[str, Any]:
    """Pool per-position sums: ``hits[p]`` rows whose item at p reached the top-k, ``rows[p]`` rows with K > p,
    ``expected_sum[p]`` the sum of min(k, K)/K over those rows. Positions without rows are left out of the
    deviations (they cannot happen for the full data, only in a bootstrap resample) and read None in the lists."""
    hits, rows, expected_sum = (np.asarray(a, dtype=np.float64) for a in (hits, rows, expected_sum))
    seen = rows > 0
    e = np.divide(hits, rows, out=np.full_like(hits, np.nan), where=seen)
    x = np.divide(expected_sum, rows, out=np.full_like(hits, np.nan), where=seen)
    dev = np.abs(e - x)[seen]
    return {
        "exposure": [None if not s else float(v) for v, s in zip(e, seen)],
        "expected": [None if not s else float(v) for v, s in zip(x, seen)],
        "mad": float(dev.mean()) if dev.size else None,
        "maxdev": float(dev.max()) if dev.size else None,
    }


def deviation_statistics(
    h_cols: slice, n_cols: slice, x_cols: slice
) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """``(mad, maxdev)``: functions of a block of totals ``Y`` (one row per replicate, e.g. a bootstrap resample or a
    permutation) whose columns ``h_cols``/``n_cols``/``x_cols`` hold the pooled per-position sums of
    :func:`exposure_summary` (hits, rows, expected). Each returns one deviation per row; positions without rows in a
    row are left out (NaN when none is left)."""

    def dev(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h, n, x = Y[:, h_cols], Y[:, n_cols], Y[:, x_cols]
        seen = n > 0
        d = np.abs(np.divide(h - x, n, out=np.zeros_like(h), where=seen))
        n_seen = seen.sum(axis=1)
        return d, seen, n_seen

    def mad(Y: np.ndarray) -> np.ndarray:
        d, seen, n_seen = dev(Y)
        return np.divide(d.sum(axis=1), n_seen, out=np.full(len(d), np.nan), where=n_seen > 0)

    def maxdev(Y: np.ndarray) -> np.ndarray:
        d, seen, n_seen = dev(Y)
        return np.where(n_seen > 0, np.where(seen, d, -np.inf).max(axis=1), np.nan)

    return mad, maxdev


def exposure(inputs: Any, outputs: Any = None, k: int = 5) -> dict[str, Any]:
    """Exposure over many rows (any queries, any K): ``inputs`` presented orders and ``outputs`` rankings
    (lists of ids), or rows (dicts / a DataFrame) with ``input`` and ``output`` as the first argument.
    Returns ``{"exposure": [...], "expected": [...], "mad": ..., "maxdev": ...}``."""
    if outputs is None:
        pd = sys.modules.get("pandas")
        if pd is not None and isinstance(inputs, pd.DataFrame):
            inputs, outputs = list(inputs["input"]), list(inputs["output"])
        else:
            inputs, outputs = [r["input"] for r in inputs], [r["output"] for r in inputs]
    max_k = max(len(i) for i in inputs)
    hits, rows, exp = np.zeros(max_k), np.zeros(max_k), np.zeros(max_k)
    for inp, out in zip(inputs, outputs):
        K = len(inp)
        top = set(list(out)[:k])
        hits[:K] += [1.0 if x in top else 0.0 for x in inp]
        rows[:K] += 1
        exp[:K] += min(k, K) / K
    return exposure_summary(hits, rows, exp)


def query_position_sums(rows: Sequence[Any], k: int = 5) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Per query (in first-seen order) and 0-based presented position p, over the query's rows (dicts with
    ``query_id``, ``input``, ``output``): ``hits[q, p]`` rows whose item at p reached the output top-k,
    ``n[q, p]`` rows with K > p, ``expected[q, p]`` the sum of min(k, K)/K over those rows.
    Returns ``(query_ids, hits, n, expected)``, each array Q x (max K)."""
    qids = list(dict.fromkeys(r["query_id"] for r in rows))
    index = {q: i for i, q in enumerate(qids)}
    max_k = max(len(r["input"]) for r in rows)
    hits, n, expected = (np.zeros((len(qids), max_k)) for _ in range(3))
    for r in rows:
        i, K = index[r["query_id"]], len(r["input"])
        top = set(r["output"][:k])
        hits[i, :K] += [x in top for x in r["input"]]
        n[i, :K] += 1
        expected[i, :K] += min(k, K) / K
    return qids, hits, n, expected


def exposure_band(
    rows: Sequence[Any], k: int = 5, n_bootstrap: int = 1000, seed: int = 0, level: float = 0.95
) -> dict[str, np.ndarray]:
    """E_k(p) of one method's rows with a percentile bootstrap band over queries (Figure 1).

    ``exposure`` and ``expected`` are pooled over all rows (they equal ``metrics.json``'s ``exposure@k`` and
    ``expected_exposure@k``); ``low``/``high`` resample queries with replacement through
    :func:`invarirank.evaluation._bootstrap.collect` (seeded: the same ``seed`` draws the same band; a replicate
    recomputes each position's pooled ratio). With ``n_bootstrap`` 0 or a single query the band is the value
    itself. Arrays are indexed by 0-based presented position.
    """
    _, hits, n, expected = query_position_sums(rows, k)
    Q, K = hits.shape
    total = np.maximum(n.sum(0), 1)
    e = hits.sum(0) / total
    if n_bootstrap > 0 and Q > 1:
        reps = collect(Q, n_bootstrap, seed, np.hstack([hits, n]), {str(p): ratio(p, K + p) for p in range(K)})
        bands = [percentile_interval(reps[str(p)], level) or [np.nan, np.nan] for p in range(K)]
        low, high = np.array([b[0] for b in bands]), np.array([b[1] for b in bands])
    else:
        low = high = e
    return {"exposure": e, "low": low, "high": high, "expected": expected.sum(0) / total}
