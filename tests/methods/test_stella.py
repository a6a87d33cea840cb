"""STELLA_LW: the hand-computed update, early stopping, fallback, ranking ties and calibration (+ its cache)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from invarirank.errors import InvariRankError
from invarirank.llm._simulated import SimulatedScorer
from invarirank.methods import run_method
from invarirank.methods._common import as_batch_scorer
from invarirank.methods._stella_calibration import (
    calibration_counts,
    calibration_key,
    calibration_need,
    calibration_pass_count,
    load_or_calibrate,
    select_calibration_queries,
)
from invarirank.methods.stella import calibrate, entropy, posterior_update
from invarirank.types import Item, Query, ScoreResult

T_HAND = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.1, 0.1, 0.8]])


class ByItem:
    """A position-blind scorer: fixed score per item id; counts calls."""

    name = "by-item"

    def __init__(self, utility):
        self.utility = utility
        self.calls = 0

    def identity(self):
        return {"scorer": "by-item", "utility": self.utility}

    def score(self, query, presented):
        self.calls += 1
        return ScoreResult(np.array([self.utility[it.item_id] for it in presented], dtype=np.float32))


def abc(truth=("a",)) -> Query:
    return Query("q1", "1", (), tuple(Item(x, x.upper()) for x in "abc"), truth)


def test_hand_update_posterior_entropy_and_output():
    post = posterior_update(np.full(3, 1 / 3), T_HAND, [0, 1, 2], top_position=2)
    assert np.allclose(post, [1 / 6, 1 / 6, 2 / 3])
    assert entropy(post) == pytest.approx(0.867563, abs=1e-6)
    # the same update through the method: presented abc, the model's top-1 is c
    q = abc()
    scorer = ByItem({"a": 0.0, "b": 0.0, "c": 1.0})
    res = run_method("stella", scorer, q, list(q.candidates), seed=0, t=0, matrix=T_HAND, max_updates=1)
    assert res.output == ["c", "a", "b"]  # a, b tie at 1/6: the raw rank (ties → earlier position) decides
    assert res.passes == 1 and scorer.calls == 1
    assert res.scores == [0.0, 0.0, 1.0]


def test_posterior_ties_follow_the_raw_rank_not_the_presented_position():
    q = abc()
    scorer = ByItem({"a": 0.0, "b": 0.5, "c": 1.0})  # raw ranking c, b, a
    res = run_method("stella", scorer, q, list(q.candidates), seed=0, t=0, matrix=T_HAND, max_updates=1)
    assert res.output == ["c", "b", "a"]


def test_uniform_matrix_stops_after_exactly_four_calls_and_falls_back_to_raw_ranking():
    q = abc()
    scorer = ByItem({"a": 0.2, "b": 0.9, "c": 0.5})  # raw ranking b, c, a
    res = run_method("stella", scorer, q, list(q.candidates), seed=3, t=1, matrix=np.full((3, 3), 1 / 3))
    assert scorer.calls == 4 and res.passes == 4
    assert res.output == ["b", "c", "a"]


def test_stella_runs_at_most_ten_updates_and_uses_seeded_shuffles():
    k = 8
    q = Query("q2", "2", (), tuple(Item(str(i), str(i)) for i in range(k)), ("1",))
    # a strongly informative, asymmetric matrix keeps the entropy moving
    T = np.random.default_rng(1).dirichlet(np.full(k, 0.3), size=k)
    sim = SimulatedScorer(seed=0, noise_sd=3.0)
    r1 = run_method("stella", sim, q, list(q.candidates), seed=5, t=0, matrix=T)
    r2 = run_method("stella", sim, q, list(q.candidates), seed=5, t=0, matrix=T)
    assert r1 == r2 and 4 <= r1.passes <= 10
    assert sorted(r1.output) == sorted(it.item_id for it in q.candidates)


def test_stella_shuffles_follow_the_seed():
    # a recording scorer sees the presented orders of the updates: the same seed gives the same shuffles, another
    # seed (or another presented-order index t) other shuffles; the first pass is always the given order
    k = 8
    q = Query("q3", "3", (), tuple(Item(str(i), str(i)) for i in range(k)), ("1",))
    T = np.random.default_rng(1).dirichlet(np.full(k, 0.3), size=k)

    def shuffles(seed: int, t: int = 0) -> list[list[str]]:
        seen: list[list[str]] = []
        sim = SimulatedScorer(seed=0, noise_sd=3.0)

        class Recording:
            def score(self, query, presented):
                seen.append([it.item_id for it in presented])
                return sim.score(query, presented)

        run_method("stella", Recording(), q, list(q.candidates), seed=seed, t=t, matrix=T)
        return seen

    a = shuffles(5)
    assert a[0] == [str(i) for i in range(k)] and len(a) >= 4
    assert shuffles(5) == a
    assert shuffles(6)[1:] != a[1:]
    assert shuffles(5, t=1)[1:] != a[1:]


def test_stella_matrix_shape_must_match_k():
    q = abc()
    with pytest.raises(InvariRankError, match="K=3"):
        run_method(
            "stella", ByItem({"a": 0, "b": 0, "c": 0}), q, list(q.candidates), seed=0, t=0, matrix=np.full((4, 4), 0.25)
        )


def test_min_entropy_update_gives_the_ranking():
    # a position follower (top-1 always at position 0) and a matrix that trusts position 0: every update
    # multiplies the mass of whoever sits first by 7; recompute the whole procedure by hand
    from invarirank.methods._common import shuffle_positions

    k = 4
    q = Query("q3", "3", (), tuple(Item(str(i), str(i)) for i in range(k)), ("0",))
    T = np.full((k, k), 0.1)
    T[np.arange(k), np.arange(k)] = 0.7
    follower = SimulatedScorer(seed=0, bias_shape="primacy", bias_strength=100.0, noise_sd=0.0, utility_sd=0.0)
    res = run_method("stella", follower, q, list(q.candidates), seed=9, t=2, matrix=T)
    prior = np.full(k, 1 / k)
    hist = []
    for u in range(10):
        order = shuffle_positions(k, 9, "q3", 2, u)
        post = posterior_update(prior, T, order, 0)
        hist.append((entropy(post), post, order))
        if u >= 3 and all(abs(hist[-i][0] - hist[-i - 1][0]) <= 1e-6 for i in (1, 2, 3)):
            break
        prior = post
    assert res.passes == len(hist)
    best = min(range(len(hist)), key=lambda u: (hist[u][0], u))
    h, post, order = hist[best]
    raw_rank = {c: r for r, c in enumerate(order)}  # the follower ranks in presented order
    want = sorted(range(k), key=lambda c: (-round(math.log(post[c]), 9), raw_rank[c], c))
    assert res.output == [str(c) for c in want]
    assert math.log(k) - h > 1e-6  # informative: not the fallback


# -- calibration ----------------------------------------------------------------------------------
def _validation(n: int, k: int) -> list[Query]:
    out = []
    for j in range(n):
        cands = tuple(Item(f"{j}-{i}", f"t{i}") for i in range(k + 2))
        truth = (f"{j}-{j % k}", f"{j}-{(j + 3) % k}", "never-retrieved")
        out.append(Query(f"v{j}", str(j), (), cands, truth, split="validation"))
    out.append(Query("v-none", "x", (), tuple(Item(f"n{i}", "t") for i in range(k)), ("zz",), split="validation"))
    return out


def test_calibration_counts_start_at_one_and_follow_the_model():
    k = 5
    val = _validation(4, k)
    probe = select_calibration_queries(val, k, n_queries=150, seed=0)
    assert [q.query_id for q in probe] == ["v0", "v1", "v2", "v3"]  # v-none has no relevant candidate
    assert all(q.k == k for q in probe)  # cut to the first k
    passes = calibration_pass_count(probe, k, repeats=2)
    assert passes == sum(2 for _ in probe) * k * 2
    follower = SimulatedScorer(seed=0, bias_shape="primacy", bias_strength=100.0)
    counts = calibration_counts(follower, probe, k, repeats=2, seed=0)
    assert counts.min() >= 1 and counts.sum() == k * k + passes
    assert (counts[:, 0] == 1 + passes // k).all()  # top-1 always at position 0
    relevance_only = SimulatedScorer(seed=0, bias_shape="none", relevance=100.0, noise_sd=0.0)
    diag = calibration_counts(relevance_only, probe[:1], k, repeats=1, seed=0)
    # probe v0 has relevant items at 0 and 3; the top-1 is always one of them, wherever it sits
    assert np.trace(diag) >= k
    T = calibrate(follower, val, k, n_queries=2, repeats=1, seed=0)
    assert np.allclose(T.sum(axis=1), 1.0)


def test_calibration_sampling_is_seeded():
    val = _validation(30, 4)
    a = [q.query_id for q in select_calibration_queries(val, 4, n_queries=5, seed=1)]
    assert a == [q.query_id for q in select_calibration_queries(val, 4, n_queries=5, seed=1)]
    assert a != [q.query_id for q in select_calibration_queries(val, 4, n_queries=5, seed=2)]
    assert a == sorted(a, key=lambda x: int(x[1:]))  # kept in input order


def test_calibration_cache_is_keyed_by_model_k_and_data(tmp_path):
    val = _validation(3, 4)
    s = SimulatedScorer(seed=0)
    c1 = load_or_calibrate(s, val, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path)
    assert not c1.from_cache and s.stats["calls"] == c1.passes > 0
    c2 = load_or_calibrate(s, val, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path)
    assert c2.from_cache and s.stats["calls"] == c1.passes
    assert np.array_equal(c1.counts, c2.counts) and c1.key == c2.key
    other_model = SimulatedScorer(seed=0, bias_shape="recency")
    assert load_or_calibrate(other_model, val, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path).key != c1.key
    assert load_or_calibrate(s, val, 3, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path).key != c1.key
    probe = select_calibration_queries(val, 4, 3, 0)
    assert calibration_key(s.identity(), 4, probe[:2], 3, 1, 0) != c1.key
    assert len(list((tmp_path / "stella").glob("*.json"))) == 3


def test_calibration_need_says_what_load_or_calibrate_computes(tmp_path):
    """The dry run's count (``calibration_need``) is the passes the calibration then makes, and nothing once cached
    or recorded; it scores nothing itself."""
    val, s = _validation(3, 4), SimulatedScorer(seed=0)
    settings = dict(n_queries=3, repeats=2, seed=0)
    key_identity = as_batch_scorer(s).key_identity()
    passes, cached, probes = calibration_need(val, 4, key_identity, cache_dir=tmp_path, **settings)
    assert not cached and probes == 3 and s.stats["calls"] == 0
    cal = load_or_calibrate(s, val, 4, cache_dir=tmp_path, **settings)
    assert passes == cal.passes == s.stats["calls"] > 0
    assert calibration_need(val, 4, key_identity, cache_dir=tmp_path, **settings) == (0, True, 0)
    # a recorded calibration that this machine takes is not priced either, with an empty cache
    empty = tmp_path / "empty"
    assert calibration_need(val, 4, key_identity, cache_dir=empty, known=cal.to_record(), **settings) == (0, True, 0)


def _with_scores(queries: list[Query], bump: float) -> list[Query]:
    """The same queries with first-stage scores (``bump`` moves their last bits, as another CPU would)."""
    return [replace(q, candidate_scores=tuple(1.0 - i / 10 + bump for i in range(len(q.candidates)))) for q in queries]


def test_a_recorded_calibration_is_taken_by_content_on_another_machine(tmp_path):
    """A calibration recorded with a run's shards (``to_record``) is taken on a machine with an empty cache whose
    first stage gives the same probing queries with other float scores (another cache key): no pass is computed,
    the counts are the recorded ones, and it is cached under the new key. A record of other probing queries,
    settings or scorer is ignored and the calibration computed."""
    here, there = _with_scores(_validation(3, 4), 0.0), _with_scores(_validation(3, 4), 1e-7)
    s = SimulatedScorer(seed=0)
    made = load_or_calibrate(s, here, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path / "a")
    record = made.to_record()
    assert record["identity"] == dict(as_batch_scorer(s).key_identity()) and record["probes_sha256"] == made.probes
    calls = s.stats["calls"]
    taken = load_or_calibrate(s, there, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path / "b", known=record)
    assert s.stats["calls"] == calls and taken.from_cache
    assert taken.key != made.key and np.array_equal(taken.counts, made.counts) and taken.passes == made.passes
    assert load_or_calibrate(s, there, 4, n_queries=3, repeats=1, seed=0, cache_dir=tmp_path / "b").from_cache
    other_probe = [replace(q, ground_truth=q.ground_truth[:1]) if q.query_id == "v0" else q for q in there]
    for val, repeats, scorer, known in (
        (other_probe, 1, s, record),
        (there, 2, s, record),
        (there, 1, SimulatedScorer(seed=0, bias_shape="recency"), record),
        (there, 1, s, {**record, "counts": "doctored"}),
    ):
        before = scorer.stats["calls"]
        got = load_or_calibrate(
            scorer, val, 4, n_queries=3, repeats=repeats, seed=0, cache_dir=tmp_path / "c", known=known
        )
        assert not got.from_cache and scorer.stats["calls"] > before
