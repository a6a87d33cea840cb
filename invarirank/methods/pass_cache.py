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
from ._common import batch_size_of, score_results

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

    @property
    def batch_size(self) -> int:
        """The wrapped scorer's batch size (1 when it does not batch)."""
        return batch_size_of(self.scorer)

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        return self.score_batch(query, [presented])[0]

    def score_batch(self, query: Query, orders: Sequence[Sequence[Item]]) -> list[ScoreResult]:
        """Answer each order from memory or, for the orders not seen before (each distinct one once,
        in first-seen order), from the wrapped scorer's ``score_batch`` (or ``score`` one by one).
        Counters: a repeat inside the batch counts as a hit, as it would one call at a time."""
        out: list[ScoreResult | None] = [None] * len(orders)
        todo: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, presented in enumerate(orders):
            key = (query.query_id, tuple(it.item_id for it in presented))
            self.requests += 1
            got = self._store.get(key)
            if got is not None:
                self.hits += 1
                out[i] = ScoreResult(scores=got, tokens=0, cached=True)
            elif key in todo:
                self.hits += 1
                todo[key].append(i)
            else:
                todo[key] = [i]
        if todo:
            results = score_results(self.scorer, query, [orders[idxs[0]] for idxs in todo.values()])
            for (key, idxs), res in zip(todo.items(), results):
                scores = np.array(res.scores, dtype=np.float32, copy=True)
                scores.flags.writeable = False
                self._store[key] = scores
                self.misses += 1
                tokens = int(res.tokens or 0)
                self.tokens += tokens
                out[idxs[0]] = ScoreResult(scores=scores, tokens=tokens, cached=bool(res.cached))
                for i in idxs[1:]:
                    out[i] = ScoreResult(scores=scores, tokens=0, cached=True)
        return out  # type: ignore[return-value]
