"""Borda aggregation of several rankings of the same candidates.

Rank ``r`` (0-based) in a ranking of ``K`` candidates earns ``K - r`` points. Candidates are ordered by
descending total points; ties by descending sum of their raw scores over the passes, then by the
earlier position in the presented order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def borda(rankings: Sequence[Sequence[int]], raw_scores: Sequence[Sequence[float]]) -> list[int]:
    """Aggregate rankings into presented positions, best first.

    ``rankings[j]`` lists presented positions (indices into the presented list) best first;
    ``raw_scores[j][i]`` is the raw score the pass ``j`` gave the candidate at presented position ``i``
    (both re-indexed to the presented list, whatever order pass ``j`` used).
    """
    if not rankings:
        raise ValueError("borda needs at least one ranking")
    k = len(rankings[0])
    points = np.zeros(k, dtype=np.int64)
    sums = np.zeros(k, dtype=np.float64)
    for ranking, scores in zip(rankings, raw_scores, strict=True):
        if sorted(ranking) != list(range(k)) or len(scores) != k:
            raise ValueError("every ranking must be a permutation of the presented positions")
        for r, i in enumerate(ranking):
            points[i] += k - r
        sums += np.asarray(scores, dtype=np.float64)
    return sorted(range(k), key=lambda i: (-int(points[i]), -float(sums[i]), i))
