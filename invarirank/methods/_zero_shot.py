"""Zero-shot listwise reranking: one pass over the presented order, ranked by descending score
(ties to the earlier presented position)."""

from __future__ import annotations

from collections.abc import Sequence

from ..types import Item, Query, Scorer, rank_by_scores
from ._common import Steps, drive
from ._result import MethodResult


def zero_shot_steps(query: Query, presented: Sequence[Item], *, seed: int = 0, t: int = 0) -> Steps:
    """The steps of :func:`zero_shot` (see :mod:`._common`): one request, the presented order."""
    scores = yield list(presented)
    output = [presented[i].item_id for i in rank_by_scores(scores)]
    return MethodResult(output=output, scores=[float(s) for s in scores], passes=1)


def zero_shot(scorer: Scorer, query: Query, presented: Sequence[Item], *, seed: int = 0, t: int = 0) -> MethodResult:
    """One pass; ``seed`` and ``t`` are accepted for a uniform signature and unused."""
    return drive(zero_shot_steps(query, presented, seed=seed, t=t), scorer, query)
