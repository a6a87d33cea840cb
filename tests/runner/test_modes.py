"""Same bytes in every execution mode: one simulated run computed once query by query (the local executor's
default, one query per shard) is the reference; every other way of computing it — other shard sizes, a window of
queries in lockstep, both, a batching scorer that drives the orders in lockstep — writes the same observations,
metrics, calibration and manifest bytes. (The ray executor's case is in tests/runner/test_ray.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from invarirank._io import read_json
from invarirank.llm._simulated import SimulatedScorer
from invarirank.runner import run_experiment
from tests.methods.test_lockstep import Batching
from tests.support.runner import simulated_config as config
from tests.support.runner import toy_candidates

FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json")

#: mode → (settings, scorer factory or None)
MODES = {
    "one-query-shards": ({"shard_queries": 1}, None),
    "shards-of-4": ({"shard_queries": 4}, None),
    "window-of-4": ({"query_window": 4}, None),
    "window-3-in-shards-of-4": ({"query_window": 3, "shard_queries": 4}, None),
    "lockstep-batching-scorer": ({}, lambda: Batching(SimulatedScorer(seed=7), batch_size=8)),
}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[Path, Path, dict]:
    """The candidates file, the reference run's folder and its result (the default: query by query)."""
    base = tmp_path_factory.mktemp("modes")
    mp = pytest.MonkeyPatch()
    mp.setenv("INVARIRANK_CACHE", str(base / "cache"))
    cands = toy_candidates(base)
    res = run_experiment(config(cands, base / "reference"), progress=False)
    yield cands, base / "reference", res
    mp.undo()


@pytest.mark.parametrize("mode", list(MODES))
def test_every_execution_mode_writes_the_same_bytes(reference, tmp_path, monkeypatch, mode):
    cands, ref, ref_result = reference
    monkeypatch.setenv("INVARIRANK_CACHE", str(ref.parent / "cache"))
    settings, make_scorer = MODES[mode]
    scorer = make_scorer() if make_scorer else None
    res = run_experiment(config(cands, tmp_path / mode, **settings), progress=False, scorer=scorer)
    for name in FILES:
        assert (tmp_path / mode / name).read_bytes() == (ref / name).read_bytes(), name
    assert res.manifest["passes"] == ref_result.manifest["passes"]
    assert "shard_queries" not in res.manifest["config"] and "query_window" not in res.manifest["config"]
    vol = read_json(tmp_path / mode / "run.json")
    n = len(ref_result.manifest["queries"]["ids"])
    size = settings.get("shard_queries") or settings.get("query_window") or 1  # the local executor's default
    assert vol["execution"]["executor"] == "local" and vol["execution"]["shard_queries"] == size
    assert vol["execution"]["query_window"] == settings.get("query_window")
    assert len(vol["shards"]) == -(-n // size) and sum(s["queries"] for s in vol["shards"]) == n
    assert not (tmp_path / mode / ".work").exists()
    if scorer is not None:
        # one order asks at most 2 distinct passes a round (bootstrapping's shuffle = STELLA's update, SGS's
        # step), so calls of 8 distinct passes span the query's M = 4 orders
        assert max(scorer.batches) == 8
