"""First-stage retrieval metrics over queries (each query weighs the same).

For a query with ground truth G (a set of item ids) and a retrieved list L (best first), at cut-off K
(top-K = L[:K]; 1-based rank r):

* ``coverage@K``: share of queries with at least one ground-truth item in the top-K. For one list
  per query this is the same number as ``hr@K``; both are reported because the first stage uses the
  name coverage (it decides which queries are kept) and the reranking metrics use HR.
* ``recall@K`` = |G ∩ top-K| / |G|.
* ``ndcg@K``: binary gains, DCG = sum over hits of 1/log2(r + 1), ideal DCG = sum_{i=1..min(|G|,K)}
  1/log2(i + 1) (the book's metrics chapter).
* ``hr@K`` = 1 if any hit in the top-K.

Queries with an empty ground truth are not allowed (the prepared queries never have one).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

DEFAULT_KS = (15, 25, 50)


def query_hits(retrieved: Sequence[str], ground_truth: Iterable[str]) -> np.ndarray:
    """Boolean array: whether ``retrieved[i]`` is a ground-truth item."""
    gt = set(ground_truth)
    return np.fromiter((r in gt for r in retrieved), dtype=bool, count=len(retrieved))


def retrieval_metrics(
    retrieved: Sequence[Sequence[str]], ground_truth: Sequence[Iterable[str]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float]:
    """Mean ``coverage@K``, ``recall@K``, ``hr@K``, ``ndcg@K`` for every K in ``ks`` (plus ``queries``)."""
    if len(retrieved) != len(ground_truth):
        raise ValueError("retrieved and ground_truth differ in length")
    n = len(retrieved)
    out: dict[str, float] = {"queries": n}
    if n == 0:
        for k in ks:
            for name in ("coverage", "recall", "hr", "ndcg"):
                out[f"{name}@{k}"] = 0.0
        return out
    kmax = max(ks)
    discounts = 1.0 / np.log2(np.arange(2, kmax + 2))
    sums = {f"{name}@{k}": 0.0 for k in ks for name in ("coverage", "recall", "hr", "ndcg")}
    for lst, gt in zip(retrieved, ground_truth):
        gt_set = set(gt)
        if not gt_set:
            raise ValueError("a query has an empty ground truth")
        hits = query_hits(list(lst)[:kmax], gt_set)
        for k in ks:
            h = hits[:k]
            n_hit = int(h.sum())
            hit = 1.0 if n_hit else 0.0
            sums[f"coverage@{k}"] += hit
            sums[f"hr@{k}"] += hit
            sums[f"recall@{k}"] += n_hit / len(gt_set)
            ideal = discounts[: min(len(gt_set), k)].sum()
            sums[f"ndcg@{k}"] += float(discounts[: h.size][h].sum() / ideal)
    for key, val in sums.items():
        out[key] = val / n
    return out
