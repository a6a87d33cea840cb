"""``benchmarks/precision_cpu.py`` reads a run still computed shard by shard: the settings its grid declares, the rows
of its committed query shards in shard order, and one clear line when either is missing."""

from __future__ import annotations

import json

import pytest

from benchmarks.precision_cpu import _committed
from tests.support import ROOT

GRID = "configs/grid-paper-cpu.yaml"


def _shard(run, name, query_id, n):
    folder = run / "shards" / name
    folder.mkdir(parents=True)
    rows = [{"query_id": query_id, "method": "zero_shot", "permutation": i} for i in range(n)]
    (folder / "records.jsonl").write_text(json.dumps({"query_id": query_id, "rows": rows}) + "\n")
    (folder / "shard.json").write_text(json.dumps({"id": name, "query_ids": [query_id]}))
    (folder / "volatile.json").write_text("{}")


def test_a_run_in_progress_is_read_from_its_grid_and_its_shards(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = tmp_path / "qwen25-span-k25"
    _shard(run, "00001-b", "u47", 2)
    _shard(run, "00000-a", "u26", 3)
    cfg, rows = _committed(run, GRID)
    assert (cfg["model"], cfg["scorer"], cfg["K"], cfg["M"]) == ("qwen2.5-coder-0.5b", "span", 25, 20)
    assert [r["query_id"] for r in rows] == ["u26"] * 3 + ["u47"] * 2  # shard order, not file-system order


def test_what_is_missing_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = tmp_path / "qwen25-span-k25"
    run.mkdir()
    with pytest.raises(SystemExit, match="no manifest.json .* name its grid file with --grid"):
        _committed(run, None)
    with pytest.raises(SystemExit, match=r"no committed query shard \(shards/\*/records.jsonl\)"):
        _committed(run, GRID)
    with pytest.raises(SystemExit, match="declares no run named 'elsewhere'"):
        _committed(tmp_path / "elsewhere", GRID)
