"""Effectiveness of one ranking (the book's metrics chapter): HR@k, nDCG@k, recall@k, MRR@k.

Conventions: ``output`` is a complete ranking, best first; rank r is 1-based; top-k = ``output[:k]`` (the whole
list when k > K); the ground truth is the **set** of relevant ids and may hold ids that are not candidates, which
stay in the denominators (recall) and in the ideal DCG (so unretrieved ground truth lowers the maximum).

The scalar functions work on plain lists; :func:`effectiveness_from_ranks` is the vectorised form used by
:func:`invarirank.evaluation.evaluate` on many rows at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np


def _first_rank(output: Sequence[str], truth: set) -> int | None:
    for r, item in enumerate(output, 1):
        if item in truth:
            return r
    return None


def hit_rate(output: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """1.0 if any relevant id is among the first ``k`` of ``output``, else 0.0."""
    truth = set(relevant)
    return 1.0 if any(x in truth for x in output[:k]) else 0.0


def ideal_dcg(n_relevant: int, k: int) -> float:
    """sum_{i=1..min(n_relevant, k)} 1/log2(i+1): the DCG of a perfect top-k."""
    return sum(1.0 / math.log2(i + 1) for i in range(1, min(n_relevant, k) + 1))


def ndcg(output: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """nDCG@k with binary gains: sum over relevant ids in the top-k of 1/log2(r+1), over :func:`ideal_dcg`."""
    truth = set(relevant)
    if not truth:
        raise ValueError("ndcg: the ground truth is empty")
    dcg = sum(1.0 / math.log2(r + 1) for r, x in enumerate(output[:k], 1) if x in truth)
    return dcg / ideal_dcg(len(truth), k)


def recall(output: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """|ground truth ∩ top-k| / |ground truth|."""
    truth = set(relevant)
    if not truth:
        raise ValueError("recall: the ground truth is empty")
    return sum(1 for x in output[:k] if x in truth) / len(truth)


def reciprocal_rank(output: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """MRR@k of one ranking: 1/r of the first relevant id if r <= k, else 0."""
    r = _first_rank(output, set(relevant))
    return 1.0 / r if r is not None and r <= k else 0.0


def effectiveness_from_ranks(
    rank: np.ndarray, relevant: np.ndarray, n_relevant: np.ndarray, ks: Sequence[int]
) -> dict[str, np.ndarray]:
    """Per-row HR/nDCG/recall/MRR for many rows at once.

    ``rank[r, i]``: 0-based output rank of candidate i in row r (R x K ints); ``relevant[r, i]``: whether
    candidate i is in the ground truth (R x K bools); ``n_relevant[r]``: size of the ground-truth set, non-candidates
    included. Returns ``{"hr@k": ..., "ndcg@k": ..., "recall@k": ..., "mrr@k": ...}`` with one float per row.
    """
    rank = np.asarray(rank)
    rel = np.asarray(relevant, dtype=bool)
    n_rel = np.asarray(n_relevant, dtype=np.float64)
    K = rank.shape[1] if rank.ndim == 2 else 0
    # 1/log2(rank + 2) of each rank, looked up: the same doubles as computing it for every cell, a K-th of the logs
    gain = np.where(rel, (1.0 / np.log2(np.arange(K) + 2.0))[rank], 0.0) if K else np.zeros(rank.shape)
    never = np.iinfo(np.int64).max // 2  # "no relevant candidate": beyond every cut-off
    first = np.where(rel, rank, never).min(axis=1) if K else np.full(len(rank), never, dtype=np.int64)
    out: dict[str, np.ndarray] = {}
    top_n = int(n_rel.max()) if len(n_rel) else 0
    for k in ks:
        in_top = rel & (rank < k)
        hits = in_top.sum(axis=1)
        idcg_table = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, min(top_n, k) + 2)))])
        idcg = idcg_table[np.minimum(n_rel.astype(np.int64), k)]
        out[f"hr@{k}"] = (hits > 0).astype(np.float64)
        out[f"ndcg@{k}"] = np.where(in_top, gain, 0.0).sum(axis=1) / idcg
        out[f"recall@{k}"] = hits / n_rel
        out[f"mrr@{k}"] = np.where(first < k, 1.0 / (first + 1.0), 0.0)
    return out
