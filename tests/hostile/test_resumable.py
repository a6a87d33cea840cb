"""Hostile input, round 4 (issue 39) F4: a failure at any phase after a run's first pass — a full disk at each file
a run or a grid writes, an evaluation that stops, an interrupt during the merge, a notebook whose kernel is gone —
leaves a folder that the corrected command resumes: one error line naming the target (never a hidden temporary
file), no hidden leftovers beside the run's files, the folder's lock free, and the same command then finishing with
files byte-identical to a clean run's. One row per phase."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from invarirank._locks import folder_lock
from invarirank.cli import main
from invarirank.errors import InvariRankError
from tests.support.hostile import full_disk, rerank_argv
from tests.support.runner import toy_candidates

pytestmark = pytest.mark.usefixtures("private_cache")

#: the deterministic files of a finished ``rerank --out`` folder (run.json varies by design)
RUN_FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json", "first_stage.jsonl.gz")
#: those of a published grid run
PUBLISHED = ("observations.jsonl.gz", "metrics.json", "manifest.json")


def _named(name: str) -> Callable[[Path], bool]:
    return lambda p: p.name == name


def _shard(p: Path) -> bool:
    return p.parent.name == "shards" and not p.name.startswith(".")


def _stop_evaluation(exc: BaseException):
    def inject(monkeypatch) -> None:
        import invarirank.evaluation as evaluation

        def evaluate(*args, **kwargs):
            raise exc

        monkeypatch.setattr(evaluation, "evaluate", evaluate)

    return inject


# (id, injection, expected exit code, fragments of the error line)
RERANK_PHASES = [
    ("second-shard", lambda mp: full_disk(mp, _shard, nth=2), 2, ["no space left"]),
    ("observations", lambda mp: full_disk(mp, _named("observations.jsonl")), 2, ["observations.jsonl", "no space"]),
    ("first-stage", lambda mp: full_disk(mp, _named("first_stage.jsonl.gz")), 2, ["first_stage.jsonl.gz"]),
    ("metrics", lambda mp: full_disk(mp, _named("metrics.json")), 2, ["metrics.json", "no space"]),
    ("calibration", lambda mp: full_disk(mp, _named("calibration.json")), 2, ["calibration.json", "no space"]),
    ("run-json", lambda mp: full_disk(mp, _named("run.json")), 2, ["run.json", "no space"]),
    ("manifest", lambda mp: full_disk(mp, _named("manifest.json")), 2, ["manifest.json", "no space"]),
    ("evaluation-refused", _stop_evaluation(InvariRankError("evaluate: refused here")), 2, ["refused here"]),
    ("interrupted-merge", _stop_evaluation(KeyboardInterrupt()), 130, []),
]


def _rerank(cands: Path, out: Path) -> list[str]:
    """The smallest rerank with every file a run writes: STELLA_LW (calibration.json), a candidates file
    (first_stage.jsonl.gz), bootstrap intervals and shards of two queries (later flags override earlier ones)."""
    extra = ["--methods", "zero_shot,stella", "--calibration-queries", "2", "--calibration-repeats", "1"]
    return [str(a) for a in rerank_argv(cands, out, *extra, "--n-bootstrap", "5", "--shard-queries", "2")]


def _left_resumable(folder: Path, locked: bool = True) -> None:
    """No hidden file but the lock and the resume record, no temporary shard, and (a folder a run writes under
    its lock) the lock free."""
    hidden = [p for p in folder.rglob(".*") if p.name not in (".lock", ".work")]
    assert hidden == [], hidden
    if locked:
        with folder_lock(folder):
            pass


@pytest.mark.parametrize("case,inject,code,needles", RERANK_PHASES, ids=[c[0] for c in RERANK_PHASES])
def test_a_failed_rerank_after_its_first_pass_is_resumed_by_the_same_command(
    tmp_path, capsys, monkeypatch, case, inject, code, needles
):
    cands = toy_candidates(tmp_path)
    assert main(_rerank(cands, tmp_path / "clean")) == 0
    out = tmp_path / "run"
    capsys.readouterr()
    with monkeypatch.context() as mp:
        inject(mp)
        assert main(_rerank(cands, out)) == code
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("invarirank:")]
    assert len(err) == 1 and "Traceback" not in err[0], err
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    assert "/." not in err[0].replace("/.work/", "/"), err[0]  # the target, never a hidden temporary file
    _left_resumable(out)
    assert main(_rerank(cands, out)) == 0
    for name in RUN_FILES:
        assert (out / name).read_bytes() == (tmp_path / "clean" / name).read_bytes(), name
    assert not (out / ".work").exists()


GRID = (
    "grid: g\nruns:\n  - {dataset: synthetic, scorer: simulated, retriever: none, M: 2, n_queries: 3, K: 6, "
    "methods: [zero_shot], n_bootstrap: 5, name: tiny}\n"
)


def _in_results(name: str) -> Callable[[Path], bool]:
    return lambda p: p.name == name and p.parent.name == "tiny" and p.parent.parent.parent.name == "results"


def _committed(p: Path) -> bool:
    return p.parent.name == "shards" and p.parent.parent.name == "tiny" and not p.name.startswith(".")


GRID_PHASES = [
    ("committed-shard", lambda mp: full_disk(mp, _committed, nth=2), ["no space"]),
    ("published-observations", lambda mp: full_disk(mp, _in_results("observations.jsonl.gz")), ["no space"]),
    ("published-metrics", lambda mp: full_disk(mp, _in_results("metrics.json")), ["metrics.json", "no space"]),
    ("published-run-json", lambda mp: full_disk(mp, _in_results("run.json")), ["run.json", "no space"]),
    ("published-manifest", lambda mp: full_disk(mp, _in_results("manifest.json")), ["manifest.json", "no space"]),
]


def _grid(tmp_path: Path, results: Path) -> list[str]:
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID, encoding="utf-8")
    work = results.parent / "work"
    args = ["grid", grid, "--results-dir", results, "--work-dir", work]
    return [*map(str, args), "--shard-queries", "1"]


@pytest.mark.parametrize("case,inject,needles", GRID_PHASES, ids=[c[0] for c in GRID_PHASES])
def test_a_failed_grid_after_its_first_pass_is_resumed_by_the_same_command(
    tmp_path, capsys, monkeypatch, case, inject, needles
):
    assert main(_grid(tmp_path, tmp_path / "clean" / "results")) == 0
    results = tmp_path / "failed" / "results"
    capsys.readouterr()
    with monkeypatch.context() as mp:
        inject(mp)
        assert main(_grid(tmp_path, results)) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("invarirank:")]
    assert len(err) == 1 and "Traceback" not in err[0], err
    for needle in needles:
        assert needle in err[0], (needle, err[0])
    assert "/." not in err[0].replace("/.work/", "/"), err[0]
    if (results / "g" / "tiny").exists():
        _left_resumable(results / "g" / "tiny", locked=False)
    _left_resumable(tmp_path / "failed" / "work" / "g" / "tiny")
    assert main(_grid(tmp_path, results)) == 0
    for name in PUBLISHED:
        clean = tmp_path / "clean" / "results" / "g" / "tiny" / name
        assert (results / "g" / "tiny" / name).read_bytes() == clean.read_bytes(), name
    assert sorted(p.name for p in (results / "g" / "tiny").iterdir()) == sorted([*PUBLISHED, "run.json"])


def _papermill(fail: BaseException | None):
    """papermill's execution replaced: ``fail`` raised (a kernel gone since the check), else the notebook copied."""

    def execute_notebook(source, output, **kwargs):
        if fail is not None:
            raise fail
        Path(output).write_bytes(Path(source).read_bytes())

    return execute_notebook


PAGE_PHASES = [
    ("kernel-gone", lambda mp: mp.setattr("papermill.execute_notebook", _papermill(RuntimeError("No such kernel")))),
    (
        "page-disk-full",
        lambda mp: (
            mp.setattr("papermill.execute_notebook", _papermill(None)),
            full_disk(mp, lambda p: p.suffix == ".ipynb" and p.parent.name == "pages"),
        ),
    ),
]


@pytest.mark.parametrize("case,inject", PAGE_PHASES, ids=[c[0] for c in PAGE_PHASES])
def test_a_page_that_fails_leaves_no_hidden_file_and_is_executed_again(tmp_path, monkeypatch, case, inject):
    """A book page (executed after the runs it shows are published): a failure is one error naming the page, never
    its hidden temporary notebook, and leaves no hidden file; the same call then writes the page."""
    from invarirank.errors import RunFailed
    from invarirank.grid._notebooks import execute_notebook
    from tests.support import ROOT

    page = tmp_path / "pages" / "rerank.ipynb"
    with monkeypatch.context() as mp:
        inject(mp)
        with pytest.raises((RunFailed, InvariRankError)) as err:
            execute_notebook(ROOT / "notebooks" / "rerank.ipynb", page, {}, failed_dir=tmp_path / "failed")
    assert "/." not in str(err.value), str(err.value)
    assert not page.exists() and not [p for p in (tmp_path / "pages").rglob(".*")]
    monkeypatch.setattr("papermill.execute_notebook", _papermill(None))
    assert execute_notebook(ROOT / "notebooks" / "rerank.ipynb", page, {}, failed_dir=tmp_path / "failed")
    assert page.is_file()
