"""Shared fixtures. Query builders live in :mod:`invarirank.llm.testing` (``toy_query``, ``toy_split_queries``);
the data layer's raw-file writers in ``tests/data_support.py``."""

from __future__ import annotations

import pytest


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    """A private ``$INVARIRANK_CACHE`` for one test (nothing it caches leaks into other tests or the user's cache).
    Modules that need it for every test say ``pytestmark = pytest.mark.usefixtures("private_cache")``."""
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    """A small finished run read back by the compendium (one per test module): the four methods on five synthetic
    queries with the simulated scorer (K = 6, M = 4, primacy bias 2.0), in seconds and without torch."""
    from invarirank import compendium
    from invarirank.runner.lab import live_run

    run = live_run("primacy", 2.0, K=6, M=4, n_queries=5, calibration_queries=4, calibration_repeats=1, seed=3,
                   out=tmp_path_factory.mktemp("simulated"), n_bootstrap=100)
    return compendium.load_run(run.path)
