"""The per-query pass cache: an in-memory cache in front of a scorer that the runner drops between queries (or
windows of queries).

Every method's first pass on a presented order is the presented order itself, and bootstrapping's
shuffles are STELLA's first updates, so within one query the same serialised order is asked for many
times. :class:`QueryPassCache` answers a repeated (query, presented ids) from memory and counts it:
``requests`` (calls the methods made), ``hits`` (answered from memory), ``misses`` (sent to the
scorer) and ``tokens`` (token positions the scorer reported for the misses), in all and per query
(:meth:`QueryPassCache.counters` with a query id: the same numbers whether the query ran alone or in a
window of queries). The wrapped scorer may keep its own persistent cache too (counted in its ``stats``;
:class:`invarirank.llm._persistent_cache.PersistentPassCache` for the real scorers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..types import Item, Query, Scorer, ScorerBase, ScoreResult, labels_of
from ._common import as_batch_scorer, score_request_results


class QueryPassCache(ScorerBase):
    """Scorer wrapper with an in-memory pass cache (see the module docstring), itself a
    :class:`~invarirank.types.BatchScorer`. ``clear()`` drops the stored passes (the runner clears it between
    queries); counters keep running. ``scorer`` is the wrapped scorer as given."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self._inner = as_batch_scorer(scorer)
        self.name = scorer.name
        self._store: dict[tuple[str, tuple[str, ...], tuple[str, ...] | None], np.ndarray] = {}
        self.requests = 0
        self.hits = 0
        self.misses = 0
        self.tokens = 0
        self._per_query: dict[str, dict[str, int]] = {}

    def identity(self) -> dict[str, Any]:
        return self.scorer.identity()

    def key_identity(self) -> dict[str, Any]:
        return self._inner.key_identity()

    @property
    def stats(self) -> Mapping[str, Any]:  # type: ignore[override]  # read-only here: the wrapped scorer's
        """A copy of the wrapped scorer's work counters."""
        return dict(self._inner.stats)

    def counters(self, query_id: str | None = None) -> dict[str, int]:
        """The counters in all, or those of one query."""
        if query_id is not None:
            return dict(self._per_query.get(query_id) or dict.fromkeys(("requests", "hits", "misses", "tokens"), 0))
        return {"requests": self.requests, "hits": self.hits, "misses": self.misses, "tokens": self.tokens}

    def _count(self, query_id: str, name: str, n: int = 1) -> None:
        setattr(self, name, getattr(self, name) + n)
        per = self._per_query.setdefault(query_id, dict.fromkeys(("requests", "hits", "misses", "tokens"), 0))
        per[name] += n

    def clear(self) -> None:
        self._store.clear()

    @property
    def batch_size(self) -> int:  # type: ignore[override]  # read-only here: the wrapped scorer's
        """The wrapped scorer's batch size (1 when it does not batch)."""
        return self._inner.batch_size

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        return self.score_batch(query, [presented])[0]

    def clear_counters(self, query_id: str) -> None:
        """Forget one query's own counters (the totals keep running)."""
        self._per_query.pop(query_id, None)

    def score_batch(self, query: Query, orders: Sequence[Sequence[Item]]) -> list[ScoreResult]:
        """Answer each order from memory or, for the orders not seen before (each distinct one once,
        in first-seen order), from the wrapped scorer's ``score_requests``.
        Counters: a repeat inside the batch counts as a hit, as it would one call at a time."""
        return self.score_requests([(query, presented) for presented in orders])

    def score_requests(self, requests: Sequence[tuple[Query, Sequence[Item]]]) -> list[ScoreResult]:
        """:meth:`score_batch` for requests of one or several queries: the distinct new ones go to the wrapped
        scorer's ``score_requests`` in one call (a window of queries batched together)."""
        out: list[ScoreResult | None] = [None] * len(requests)
        todo: dict[tuple[str, tuple[str, ...], tuple[str, ...] | None], list[int]] = {}
        for i, (query, presented) in enumerate(requests):
            key = (query.query_id, tuple(it.item_id for it in presented), labels_of(presented))
            self._count(query.query_id, "requests")
            got = self._store.get(key)
            if got is not None:
                self._count(query.query_id, "hits")
                out[i] = ScoreResult(scores=got, tokens=0, cached=True)
            elif key in todo:
                self._count(query.query_id, "hits")
                todo[key].append(i)
            else:
                todo[key] = [i]
        if todo:
            firsts = [requests[idxs[0]] for idxs in todo.values()]
            results = score_request_results(self._inner, firsts)
            for (key, idxs), res in zip(todo.items(), results):
                scores = np.array(res.scores, dtype=np.float32, copy=True)
                scores.flags.writeable = False
                self._store[key] = scores
                self._count(key[0], "misses")
                tokens = int(res.tokens or 0)
                self._count(key[0], "tokens", tokens)
                out[idxs[0]] = ScoreResult(scores=scores, tokens=tokens, cached=bool(res.cached))
                for i in idxs[1:]:
                    out[i] = ScoreResult(scores=scores, tokens=0, cached=True)
        return out  # type: ignore[return-value]
