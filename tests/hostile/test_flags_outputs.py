"""Hostile input, round 4 (issue 39), the command line: F4 settings checked before the first pass (eval_ks in flags,
config files and grids), F6 contradictory flags, F9 reports and outputs, F10 resources (a local Ray's CPUs, thread
counts), F11 wrong records (cache_dir in the manifest, a file named run.json). One row per case: exit 2 with one line
naming the input and nothing left behind (tests/support/hostile.py), or the right answer."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from invarirank.errors import InvariRankError
from tests.support import ROOT
from tests.support.hostile import expect_rejected
from tests.support.hostile import rerank_argv as _rerank

pytestmark = pytest.mark.usefixtures("private_cache")


def _cands(tmp_path: Path) -> Path:
    path = tmp_path / "cands.jsonl"
    qs = synthetic_queries(n_test=3, n_validation=2, k=6, seed=1)
    path.write_text("".join(json.dumps(query_to_json(q)) + "\n" for q in qs), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- F4 checked before the first pass
EVAL_KS = [("empty", ""), ("comma", ","), ("blank", " ")]


@pytest.mark.parametrize("case,value", EVAL_KS, ids=[c[0] for c in EVAL_KS])
def test_a_bad_eval_ks_flag_is_refused_before_the_first_pass(tmp_path, capsys, case, value):
    out = tmp_path / "run"
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, "--eval-ks", value), ["'eval_ks'"], out=out)
    assert not out.exists()


def test_an_empty_eval_ks_in_a_config_file_is_refused_before_the_first_pass(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("eval_ks: []\n", encoding="utf-8")
    out = tmp_path / "run"
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, "--config", config), [str(config), "'eval_ks'"], out=out)
    # the corrected command then runs from a clean folder
    assert main([str(a) for a in _rerank(_cands(tmp_path), out)]) == 0


def _grid(tmp_path: Path, fields: str = "") -> list:
    """``invarirank grid`` of a one-run synthetic grid (``fields`` added to its entry) into ``tmp_path``."""
    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid: g\nruns:\n  - {dataset: synthetic, scorer: simulated, retriever: none, M: 2, n_queries: 2, K: 6"
        f"{fields}}}\n",
        encoding="utf-8",
    )
    return ["grid", grid, "--results-dir", tmp_path / "results", "--work-dir", tmp_path / "work"]


def test_an_empty_eval_ks_in_a_grid_is_refused_before_anything_runs(tmp_path, capsys):
    expect_rejected(capsys, _grid(tmp_path, ", eval_ks: []"), ["'eval_ks'"], out=tmp_path / "results")
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").rglob("observations*"))


def test_a_missing_jupyter_kernel_is_found_before_the_book_executes_a_page(tmp_path, capsys):
    rule = tmp_path / "book.yaml"
    rule.write_text(f"grids:\n  - {{file: {ROOT / 'configs' / 'grid-default.yaml'}}}\n", encoding="utf-8")
    argv = ["book", rule, "--build-dir", tmp_path / "b", "--kernel", "no-such-kernel"]
    expect_rejected(capsys, argv, ["--kernel 'no-such-kernel'"])
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").rglob("*.ipynb"))


@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
def test_an_exposure_cut_off_at_the_files_own_k_is_refused_before_the_first_pass(tmp_path, capsys, dry):
    """A candidates file's lists set K only when read (no --k): the merge's evaluate refused exposure_k = K after
    every pass, leaving a half-run; now the run and its dry run refuse it before any."""
    out = tmp_path / "run"
    argv = _rerank(_cands(tmp_path), out, "--exposure-k", "6", *(["--dry-run"] if dry else []))
    expect_rejected(capsys, argv, ["setting 'exposure_k' 6", "K = 6"], out=out)
    assert not out.exists()


# ------------------------------------------------------------------------------- F6 contradictory flags
CONTRADICTIONS = [
    ("candidates-and-raw-dir", ["--raw-dir", "raw"], ["'candidates'", "'raw_dir'", "contradict"]),
    ("candidates-and-data-dir", ["--data-dir", "prepared"], ["'candidates'", "'data_dir'"]),
    ("candidates-and-retriever", ["--retriever", "als"], ["'retriever' = 'als'", "'candidates'"]),
    ("bench-without-dry-run", ["--bench", "b.json"], ["--bench", "--dry-run"]),
    ("candidates-and-retrieval-seed", ["--retrieval-seed", "5"], ["'retrieval_seed' = 5", "'candidates'"]),
    # a Ray executor's flags on the local executor were ignored without a word
    ("address-without-ray", ["--address", "10.0.0.1:6379"], ["--address needs --executor ray"]),
    ("workers-without-ray", ["--workers", "2"], ["--workers needs --executor ray"]),
    ("cpus-per-worker-without-ray", ["--cpus-per-worker", "2"], ["--cpus-per-worker needs --executor ray"]),
    ("threads-without-ray", ["--threads-per-worker", "2"], ["--threads-per-worker needs --executor ray"]),
    ("connect-timeout-without-address", ["--executor", "ray", "--connect-timeout", "3"], ["--connect-timeout needs"]),
    ("dry-run-workers-without-ray", ["--dry-run", "--workers", "2"], ["--workers needs --executor ray"]),
]


@pytest.mark.parametrize("case,extra,needles", CONTRADICTIONS, ids=[c[0] for c in CONTRADICTIONS])
def test_contradictory_flags_are_refused(tmp_path, capsys, case, extra, needles):
    out = tmp_path / "run"
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, *extra), needles, out=out)


def test_a_dry_run_refuses_the_out_the_real_run_refuses(tmp_path, capsys):
    cands = _cands(tmp_path)
    expect_rejected(capsys, _rerank(cands, cands, "--dry-run"), ["--out", "not a folder"], out=cands)


# ------------------------------------------------------------------------------- F9 reports and outputs
def _observations(tmp_path: Path) -> Path:
    assert main([str(a) for a in _rerank(_cands(tmp_path), tmp_path / "run")]) == 0
    obs = tmp_path / "obs.jsonl"
    shutil.copy(tmp_path / "run" / "observations.jsonl", obs)
    return obs


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_evaluate_onto_a_full_device_is_one_line(tmp_path, capsys):
    obs = _observations(tmp_path)
    expect_rejected(capsys, ["evaluate", obs, "--output", "/dev/full", "--bootstrap", "0"], ["/dev/full", "space"])


def test_evaluate_from_standard_input_says_it_is_not_supported(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    expect_rejected(capsys, ["evaluate", "-"], ["'-'", "standard input is not supported"])


def test_an_observations_file_named_run_json_does_not_mark_its_own_folder(tmp_path, capsys):
    obs = _observations(tmp_path)
    (tmp_path / "mine").mkdir()
    named = tmp_path / "mine" / "run.json"
    shutil.copy(obs, named)
    assert main(["evaluate", str(named), "--bootstrap", "0"]) == 0
    assert json.loads((tmp_path / "mine" / "metrics.json").read_text())["methods"]


def _spoilt_run(tmp_path: Path, spoil) -> Path:
    _observations(tmp_path)
    path = tmp_path / "run" / "metrics.json"
    metrics = json.loads(path.read_text())
    spoil(metrics)
    path.write_text(json.dumps(metrics), encoding="utf-8")  # (json writes NaN as NaN)
    return tmp_path / "run"


REPORTS = [
    (
        "nan",
        lambda m: m["methods"]["zero_shot"]["overall"].__setitem__("hr@1", float("nan")),
        ["'overall.hr@1'", "nan"],
    ),
    ("text", lambda m: m["methods"]["zero_shot"]["overall"].__setitem__("ppi", "0.3"), ["'overall.ppi'", "'0.3'"]),
    (
        "another-tools-methods",
        lambda m: m.__setitem__("methods", {"rank_gpt": m["methods"]["zero_shot"]}),
        ["'rank_gpt'", "not the run's"],
    ),
]


@pytest.mark.parametrize("case,spoil,needles", REPORTS, ids=[c[0] for c in REPORTS])
def test_report_refuses_metrics_that_are_not_the_evaluators(tmp_path, capsys, case, spoil, needles):
    run = _spoilt_run(tmp_path, spoil)
    out = tmp_path / "report"
    expect_rejected(capsys, ["report", run, "--out", out], ["metrics.json", *needles], out=out)


def test_report_refuses_an_empty_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = _spoilt_run(tmp_path, lambda m: None)
    expect_rejected(capsys, ["report", run, "--out", ""], ["--out ''"], out=tmp_path / "report")


# ------------------------------------------------------------------------------- F10 resources
def test_a_local_ray_never_gets_more_cpus_than_the_machine(capsys):
    from invarirank._limits import local_ray_cpus

    assert local_ray_cpus(40, 1, machine=2) == (2, 2)  # 40 workers on 2 cores: 2 workers
    assert local_ray_cpus(1000, 0.5, machine=2) == (2, 4)
    assert "a local Ray starts 4 workers" in capsys.readouterr().err
    assert local_ray_cpus(None, 1, machine=8) == (8, None)
    assert local_ray_cpus(3, 2, machine=8) == (6, 3)  # fits: unchanged
    with pytest.raises(InvariRankError, match="--cpus-per-worker 4: more than the 2 CPUs"):
        local_ray_cpus(1, 4, machine=2)


RESOURCES = [
    ("threads-per-worker-absurd", ["--executor", "ray", "--threads-per-worker", "100000"], ["--threads-per-worker"]),
]


@pytest.mark.parametrize("case,extra,needles", RESOURCES, ids=[c[0] for c in RESOURCES])
def test_resource_flags_beyond_the_machine_are_refused(tmp_path, capsys, case, extra, needles):
    out = tmp_path / "run"
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, *extra), needles, out=out)


def test_a_thread_count_far_above_the_machine_is_refused_before_torch_loads(monkeypatch):
    from invarirank.llm.models import set_threads

    monkeypatch.setenv("INVARIRANK_THREADS", "100000")
    with pytest.raises(InvariRankError, match="INVARIRANK_THREADS= 100000: more than 4 threads per CPU"):
        set_threads()


# ------------------------------------------------------------------------------- F11 wrong records
def test_a_relative_cache_dir_gives_the_same_manifest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cands = _cands(tmp_path)
    assert main([str(a) for a in _rerank(cands, tmp_path / "a", "--cache-dir", "cache")]) == 0
    assert main([str(a) for a in _rerank(cands, tmp_path / "b", "--cache-dir", tmp_path / "cache")]) == 0
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


# ------------------------------------------------------------------------------- F7 settings that are not Unicode
def test_a_lone_surrogate_in_a_config_file_is_refused_before_the_first_pass(tmp_path, capsys):
    """A YAML "\\ud800" escape in a setting ended in a UnicodeEncodeError traceback when the fingerprint or the
    manifest was written; a flag that is not UTF-8 reaches Python as surrogates too."""
    config = tmp_path / "run.yaml"
    config.write_text('model: "a\\ud800"\n', encoding="utf-8")
    out = tmp_path / "run"
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, "--config", config), [str(config), "'model'", "Unicode"])
    assert not out.exists()
    expect_rejected(capsys, _rerank(_cands(tmp_path), out, "--dataset", "\udced\udca0"), ["'dataset'", "Unicode"])
    assert not out.exists()


def test_a_lone_surrogate_in_a_grid_is_refused_before_anything_runs(tmp_path, capsys):
    """The grid's run computed in full and failed writing its manifest."""
    argv = _grid(tmp_path, ', label: "x\\ud800"')
    expect_rejected(capsys, argv, ["runs[0]", "'label'", "Unicode"], out=tmp_path / "results")
    assert not (tmp_path / "work").exists()
