"""Methods (zero-shot, bootstrapping, SGS), Borda, presented orders, the pass cache and the simulated scorer."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from invarirank._orders import draw_order, presented_orders, stable_seed
from invarirank.errors import InvariRankError
from invarirank.llm._simulated import SimulatedScorer
from invarirank.methods import METHODS, QueryPassCache, run_method
from invarirank.methods._borda import borda
from invarirank.methods._common import shuffle_positions
from invarirank.methods.stella import posterior_update
from invarirank.types import Item, Query, ScoreResult, rank_by_scores
from tests.support import ROOT


def make_query(k: int, qid: str = "u1", truth=("3",)) -> Query:
    return Query(
        qid, qid[1:], (), tuple(Item(str(i), f"Movie {i}", 1990 + i, ("Drama",)) for i in range(k)), tuple(truth)
    )


class Scripted:
    """Scores from a function of the presented ids; records every call."""

    name = "scripted"

    def __init__(self, fn):
        self.fn = fn
        self.calls: list[list[str]] = []

    def identity(self):
        return {"scorer": "scripted"}

    def score(self, query, presented):
        ids = [it.item_id for it in presented]
        self.calls.append(ids)
        return ScoreResult(np.asarray(self.fn(ids), dtype=np.float32))


def uniform(k):
    return np.full((k, k), 1.0 / k)


# -- passes per method ---------------------------------------------------------------------------
@pytest.mark.parametrize("k", [1, 2, 5, 9])
def test_passes_per_method_per_order(k):
    q = make_query(k)
    T = np.random.default_rng(k).dirichlet(np.ones(k), size=k)
    for o in presented_orders(q.query_id, k, 4, seed=7):
        presented = [q.candidates[i] for i in o.positions]
        for name in METHODS:
            sim = SimulatedScorer(seed=1)
            scorer = Scripted(lambda ids, sim=sim: sim.score(q, [q.candidates[int(i)] for i in ids]).scores)
            res = run_method(name, scorer, q, presented, seed=3, t=o.key, **({"matrix": T} if name == "stella" else {}))
            assert res.passes == len(scorer.calls)
            expected = {"zero_shot": (1, 1), "bootstrapping": (3, 3), "sgs": (k, k), "stella": (4, 10)}[name]
            assert expected[0] <= res.passes <= expected[1], (name, res.passes)
            assert sorted(res.output) == sorted(it.item_id for it in presented)
            # the first pass of every method is the presented order itself
            assert scorer.calls[0] == [it.item_id for it in presented]
            assert len(res.scores) == k


def test_first_pass_scores_equal_zero_shot_scores():
    q = make_query(8)
    scorer = SimulatedScorer(seed=5)
    T = np.random.default_rng(0).dirichlet(np.ones(8), size=8)
    presented = [q.candidates[i] for i in draw_order(8, 1, q.query_id, 0)]
    zs = run_method("zero_shot", scorer, q, presented, seed=1, t=0)
    for name in METHODS:
        res = run_method(name, scorer, q, presented, seed=1, t=0, **({"matrix": T} if name == "stella" else {}))
        assert res.scores == zs.scores


def test_sgs_selects_greedily_and_scores_the_last_single_candidate():
    utility = {"0": 0.1, "1": 0.9, "2": 0.5, "3": 0.7}
    scorer = Scripted(lambda ids: [utility[i] for i in ids])
    q = make_query(4)
    res = run_method("sgs", scorer, q, list(q.candidates), seed=0, t=0)
    assert res.output == ["1", "3", "2", "0"]
    assert [len(c) for c in scorer.calls] == [4, 3, 2, 1]
    assert res.passes == 4


def test_methods_are_deterministic_and_seeded_by_t():
    q = make_query(10)
    scorer = SimulatedScorer(seed=2, noise_sd=2.0)
    presented = list(q.candidates)
    a = run_method("sgs", scorer, q, presented, seed=1, t=0)
    b = run_method("sgs", scorer, q, presented, seed=1, t=0)
    assert a == b
    outs = {tuple(run_method("sgs", scorer, q, presented, seed=1, t=t).output) for t in range(8)}
    assert len(outs) > 1  # other keys → other internal shuffles


def test_unknown_method_is_a_clear_error():
    q = make_query(3)
    with pytest.raises(InvariRankError, match="unknown method 'rrf'"):
        run_method("rrf", SimulatedScorer(), q, list(q.candidates), seed=0, t=0)


# -- Borda ---------------------------------------------------------------------------------------
def test_borda_points_decide():
    # points: 0 → 3+3=6, 1 → 2+1=3, 2 → 1+2=3; then raw sums 1: 0.5+0.0, 2: 0.0+0.9
    assert borda([[0, 1, 2], [0, 2, 1]], [[1.0, 0.5, 0.0], [1.0, 0.0, 0.9]]) == [0, 2, 1]


def test_borda_ties_by_summed_raw_scores():
    # points tie (0: 3+2, 1: 2+3); summed raw scores 0: 1.0+0.5, 1: 0.5+2.0 → 1 first
    assert borda([[0, 1, 2], [1, 0, 2]], [[1.0, 0.5, 0.0], [0.5, 2.0, 0.0]]) == [1, 0, 2]


def test_borda_ties_then_by_presented_position():
    # points tie and raw sums tie → the earlier presented position first
    assert borda([[0, 1, 2], [1, 0, 2]], [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]]) == [0, 1, 2]
    assert borda([[1, 0, 2], [0, 1, 2]], [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0]]) == [0, 1, 2]


def test_bootstrapping_is_borda_over_presented_and_two_shuffles():
    q = make_query(6)
    rng = np.random.default_rng(0)
    table = {}

    def fn(ids):  # arbitrary but fixed per order; deliberately order-dependent, with ties
        key = tuple(ids)
        if key not in table:
            table[key] = list(rng.integers(0, 3, size=len(ids)).astype(float))
        return table[key]

    scorer = Scripted(fn)
    presented = [q.candidates[i] for i in draw_order(6, 0, q.query_id, 2)]
    res = run_method("bootstrapping", scorer, q, presented, seed=11, t=2)
    # recompute by hand
    k = 6
    points = np.zeros(k)
    sums = np.zeros(k)
    for j in range(3):
        order = shuffle_positions(k, 11, q.query_id, 2, j)
        assert scorer.calls[j] == [presented[i].item_id for i in order]
        sc = table[tuple(scorer.calls[j])]
        for r, pos in enumerate(rank_by_scores(sc)):
            points[order[pos]] += k - r
        for pos, i in enumerate(order):
            sums[i] += sc[pos]
    want = sorted(range(k), key=lambda i: (-points[i], -sums[i], i))
    assert res.output == [presented[i].item_id for i in want]
    assert res.passes == 3


# -- presented orders ----------------------------------------------------------------------------
def test_orders_are_seeded_distinct_from_retrieval_order_and_stable():
    a = presented_orders("u5", 6, 20, seed=3)
    b = presented_orders("u5", 6, 20, seed=3)
    assert a == b
    assert all(o.positions != tuple(range(6)) for o in a)
    assert [o.t for o in a] == list(range(20)) and [o.key for o in a] == list(range(20))
    assert len({o.positions for o in a}) > 10
    assert presented_orders("u6", 6, 20, seed=3) != a
    assert presented_orders("u5", 6, 20, seed=4) != a
    # order t does not depend on M
    assert presented_orders("u5", 6, 5, seed=3) == a[:5]


def test_orders_small_k_and_noise_floor():
    assert [o.positions for o in presented_orders("u1", 1, 3, seed=0)] == [(0,)] * 3  # K = 1: the only order
    assert [o.positions for o in presented_orders("u1", 2, 4, seed=0)] == [(1, 0)] * 4
    nf = presented_orders("u1", 5, 4, seed=0, noise_floor=True)
    assert [o.t for o in nf] == [0, 1, 2, 3] and {o.key for o in nf} == {0}
    assert {o.positions for o in nf} == {draw_order(5, 0, "u1", 0)}


def test_stable_seed_is_not_python_hash():
    assert stable_seed(1, "u1", 2) == stable_seed("1|u1|2")
    # the same environment (this checkout first on the path) with another hash seed than this process's
    env = dict(
        os.environ,
        PYTHONHASHSEED="123" if os.environ.get("PYTHONHASHSEED") != "123" else "7",
        PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    code = "from invarirank._orders import stable_seed; print(stable_seed(1, 'u1', 2))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout) == stable_seed(1, "u1", 2)


# -- pass cache ----------------------------------------------------------------------------------
def test_pass_cache_shares_first_passes_across_methods():
    q = make_query(5)
    inner = SimulatedScorer(seed=0)
    cache = QueryPassCache(inner)
    presented = list(q.candidates)
    T = uniform(5)
    total = 0
    for name in METHODS:
        options = {"matrix": T} if name == "stella" else {}
        total += run_method(name, cache, q, presented, seed=0, t=0, **options).passes
    c = cache.counters()
    assert c["requests"] == total
    # exactly 5 hits, by hand: the presented order is scored once and reused by the other three methods (3), and
    # bootstrapping's 2 seeded shuffles are STELLA_LW's updates 1-2 (2); SGS's later steps are smaller lists
    assert c["hits"] == 5
    assert c["misses"] == inner.stats["calls"] == total - c["hits"]
    ro = cache.score(q, presented).scores
    with pytest.raises(ValueError):
        ro[0] = 1.0  # cached arrays are read-only


# -- simulated scorer ----------------------------------------------------------------------------
def test_simulated_scorer_is_deterministic_per_input_and_order_dependent():
    q = make_query(8)
    s1, s2 = SimulatedScorer(seed=4), SimulatedScorer(seed=4)
    a = s1.score(q, list(q.candidates)).scores
    assert a.dtype == np.float32
    assert np.array_equal(a, s2.score(q, list(q.candidates)).scores)
    rev = list(reversed(q.candidates))
    b = s1.score(q, rev).scores
    assert not np.array_equal(a, b[::-1])  # noise and position effect depend on the order
    none = SimulatedScorer(seed=4, bias_shape="none", noise_sd=0.0)
    assert np.array_equal(none.score(q, list(q.candidates)).scores, none.score(q, rev).scores[::-1])
    assert not np.array_equal(a, SimulatedScorer(seed=5).score(q, list(q.candidates)).scores)
    orders = np.array([np.random.default_rng(i).permutation(8) for i in range(50)])
    batch = s1.score_indices(q, q.candidates, orders)
    for r in (0, 17, 49):
        assert np.array_equal(batch[r], s1.score(q, [q.candidates[j] for j in orders[r]]).scores)
    assert s1.stats["calls"] == 2 + 50 + 3 and s1.stats["tokens_computed"] == 0
    ident = s1.identity()
    assert ident["scorer"] == "simulated" and ident["seed"] == 4 and ident["bias_shape"] == "primacy"


def test_simulated_relevance_bonus():
    q = make_query(6, truth=("2",))
    plain = SimulatedScorer(seed=1, relevance=0.0, noise_sd=0.0, bias_shape="none")
    bonus = SimulatedScorer(seed=1, relevance=2.5, noise_sd=0.0, bias_shape="none")
    d = bonus.score(q, list(q.candidates)).scores - plain.score(q, list(q.candidates)).scores
    assert np.allclose(d, [0, 0, 2.5, 0, 0, 0], atol=1e-6)


def _exposure(shape: str, k: int = 10, top: int = 3, m: int = 30, n_queries: int = 20) -> np.ndarray:
    """Share of orders whose item at presented position p lands in the zero-shot top-``top``."""
    scorer = SimulatedScorer(seed=0, bias_shape=shape, bias_strength=1.5)
    hits = np.zeros(k)
    total = 0
    for n in range(n_queries):
        q = make_query(k, qid=f"u{n}")
        for o in presented_orders(q.query_id, k, m, seed=0):
            presented = [q.candidates[i] for i in o.positions]
            out = run_method("zero_shot", scorer, q, presented, seed=0, t=o.key).output[:top]
            for p, it in enumerate(presented):
                hits[p] += it.item_id in out
            total += 1
    return hits / total


def test_simulated_bias_knob_moves_exposure_the_right_way():
    primacy, recency, u, none = (_exposure(s) for s in ("primacy", "recency", "u", "none"))
    assert primacy[:3].mean() > primacy[-3:].mean() + 0.2
    assert recency[-3:].mean() > recency[:3].mean() + 0.2
    assert u[[0, -1]].mean() > u[4:6].mean() + 0.2
    assert abs(none[:3].mean() - none[-3:].mean()) < 0.1
    assert np.isclose(primacy.sum(), 3.0)  # every order places exactly 3 items in the top-3


def test_simulated_bad_options_are_clear_errors():
    with pytest.raises(InvariRankError, match="'bias_shape' = 'sideways'"):
        SimulatedScorer(bias_shape="sideways")
    with pytest.raises(InvariRankError, match="noise_sd"):
        SimulatedScorer(noise_sd=float("nan"))


def test_simulated_scorer_does_not_import_torch():
    code = (
        "import sys, invarirank.llm._simulated, invarirank.methods, invarirank.runner; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_posterior_update_is_over_candidates_not_positions():
    # candidate 2 shown at position 0 with the model's top-1 at position 0: its row is T[0]
    T = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])
    post = posterior_update(np.full(3, 1 / 3), T, order=[2, 0, 1], top_position=0)
    assert np.allclose(post, np.array([0.2, 0.1, 0.6]) / 0.9)
