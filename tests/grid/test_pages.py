"""Computing and rendering are two commands: ``invarirank grid`` computes a grid's runs and executes no page;
``invarirank book`` executes the pages the grid files declare (their ``pages``), computes nothing, and refuses in one
line a declared run that is not complete. Papermill is replaced by a recorder here (the slow test that executes real
pages is tests/hostile/test_places.py's relative-folders test)."""

from __future__ import annotations

from pathlib import Path

import pytest

import invarirank.grid._book as book_module
from invarirank.cli import main
from invarirank.grid import load_grid
from tests.support import ROOT
from tests.support.hostile import expect_rejected, snapshot

pytestmark = pytest.mark.usefixtures("private_cache")

_RUN = "dataset: synthetic, retriever: none, scorer: simulated, model: simulated, M: 2, n_queries: 2"
GRID = f"grid: tiny\nruns:\n  - {{name: a, K: 6, {_RUN}}}\n  - {{name: b, K: 5, {_RUN}}}\n"


def _grid(tmp_path: Path, pages: str | None = None) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(GRID + (f"pages: {pages}\n" if pages is not None else ""), encoding="utf-8")
    return path


def _rule(grid: Path) -> Path:
    rule = grid.with_name("book.yaml")
    rule.write_text(f"grids:\n  - {{file: {grid}}}\n", encoding="utf-8")
    return rule


@pytest.fixture
def recorded(monkeypatch) -> list[str]:
    """The pages ``invarirank book`` executes, by file name (none is really executed)."""
    executed: list[str] = []

    def record(source, output, parameters, **kwargs):
        executed.append(Path(output).name)
        return True

    monkeypatch.setattr(book_module, "execute_notebook", record)
    monkeypatch.setattr("invarirank.grid._notebooks.check_kernel", lambda name: None)
    return executed


def test_pages_default_to_every_run_and_a_list_keeps_the_file_order(tmp_path):
    assert load_grid(_grid(tmp_path)).pages == ["a", "b"]
    assert load_grid(_grid(tmp_path, "all")).pages == ["a", "b"]
    assert load_grid(_grid(tmp_path, "[b, a]")).pages == ["a", "b"]
    assert load_grid(_grid(tmp_path, "[b]")).pages == ["b"]
    assert load_grid(_grid(tmp_path, "[]")).pages == []


def test_grid_computes_and_executes_no_page(tmp_path, capsys, recorded, monkeypatch):
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    argv = ["grid", _grid(tmp_path), "--results-dir", results, "--work-dir", tmp_path / "work"]
    assert main([str(a) for a in argv]) == 0
    assert {p.name for p in (results / "tiny").iterdir()} == {"a", "b"}
    assert all((results / "tiny" / run / "metrics.json").is_file() for run in "ab")
    assert recorded == [] and not (ROOT / "book" / "generated" / "tiny").exists()
    assert "2 computed" in capsys.readouterr().err


def test_compute_only_is_a_deprecated_no_op(tmp_path, capsys, recorded, monkeypatch):
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    capsys.readouterr()
    argv = ["grid", _grid(tmp_path), "--results-dir", results, "--work-dir", tmp_path / "work", "--compute-only"]
    assert main([str(a) for a in argv]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("invarirank: warning:")]
    assert len(warnings) == 1 and "--compute-only is deprecated" in warnings[0] and "0.3.0" in warnings[0]
    assert (results / "tiny" / "a" / "metrics.json").is_file() and recorded == []


def test_only_refuses_a_page_name_in_one_line(tmp_path, capsys):
    argv = ["grid", _grid(tmp_path), "--results-dir", tmp_path / "results", "--only", "rerank", "--dry-run"]
    expect_rejected(capsys, argv, ["--only 'rerank'", "a page, not a run", "invarirank book"])


def test_book_executes_the_declared_pages_only(tmp_path, recorded, monkeypatch):
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    grid = _grid(tmp_path, "[b]")
    assert main([str(a) for a in ["grid", grid, "--results-dir", results, "--work-dir", tmp_path / "work"]]) == 0
    before = snapshot(results)
    argv = ["book", _rule(grid), "--results-dir", results, "--build-dir", tmp_path / "build"]
    assert main([str(a) for a in argv]) == 0
    assert recorded == ["k005-b.ipynb", "results.ipynb"]  # run a is complete but not declared: no page
    assert snapshot(results) == before  # nothing computed


def test_book_refuses_a_declared_run_that_is_missing_before_any_page(tmp_path, capsys, recorded, monkeypatch):
    monkeypatch.chdir(ROOT)
    results = tmp_path / "results"
    grid = _grid(tmp_path)
    argv = ["grid", grid, "--results-dir", results, "--work-dir", tmp_path / "work", "--only", "a"]
    assert main([str(a) for a in argv]) == 0
    (results / "tiny" / "b" / "shards" / "000").mkdir(parents=True)  # begun, not finished
    before = snapshot(results)
    argv = ["book", _rule(grid), "--results-dir", results, "--build-dir", tmp_path / "build"]
    line = expect_rejected(capsys, argv, [str(grid), "field 'pages'", "1 declared run(s) not complete", ": b;"])
    assert f"invarirank grid {grid} --only b" in line
    assert recorded == [] and snapshot(results) == before
