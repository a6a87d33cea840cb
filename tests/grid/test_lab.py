"""Where the teaching lab reads its sweep: the given folder, the checkout's results, or (a notebook saved outside
any checkout) the sweep computed into the cache from the grid file's lab section, once."""

from __future__ import annotations

import json

import pytest

from invarirank.errors import InvariRankError
from invarirank.grid._lab import sweep_results
from tests.support import ROOT

SMALL = {
    "dataset": "synthetic",
    "retriever": "none",
    "K": 5,
    "M": 3,
    "n_queries": 4,
    "methods": ["zero_shot", "sgs"],
    "calibration_queries": 4,
    "seed": 0,
    "scorer_options": {"noise_sd": 0.3, "relevance": 1.0},
    "shapes": ["primacy"],
    "strengths": [0.0, 2.0],
}


def test_a_given_folder_or_the_checkouts_results(monkeypatch, tmp_path):
    assert sweep_results(tmp_path / "mine") == tmp_path / "mine"
    monkeypatch.chdir(ROOT / "notebooks")
    assert sweep_results(None, SMALL) == ROOT / "results"  # inside a checkout nothing is computed


def test_outside_a_checkout_without_settings_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvariRankError, match="not inside an invarirank checkout.*lab sweep settings"):
        sweep_results()
    with pytest.raises(InvariRankError, match="lab sweep settings: field 'strengths'"):
        sweep_results(None, dict(SMALL, strengths=[]))


def test_outside_a_checkout_the_sweep_is_computed_once_into_the_cache(monkeypatch, tmp_path):
    from invarirank.compendium._lab import sweep_frame

    monkeypatch.chdir(tmp_path)
    results = sweep_results(None, SMALL, cache=tmp_path / "cache")
    assert results.is_relative_to(tmp_path / "cache")
    frame = sweep_frame(results)
    assert sorted(set(frame.strength)) == [0.0, 2.0] and set(frame.method) == {"zero_shot", "sgs"}
    metrics = results / "lab" / "primacy-s2" / "metrics.json"
    before = metrics.stat().st_mtime_ns
    assert sweep_results(None, SMALL, cache=tmp_path / "cache") == results  # reused, not recomputed
    assert metrics.stat().st_mtime_ns == before
    assert json.loads(metrics.read_text())["methods"]["zero_shot"]["overall"]["ppi"] >= 0
