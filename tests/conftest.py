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
