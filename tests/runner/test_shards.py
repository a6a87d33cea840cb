"""Shards on the local executor (no Ray): the plan, byte-identical merged files whatever the shard size, a killed
driver that resumes with the finished shards, shards of another configuration refused, the volatile file."""

from __future__ import annotations

from pathlib import Path

import pytest

from invarirank.cli import main as cli_main
from invarirank.errors import InvariRankError
from invarirank.runner import plan_shards, run_experiment
from invarirank.store import read_volatile
from tests.support.runner import Killed, kill_after, toy_candidates
from tests.support.runner import simulated_config as config

FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json")


@pytest.fixture()
def cands(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    return toy_candidates(tmp_path)


def test_plan_is_consecutive_slices_in_run_order():
    shards = plan_shards(["a", "b", "c", "d", "e"], 2)
    assert [s.query_ids for s in shards] == [("a", "b"), ("c", "d"), ("e",)]
    assert [s.index for s in shards] == [0, 1, 2] and shards[0].id.startswith("00000-")
    assert plan_shards(["a", "b", "c", "d", "e"], 2) == shards  # deterministic
    with pytest.raises(InvariRankError, match="shard_queries"):
        plan_shards(["a"], 0)


def test_a_killed_driver_resumes_with_its_finished_shards(cands, tmp_path):
    run_experiment(config(cands, tmp_path / "full"), progress=False)

    part = tmp_path / "part"
    with pytest.raises(Killed):
        run_experiment(config(cands, part, shard_queries=2), progress=False, on_shard_done=kill_after(2))
    assert not any((part / name).exists() for name in FILES)
    assert len(list((part / ".work" / "shards").iterdir())) == 2
    (part / ".work" / "shards" / ".00009-x.tmp-1").mkdir()  # a write cut short: ignored and removed
    seen = []
    res = run_experiment(config(cands, part, shard_queries=3), progress=False, on_shard_done=seen.append)
    assert res.volatile["queries_resumed_from_checkpoint"] == 4  # another shard size still counts them
    assert len(seen) == 1  # 6 queries: 4 done, one shard of 2 left
    for name in FILES:
        assert (part / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name


def test_a_shard_of_another_configuration_is_refused(cands, tmp_path, capsys):
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run_experiment(config(cands, out, shard_queries=2), progress=False, on_shard_done=kill_after(1))
    with pytest.raises(InvariRankError, match=r"shard of another configuration \(differs in: settings\)"):
        run_experiment(config(cands, out, shard_queries=2, M=5), progress=False)
    rc = cli_main(
        [
            "rerank",
            "--candidates",
            str(cands),
            "--scorer",
            "simulated",
            "--k",
            "6",
            "--m",
            "5",
            "--out",
            str(out),
            "--shard-queries",
            "2",
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "shard of another configuration" in err[0] and str(out) in err[0]


def test_shard_size_zero_and_executor_flags_are_bad_input(cands, tmp_path, capsys):
    base = [
        "rerank",
        "--candidates",
        str(cands),
        "--scorer",
        "simulated",
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
    ]
    for extra, words in (
        (["--shard-queries", "0"], "--shard-queries 0"),
        (["--executor", "spark"], "'spark'"),
        (["--workers", "2"], "--workers needs --executor ray"),
    ):
        assert cli_main(base + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("invarirank: error:") and words in err[0], err
    grid = tmp_path / "g.yaml"
    grid.write_text(f"grid: g\ndefaults: {{shard_queries: 0}}\nruns:\n  - {{candidates: {cands}, scorer: simulated}}\n")
    assert cli_main(["grid", str(grid)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "g.yaml" in err[0] and "'shard_queries' = 0" in err[0]
    assert not (tmp_path / "o").exists()


def test_volatile_facts_come_from_run_json_only(tmp_path):
    (tmp_path / "manifest.json").write_text('{"run": {"timings": {"x": 1}}, "git": {"commit": "abc"}}')
    assert read_volatile(tmp_path) == {}  # a manifest's sections are never volatile facts
    (tmp_path / "run.json").write_text('{"timings": {"x": 2}}')
    assert read_volatile(tmp_path) == {"timings": {"x": 2}}


def test_manifest_holds_no_machine_path(cands, tmp_path):
    res = run_experiment(config(cands, tmp_path / "run"), progress=False)
    man = res.manifest
    assert man["config"]["out"] is None and man["config"]["candidates"] is None  # outside the project
    assert man["data"]["candidates_file"] is None
    assert res.volatile["paths"]["config.out"] == str(tmp_path / "run")
    assert res.volatile["paths"]["data.candidates_file"] == str(cands)
    assert str(tmp_path) not in (tmp_path / "run" / "manifest.json").read_text()
