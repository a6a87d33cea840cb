"""Methods as generators of scorer requests, run one at a time (``drive``) or many in lockstep with
batched scorer calls (``drive_many``, what the runner does with a batching GPU scorer): both must give
the same rankings, pass counts, cache counters and run files."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank._orders import presented_orders
from invarirank.errors import InvariRankError
from invarirank.llm._simulated import SimulatedScorer
from invarirank.llm._testing import toy_query, toy_split_queries
from invarirank.methods import METHODS, QueryPassCache, drive_many, method_steps, run_method
from invarirank.methods._stella_calibration import calibration_counts
from invarirank.types import ScorerBase


class Batching(ScorerBase):
    """A scorer wrapper that batches (a :class:`ScorerBase` overriding ``score_batch``, so ``score_requests``
    goes through it query by query): it records the size of every ``score_batch`` call."""

    def __init__(self, scorer, batch_size: int = 4) -> None:
        self.scorer = scorer
        self.name = scorer.name
        self.batch_size = batch_size
        self.batches: list[int] = []
        self.prompts: list[tuple[str, tuple[str, ...]]] = []

    def identity(self):
        return self.scorer.identity()

    def score(self, query, presented):
        return self.score_batch(query, [presented])[0]

    def score_batch(self, query, orders):
        self.batches.append(len(orders))
        self.prompts.extend((query.query_id, tuple(it.item_id for it in o)) for o in orders)
        return [self.scorer.score(query, o) for o in orders]


def _matrix(k: int) -> np.ndarray:
    m = np.full((k, k), 1.0) + np.eye(k) * 3 + np.eye(k, k, 1) * 2
    return m / m.sum(axis=1, keepdims=True)


def test_lockstep_equals_one_at_a_time_with_fewer_larger_calls():
    q = toy_query(7)
    k = len(q.candidates)
    orders = presented_orders(q.query_id, k, 6, 5)
    opts = {"stella": {"matrix": _matrix(k)}}
    pairs = [(o, name) for o in orders for name in METHODS]

    alone = QueryPassCache(Batching(SimulatedScorer(seed=3, bias_strength=1.5)))
    expected = [
        run_method(name, alone, q, [q.candidates[i] for i in o.positions], seed=9, t=o.key, **opts.get(name, {}))
        for o, name in pairs
    ]

    batching = Batching(SimulatedScorer(seed=3, bias_strength=1.5))
    together = QueryPassCache(batching)
    got = drive_many(
        [
            method_steps(name, q, [q.candidates[i] for i in o.positions], seed=9, t=o.key, **opts.get(name, {}))
            for o, name in pairs
        ],
        together,
        q,
    )

    assert got == expected  # outputs, first-pass scores and passes
    assert together.counters() == alone.counters()  # same requests, hits and distinct passes
    assert sorted(batching.prompts) == sorted(alone.scorer.prompts)
    assert max(batching.batches) > 1 and len(batching.batches) < len(alone.scorer.batches)


def test_method_steps_rejects_unknown_method_and_bad_stella_matrix():
    q = toy_query(7)
    with pytest.raises(InvariRankError, match="unknown method"):
        method_steps("nope", q, list(q.candidates), seed=0, t=0)
    with pytest.raises(InvariRankError, match="calibration matrix is 3x3"):
        method_steps("stella", q, list(q.candidates), seed=0, t=0, matrix=_matrix(3))


def test_pass_cache_batch_answers_repeats_once():
    q = toy_query(7)
    inner = Batching(SimulatedScorer(seed=1))
    cache = QueryPassCache(inner)
    a, b = list(q.candidates), list(reversed(q.candidates))
    res = cache.score_batch(q, [a, b, a])
    assert inner.batches == [2]
    assert np.array_equal(res[0].scores, res[2].scores) and res[2].cached and not res[0].cached
    assert cache.counters()["misses"] == 2 and cache.counters()["hits"] == 1
    again = cache.score_batch(q, [b])
    assert again[0].cached and inner.batches == [2]


def test_calibration_counts_are_the_same_in_batches():
    queries = [q for q in toy_split_queries(n_test=0, n_validation=3, k=6)]
    sequential = calibration_counts(SimulatedScorer(seed=2), queries, 6, repeats=2, seed=4)
    batching = Batching(SimulatedScorer(seed=2), batch_size=5)
    batched = calibration_counts(batching, queries, 6, repeats=2, seed=4)
    assert np.array_equal(sequential, batched)
    assert max(batching.batches) == 5
