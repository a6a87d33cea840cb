"""Bootstrapping: the presented order plus ``n_shuffles`` (2) seeded shuffles of it — 3 passes — and
Borda aggregation (:mod:`._borda`: points ``K - r`` for 0-based rank ``r``; ties by the sum of raw
scores, then by presented position). The paper says "three shuffled passes"; the authors' code keeps
the presented order as the first pass, as here."""

from __future__ import annotations

from collections.abc import Sequence

from ..types import Item, Query, Scorer, rank_by_scores
from ._borda import borda
from ._common import Steps, drive, shuffle_positions
from ._result import MethodResult


def bootstrapping(
    scorer: Scorer, query: Query, presented: Sequence[Item], *, seed: int, t: int, n_shuffles: int = 2
) -> MethodResult:
    """Bootstrapping on one presented order (see the module docstring)."""
    return drive(bootstrapping_steps(query, presented, seed=seed, t=t, n_shuffles=n_shuffles), scorer, query)


def bootstrapping_steps(query: Query, presented: Sequence[Item], *, seed: int, t: int, n_shuffles: int = 2) -> Steps:
    """The steps of :func:`bootstrapping` (see :mod:`._common`)."""
    k = len(presented)
    rankings: list[list[int]] = []
    raw: list[list[float]] = []
    first: list[float] = []
    for j in range(n_shuffles + 1):
        order = shuffle_positions(k, seed, query.query_id, t, j)  # j = 0: the presented order
        scores = yield [presented[i] for i in order]
        if j == 0:
            first = [float(s) for s in scores]
        rankings.append([order[r] for r in rank_by_scores(scores)])
        by_presented = [0.0] * k
        for pos, i in enumerate(order):
            by_presented[i] = float(scores[pos])
        raw.append(by_presented)
    output = [presented[i].item_id for i in borda(rankings, raw)]
    return MethodResult(output=output, scores=first, passes=n_shuffles + 1)
