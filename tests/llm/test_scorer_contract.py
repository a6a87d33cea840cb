"""The scorer contract, run against every registered scorer kind (``SCORER_KINDS``: span and choice on tiny random
models from ``invarirank.llm._testing``, the simulated one) and both pass caches (the persistent on-disk one inside
a real scorer, the per-query in-memory one of the runner around any scorer), with the checks shipped in
:mod:`invarirank.llm._testing`.

A scorer scores one presented order of a query: ``score(query, presented).scores[i]`` belongs to ``presented[i]``
(0-based input position; higher = preferred); it is deterministic, declares the ``BatchScorer`` members, and
``score_batch`` / ``score_requests`` (across queries) equal scoring each request alone. A new scorer kind is tested
by being registered."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.llm._testing import (
    check_aligned_under_permutation,
    check_declares_batching,
    check_deterministic,
    check_prefix_stable,
    check_requests_across_queries,
    check_scorer,
    toy_query,
)
from invarirank.llm.factory import SCORER_KINDS, make_scorer
from invarirank.methods import QueryPassCache, ScoreOnly, as_batch_scorer, batch_size_of
from invarirank.types import ScoreResult

CACHES = ("no cache", "on-disk pass cache", "per-query pass cache")
#: real scorers on the CPU: float32, but a batch of rows may differ from a row alone in the last bits
REAL_ATOL = 1e-4


@pytest.fixture(scope="module")
def query():
    return toy_query(k=5, history=6, seed=4)


@pytest.fixture(scope="module")
def other_query():
    return toy_query(k=5, history=3, seed=9, query_id="u9")


@pytest.fixture(scope="module")
def tiny_lm():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from invarirank.llm._testing import tiny_model, train_tokenizer

    return tiny_model("llama", train_tokenizer("bytelevel"), seed=5)


def _factory(kind, cache, request, tmp_path, **options):
    """A function building a fresh scorer of ``kind`` behind ``cache`` (all on the same tiny model)."""
    if kind == "simulated":

        def base():
            return make_scorer("simulated", seed=3, **{"bias_strength": 1.5, **options})
    else:
        lm = request.getfixturevalue("tiny_lm")
        on_disk = cache == "on-disk pass cache"

        def base():
            return make_scorer(kind, lm, seed=3, cache_dir=tmp_path if on_disk else None, pass_cache=on_disk, **options)

    if cache == "per-query pass cache":
        return lambda: QueryPassCache(base())
    return base


PARAMS = [
    (kind, cache)
    for kind in SCORER_KINDS
    for cache in CACHES
    if not (kind == "simulated" and cache == "on-disk pass cache")
]


@pytest.fixture(params=PARAMS, ids=lambda p: f"{p[0]}-{p[1].replace(' ', '-')}")
def setup(request, tmp_path):
    kind, cache = request.param
    atol = 0.0 if kind == "simulated" else REAL_ATOL
    return kind, _factory(kind, cache, request, tmp_path), atol


def test_declares_the_batch_scorer_members(setup):
    kind, fresh, _ = setup
    check_declares_batching(fresh())


def test_deterministic(setup, query):
    check_deterministic(setup[1](), query)


def test_scores_follow_the_slots_under_permutations(setup, query):
    _, fresh, atol = setup
    check_aligned_under_permutation(fresh(), fresh, query, atol=atol)


def test_score_requests_across_two_queries_equals_each_alone(setup, query, other_query):
    _, fresh, atol = setup
    check_requests_across_queries(fresh(), fresh, [query, other_query], atol=atol)


@pytest.mark.parametrize("cache", ["no cache", "per-query pass cache"])
@pytest.mark.parametrize("kind", [k for k in SCORER_KINDS if k != "simulated"])
def test_batched_real_scorers_across_queries(kind, cache, request, tmp_path, query, other_query):
    """Batches of several rows, per prefix and packed across two queries by a token budget (mixed prefixes in
    one forward), against each request alone."""
    for options in ({"batch_size": 3}, {"batch_size": 3, "max_batch_tokens": 4096}):
        fresh = _factory(kind, cache, request, tmp_path, **options)
        scorer = fresh()
        assert scorer.batch_size == 3
        alone = _factory(kind, "no cache", request, tmp_path)
        check_requests_across_queries(scorer, alone, [query, other_query], atol=REAL_ATOL)
        check_aligned_under_permutation(scorer, alone, query, atol=REAL_ATOL)
        assert scorer.stats["forward_passes"] < 2 * 3 * 2  # rows were batched


def test_span_scores_read_only_the_prompt_up_to_their_slot(request, tmp_path, query):
    check_prefix_stable(_factory("span", "no cache", request, tmp_path)(), query, atol=REAL_ATOL)


def test_a_position_free_scorer_scores_follow_their_candidates(query, other_query):
    """The simulated scorer without position effect or order noise scores a candidate the same in every slot:
    through the per-query cache and the plain-scorer adapter, each score must follow its candidate."""

    def fresh():
        return make_scorer("simulated", seed=3, bias_strength=0.0, noise_sd=0.0)

    for wrap in (lambda s: s, QueryPassCache, ScoreOnly, lambda s: QueryPassCache(ScoreOnly(s))):
        check_aligned_under_permutation(wrap(fresh()), fresh, query, position_free=True)
        check_requests_across_queries(wrap(fresh()), fresh, [query, other_query])


class _SlotScorer:
    """A plain scorer (``score``, ``identity``, ``name`` only): slot i scores -i."""

    name = "slots"

    def score(self, query, presented):
        return ScoreResult(-np.arange(len(presented), dtype=np.float32), 0, False)

    def identity(self):
        return {"scorer": "slots"}


class _Shifted(_SlotScorer):
    """A broken scorer: scores each candidate by its id but hands the scores back one slot off."""

    def score(self, query, presented):
        return ScoreResult(np.roll(np.array([float(it.item_id) for it in presented], dtype=np.float32), 1), 0, False)


class _SetKeyedCache(QueryPassCache):
    """A broken cache: keyed on the candidate set, so a permutation gets the scores of another order."""

    def score_requests(self, requests):
        out = []
        for q, o in requests:
            key = (q.query_id, frozenset(it.item_id for it in o))
            if key not in self._store:
                self._store[key] = np.asarray(self.scorer.score(q, o).scores)
            out.append(ScoreResult(self._store[key], 0, False))
        return out


def test_check_scorer_runs_every_check_on_a_plain_scorer(query, other_query):
    """What a new scorer kind gets: a plain ``score``-only scorer passes once adapted, position-free."""
    check_scorer(lambda: ScoreOnly(_SlotScorer()), [query, other_query])
    with pytest.raises(AssertionError, match="position-free"):
        check_scorer(lambda: ScoreOnly(_SlotScorer()), [query, other_query], position_free=True)


def test_the_contract_checks_catch_broken_scorers(query):
    """The checks can fail: a cache keyed on the candidate set, or scores returned in the wrong slots."""

    def simulated():
        return make_scorer("simulated", seed=3)

    with pytest.raises(AssertionError, match="after its permutations"):
        check_aligned_under_permutation(_SetKeyedCache(simulated()), simulated, query)
    with pytest.raises(AssertionError, match="position-free"):
        check_aligned_under_permutation(ScoreOnly(_Shifted()), _Shifted, query, position_free=True)
    with pytest.raises(AssertionError, match="the slots before"):
        check_prefix_stable(ScoreOnly(_Shifted()), query, atol=0.0)


def test_batch_sizes_are_what_the_scorer_declares(request, tmp_path):
    """A plain scorer is adapted with batch size 1; the simulated scorer computes one pass at a time; a real
    scorer on the CPU defaults to 1 and keeps a given size; the per-query cache reports the wrapped scorer's."""
    plain = _SlotScorer()
    assert isinstance(as_batch_scorer(plain), ScoreOnly) and batch_size_of(plain) == 1
    sim = make_scorer("simulated")
    assert as_batch_scorer(sim) is sim and batch_size_of(sim) == 1
    lm = request.getfixturevalue("tiny_lm")
    assert batch_size_of(make_scorer("span", lm, pass_cache=False)) == 1
    five = make_scorer("span", lm, pass_cache=False, batch_size=5)
    assert batch_size_of(five) == 5 and batch_size_of(QueryPassCache(five)) == 5
    assert QueryPassCache(five).key_identity() == five.key_identity() != five.identity()
