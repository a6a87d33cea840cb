"""Hostile input to ``invarirank report`` (issue 14): exit 2, one error line naming the folder or file, no traceback,
and the figures' folder left as it was (see tests/support/hostile.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from invarirank.cli import main
from invarirank.data._synthetic import write_synthetic_candidates
from tests.support.hostile import expect_rejected, read_only

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("report")
    import os

    old = os.environ.get("INVARIRANK_CACHE")
    os.environ["INVARIRANK_CACHE"] = str(base / "cache")
    try:
        cands = write_synthetic_candidates(base / "c.jsonl", n_test=3, n_validation=2, k=6, seed=3)
        assert (
            main(
                [
                    "rerank",
                    "--candidates",
                    str(cands),
                    "--scorer",
                    "simulated",
                    "--m",
                    "2",
                    "--methods",
                    "zero_shot",
                    "--n-bootstrap",
                    "0",
                    "--out",
                    str(base / "run"),
                    "--no-progress",
                ]
            )
            == 0
        )
    finally:
        if old is None:
            os.environ.pop("INVARIRANK_CACHE", None)
        else:
            os.environ["INVARIRANK_CACHE"] = old
    return base / "run"


def _run(tmp_path: Path, finished: Path) -> Path:
    return Path(shutil.copytree(finished, tmp_path / "run"))


def _missing(tmp_path, finished, monkeypatch):
    return [tmp_path / "nope"], tmp_path / "nope", ["nope: run folder not found"]


def _no_metrics(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (run / "metrics.json").unlink()
    return [run], run, ["no metrics.json"]


def _metrics_malformed(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (run / "metrics.json").write_text("{")
    return [run], run, ["metrics.json", "malformed JSON"]


def _metrics_not_utf8(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (run / "metrics.json").write_bytes(b'{"a": "\xff"}')
    return [run], run, ["metrics.json", "not UTF-8"]


def _manifest_missing(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (run / "manifest.json").unlink()
    return [run], run, ["manifest.json"]


def _out_is_file(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (tmp_path / "file").write_text("x")
    return [run, "--out", tmp_path / "file"], tmp_path / "file", ["--out", "file: exists and is not a folder"]


def _out_under_file(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (tmp_path / "file").write_text("x")
    return [run, "--out", tmp_path / "file" / "figs"], tmp_path / "file", ["--out", "is a file, expected a folder"]


def _out_read_only(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (tmp_path / "ro").mkdir()
    read_only(monkeypatch, tmp_path / "ro")
    return [run, "--out", tmp_path / "ro"], tmp_path / "ro", ["--out", "ro", "not writable"]


def _cwd_read_only(tmp_path, finished, monkeypatch):
    run = _run(tmp_path, finished)
    (tmp_path / "cwd").mkdir()
    read_only(monkeypatch, tmp_path / "cwd")
    monkeypatch.chdir(tmp_path / "cwd")
    return [run], tmp_path / "cwd", ["./report", "not writable"]


def _no_runs(tmp_path, finished, monkeypatch):
    return [], None, ["the following arguments are required: RUN_DIR"]


CASES = [
    _missing,
    _no_metrics,
    _metrics_malformed,
    _metrics_not_utf8,
    _manifest_missing,
    _out_is_file,
    _out_under_file,
    _out_read_only,
    _cwd_read_only,
    _no_runs,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__.strip("_") for c in CASES])
def test_bad_run_folders_and_places(case, finished, tmp_path, capsys, monkeypatch):
    args, out, needles = case(tmp_path, finished, monkeypatch)
    expect_rejected(capsys, ["report", *args], needles, out)


def test_report_never_writes_into_a_run_folder_unless_named(finished, tmp_path, monkeypatch, capsys):
    from invarirank.cli import main

    run = _run(tmp_path, finished)
    before = sorted(p.name for p in run.iterdir())
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(run)]) == 0
    assert sorted(p.name for p in run.iterdir()) == before
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["exposure_by_position.png", "metric_vs_k.png"]
