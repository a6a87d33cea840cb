"""Helpers shared by the methods: seeded shuffles and one scorer call.

Every method-internal random choice is seeded from ``(seed, query_id, t)`` (``t`` = the presented
order's key, see :mod:`invarirank.orders`) plus a purpose string, through stable hashes. Shuffle ``j``
of a presented order (``j >= 1``) is one shared stream: bootstrapping's shuffles 1 and 2 are STELLA's
updates 1 and 2, so a shared pass cache serves them once (methods remain independent: each one is a
deterministic function of its own input and the seed).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..orders import rng_for
from ..types import Item, Query, Scorer

__all__ = ["shuffle_positions", "score_items"]


def shuffle_positions(k: int, seed: int, query_id: str, t: int, j: int) -> list[int]:
    """Shuffle ``j`` of a presented order with ``k`` candidates, as indices into the presented list.

    ``j = 0`` is the presented order itself (the identity); ``j >= 1`` is a seeded permutation (it may
    coincide with the identity for tiny ``k``).
    """
    if j == 0:
        return list(range(k))
    return [int(i) for i in rng_for(seed, query_id, t, "shuffle", j).permutation(k)]


def score_items(scorer: Scorer, query: Query, items: Sequence[Item]) -> np.ndarray:
    """One scorer call; float64 copy of the scores aligned with ``items``."""
    res = scorer.score(query, list(items))
    scores = np.asarray(res.scores, dtype=np.float64)
    if scores.shape != (len(items),):
        raise ValueError(f"scorer {getattr(scorer, 'name', scorer)!r} returned {scores.shape} scores "
                         f"for {len(items)} candidates")
    return scores
