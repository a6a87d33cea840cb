"""A grid run's STELLA_LW calibration is committable part by part: each part is copied into
``results/<grid>/<run>/shards/calibration-parts/`` as soon as it is journaled, so a session that ends in the middle
of the calibration leaves committed progress; a fresh clone (only the results folder, an empty cache) computes only
the missing parts and publishes the bytes of an uninterrupted run; ``grid --dry-run`` counts only the passes of the
probing queries without a committed part; a committed part of another calibration is refused."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import invarirank.runner._run as run_module
from invarirank.cli import main
from invarirank.errors import InvariRankError
from invarirank.grid import ensure_run, load_grid
from invarirank.store import RunFolder, calibration_part_files, committed_calibration_parts
from tests.support.runner import CountingExecutor, Killed

GRID = (
    "grid: t\nruns:\n  - {name: tiny, dataset: synthetic, retriever: none, model: simulated, scorer: simulated, "
    "K: 5, M: 3, n_queries: 3, methods: [zero_shot, stella], calibration_queries: 4, calibration_repeats: 2, "
    "seed: 1, n_bootstrap: 10}\n"
)
PUBLISHED = ("observations.jsonl.gz", "metrics.json", "manifest.json")


def _end_session_after_parts(monkeypatch, n: int) -> None:
    """The session ends (raises :class:`Killed`) right after its n-th calibration part is copied for committing."""
    real, seen = run_module.export_calibration_parts, [0]

    def export_then_maybe_die(work_dir, target):
        copied = real(work_dir, target)
        seen[0] += 1
        if seen[0] == n:
            raise Killed
        return copied

    monkeypatch.setattr(run_module, "export_calibration_parts", export_then_maybe_die)


@pytest.fixture()
def grid(tmp_path) -> Path:
    path = tmp_path / "grid-t.yaml"
    path.write_text(GRID, encoding="utf-8")
    return path


def _dry_run_calib(grid: Path, results: Path, capsys) -> str:
    assert main(["grid", str(grid), "--dry-run", "--results-dir", str(results)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("tiny "))
    return row.split()[-1]


def test_parts_are_committed_as_computed_and_a_fresh_clone_computes_only_the_others(
    grid, tmp_path, monkeypatch, capsys
):
    spec = load_grid(grid).run("tiny")
    results, work = tmp_path / "results", tmp_path / "runs"
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache1"))
    assert _dry_run_calib(grid, results, capsys) == str(4 * 5 * 2)  # 4 probing queries x K x repeats
    with monkeypatch.context() as mp:
        _end_session_after_parts(mp, 2)
        with pytest.raises(Killed):
            ensure_run(spec, results, work)
    target = results / "t" / "tiny"
    assert sorted(p.name for p in target.iterdir()) == ["shards"]  # never a finished run
    committed = calibration_part_files(RunFolder(target).committed_calibration_parts)
    assert list(committed) == [5] and len(committed[5]) == 2
    first = {json.loads(f.read_text())["query_id"] for f in committed[5]}
    # the dry run counts the two probing queries still to compute
    assert _dry_run_calib(grid, results, capsys) == str(2 * 5 * 2)

    # a fresh clone: the committed results folder only, no work folder, an empty cache
    clone = tmp_path / "clone"
    shutil.copytree(results, clone / "results")
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache2"))
    ex = CountingExecutor()
    folder = run_module.ensure_runs([spec], ex, results_dir=clone / "results", work_dir=clone / "runs")[0]
    assert len(ex.parts) == 2 and not first & set(ex.parts)  # only the parts not committed
    assert "committed calibration part(s)" in capsys.readouterr().err
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache3"))
    whole = ensure_run(spec, tmp_path / "r2", tmp_path / "w2")  # uninterrupted, in one session
    for name in PUBLISHED:
        assert (folder / name).read_bytes() == (whole / name).read_bytes(), name
    assert not (folder / "shards").exists()  # publishing removes the committed shards and parts


def test_a_committed_part_of_another_calibration_is_refused(grid, tmp_path, monkeypatch):
    spec = load_grid(grid).run("tiny")
    results, work = tmp_path / "results", tmp_path / "runs"
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache1"))
    with monkeypatch.context() as mp:
        _end_session_after_parts(mp, 1)
        with pytest.raises(Killed):
            ensure_run(spec, results, work)
    (part,) = calibration_part_files(RunFolder(results / "t" / "tiny").committed_calibration_parts)[5]
    record = json.loads(part.read_text())
    record["identity"] = {**record["identity"], "model": "another"}  # computed with another scorer
    part.write_text(json.dumps(record), encoding="utf-8")
    assert committed_calibration_parts(results / "t" / "tiny")[5][0]["identity"]["model"] == "another"
    shutil.rmtree(work)  # a fresh clone
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache2"))
    with pytest.raises(InvariRankError, match=re.escape("a calibration part of another run (differs in: identity)")):
        ensure_run(spec, results, work)
