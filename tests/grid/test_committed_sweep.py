"""The default grid's committed K sweep is a real sweep: at least two list lengths of the same
setting are committed as finished runs, and they rerank exactly the same, non-empty set of users (queries sampled
once among those kept at the sweep's smallest K). ``tests/book/test_results.py`` checks that finished runs agree;
this test fails when there is nothing to compare."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from invarirank.grid import load_grid, run_folder, run_status
from tests.support import ROOT

pytestmark = pytest.mark.committed

RESULTS = ROOT / "results"


def _observed_ids(folder: Path) -> set[str]:
    with gzip.open(folder / "observations.jsonl.gz", "rt", encoding="utf-8") as f:
        return {json.loads(line)["query_id"] for line in f if line.strip()}


def test_default_k_sweep_has_two_committed_runs_on_the_same_queries():
    grid = load_grid(ROOT / "configs" / "grid-default.yaml")
    # the sweep: runs of the main run's setting (span scorer) that differ in K
    sweep = [c for c in grid.runs if c.scorer == "span"]
    ks = {c.effective_k for c in sweep}
    assert len(ks) >= 2, f"configs/grid-default.yaml: expected a K sweep (>= 2 list lengths), got K={sorted(ks)}"
    ids: dict[int, list[str]] = {}
    for config in sweep:
        folder = RESULTS / config.grid / config.run_name
        assert run_status(config, run_folder(config, RESULTS)) == "complete", (
            f"{folder}: not a finished run of the grid's settings"
        )
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        ids[config.effective_k] = list(manifest["queries"]["ids"])
        assert ids[config.effective_k] and set(ids[config.effective_k]) == _observed_ids(folder), folder
    assert len(ids) >= 2
    first = next(iter(ids.values()))
    assert all(v == first for v in ids.values()), ids
