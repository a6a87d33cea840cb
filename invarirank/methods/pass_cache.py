"""A shared pass cache in front of a scorer, for one run.

Every method's first pass on a presented order is the presented order itself, and bootstrapping's
shuffles are STELLA's first updates, so within one query the same serialised order is asked for many
times. :class:`PassCache` answers a repeated (query, presented ids) from memory and counts it:
``requests`` (calls the methods made), ``hits`` (answered from memory), ``misses`` (sent to the
scorer) and ``tokens`` (token positions the scorer reported for the misses). The wrapped scorer may
keep its own persistent cache too (counted in its ``stats``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..types import Item, Query, Scorer, ScoreResult

__all__ = ["PassCache"]


class PassCache:
    """Scorer wrapper with an in-memory pass cache (see the module docstring). ``clear()`` drops the
    stored passes (the runner clears it between queries); counters keep running."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.name = scorer.name
        self._store: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}
        self.requests = 0
        self.hits = 0
        self.misses = 0
        self.tokens = 0

    def identity(self) -> dict[str, Any]:
        return self.scorer.identity()

    @property
    def stats(self) -> dict[str, Any]:
        return dict(getattr(self.scorer, "stats", {}) or {})

    def counters(self) -> dict[str, int]:
        return {"requests": self.requests, "hits": self.hits, "misses": self.misses, "tokens": self.tokens}

    def clear(self) -> None:
        self._store.clear()

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        key = (query.query_id, tuple(it.item_id for it in presented))
        self.requests += 1
        got = self._store.get(key)
        if got is not None:
            self.hits += 1
            return ScoreResult(scores=got, tokens=0, cached=True)
        res = self.scorer.score(query, presented)
        scores = np.array(res.scores, dtype=np.float32, copy=True)
        scores.flags.writeable = False
        self._store[key] = scores
        self.misses += 1
        self.tokens += int(res.tokens or 0)
        return ScoreResult(scores=scores, tokens=int(res.tokens or 0), cached=bool(res.cached))
