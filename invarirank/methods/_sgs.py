"""Sequential greedy selection (SGS): score the remaining candidates, move the top one to the output,
shuffle the rest with a seeded generator, repeat. ``K`` passes for ``K`` candidates: the first pass
uses the presented order; the last pass scores the single remaining candidate (it still counts and is
still sent to the scorer, so ``passes`` equals the paper's K)."""

from __future__ import annotations

from collections.abc import Sequence

from .._orders import rng_for
from ..types import Item, Query, Scorer, rank_by_scores
from ._common import Steps, drive
from ._result import MethodResult


def sgs(scorer: Scorer, query: Query, presented: Sequence[Item], *, seed: int, t: int) -> MethodResult:
    """SGS on one presented order (see the module docstring)."""
    return drive(sgs_steps(query, presented, seed=seed, t=t), scorer, query)


def sgs_steps(query: Query, presented: Sequence[Item], *, seed: int, t: int) -> Steps:
    """The steps of :func:`sgs` (see :mod:`._common`)."""
    remaining = list(range(len(presented)))  # presented positions, in the current order
    output: list[str] = []
    first: list[float] = []
    passes = 0
    for step in range(len(presented)):
        scores = yield [presented[i] for i in remaining]
        passes += 1
        if step == 0:
            first = [float(s) for s in scores]
        top = rank_by_scores(scores)[0]
        output.append(presented[remaining.pop(top)].item_id)
        if len(remaining) > 1:
            perm = rng_for(seed, query.query_id, t, "sgs", step).permutation(len(remaining))
            remaining = [remaining[int(i)] for i in perm]
    return MethodResult(output=output, scores=first, passes=passes)
