"""The scorer contract (LensKit-style mixin), run against every registered scorer kind (``SCORER_KINDS``: span and
choice on tiny random models from ``invarirank.llm.testing``, the simulated one) and both pass caches (the
persistent on-disk one inside a real scorer, the shared in-memory one of the runner around any scorer).

A scorer scores one presented order of a query: ``score(query, presented).scores[i]`` belongs to ``presented[i]``
(0-based input position; higher = preferred); it is deterministic, its ``identity()`` is JSON, and
``score_batch`` equals repeated ``score``. A new scorer kind is tested by being registered."""

from __future__ import annotations

import json

import numpy as np
import pytest

from invarirank.llm.factory import SCORER_KINDS, make_scorer
from invarirank.llm.testing import toy_query
from invarirank.methods import PassCache, batch_size_of

CACHES = ("no cache", "on-disk pass cache", "shared pass cache")


class ScorerContract:
    """Mixin: a test class sets ``scorer`` (a fixture) and inherits these checks."""

    def orders(self, query):
        c = list(query.candidates)
        return [c, c[::-1], [c[2], c[0], c[4], c[1], c[3]]]

    def test_scores_are_aligned_with_the_presented_order(self, scorer, query):
        for presented in self.orders(query):
            scores = np.asarray(scorer.score(query, presented).scores, dtype=float)
            assert scores.shape == (len(presented),) and np.isfinite(scores).all()

    def test_deterministic(self, scorer, query):
        for presented in self.orders(query):
            a = scorer.score(query, presented).scores
            b = scorer.score(query, presented).scores
            assert np.array_equal(np.asarray(a), np.asarray(b))

    def test_identity_is_json(self, scorer):
        ident = scorer.identity()
        assert json.loads(json.dumps(ident)) == ident

    def test_score_batch_equals_repeated_score(self, scorer, query):
        orders = self.orders(query)
        one = [np.asarray(scorer.score(query, o).scores, dtype=float) for o in orders]
        if hasattr(scorer, "score_batch"):
            many = [np.asarray(r.scores, dtype=float) for r in scorer.score_batch(query, orders)]
            assert len(many) == len(one)
            for a, b in zip(one, many):
                assert np.allclose(a, b, atol=1e-4)
        assert batch_size_of(scorer) >= 1


@pytest.fixture(scope="module")
def query():
    return toy_query(k=5, history=6, seed=4)


@pytest.fixture(scope="module")
def tiny_lm():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from invarirank.llm.testing import tiny_model, train_tokenizer
    return tiny_model("llama", train_tokenizer("bytelevel"), seed=5)


@pytest.fixture(params=[(kind, cache) for kind in SCORER_KINDS for cache in CACHES
                        if not (kind == "simulated" and cache == "on-disk pass cache")],
                ids=lambda p: f"{p[0]}-{p[1].replace(' ', '-')}")
def scorer(request, tmp_path):
    kind, cache = request.param
    if kind == "simulated":
        base = make_scorer("simulated", seed=3, bias_strength=1.5)
    else:
        lm = request.getfixturevalue("tiny_lm")
        on_disk = cache == "on-disk pass cache"
        base = make_scorer(kind, lm, seed=3, cache_dir=tmp_path if on_disk else None, pass_cache=on_disk)
    return PassCache(base) if cache == "shared pass cache" else base


class TestEveryScorer(ScorerContract):
    """Every registered scorer kind × pass cache."""
