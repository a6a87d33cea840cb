"""The book's build configuration: every notebook that `make book` executes with papermill beforehand is excluded
from a second execution by jupyter-book (myst-nb matches ``execute.exclude_patterns`` against the notebook's path
with :meth:`pathlib.PurePosixPath.match`, from the right, one ``*`` per path component)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml

from tests.support import ROOT


def _excluded(path: Path, patterns: list[str]) -> bool:
    return any(PurePosixPath(path.as_posix()).match(p) for p in patterns)


def test_papermill_pages_are_not_executed_again_by_jupyter_book():
    from invarirank.grid._book import load_book_config

    patterns = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["execute"]["exclude_patterns"]
    grids = [g.grid.name for g in load_book_config(root=ROOT).grids]
    build_dirs = ["book/generated", *(f"book/generated/{grid}" for grid in grids)]  # `invarirank book`'s folders
    assert "book/generated/evidence" in build_dirs, build_dirs
    for build in build_dirs:
        for page in ("results.ipynb", "data/ml-100k.ipynb", "rerank/smollm2-span-k10.ipynb"):
            path = ROOT / build / page
            assert _excluded(path, patterns), (str(path.relative_to(ROOT)), patterns)
    # the pages jupyter-book itself must execute stay executed
    for page in ("book/metrics.md", "book/protocol.md", "notebooks/lab.ipynb"):
        assert not _excluded(ROOT / page, patterns), page


def _dry(target: str) -> list[str]:
    """The commands ``make -n TARGET`` would run here (nothing is run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    proc = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_make_book_computes_nothing_and_renders_once():
    """`make book` on a fresh clone computes nothing: no `invarirank grid` (nor `rerank`) among its commands, one
    `invarirank book` (which executes the pages the grid files declare), then jupyter-book renders them."""
    lines = _dry("book")
    computing = [line for line in lines if re.search(r"invarirank (grid|rerank)\b", line)]
    assert not computing, computing
    book = [i for i, line in enumerate(lines) if re.search(r"invarirank book\b", line)]
    render = [i for i, line in enumerate(lines) if "jupyter-book build" in line]
    assert len(book) == 1 and len(render) == 1 and book[0] < render[0], lines


def test_make_grid_computes_one_grid_and_executes_no_page():
    lines = _dry("grid")
    grid = [line for line in lines if re.search(r"invarirank grid\b", line)]
    assert len(grid) == 1 and "configs/grid-default.yaml" in grid[0] and "--compute-only" not in grid[0], lines
    assert not [line for line in lines if re.search(r"invarirank book\b|jupyter-book|papermill", line)], lines


def test_the_virtual_environments_make_setup_builds_in_the_checkout_are_not_book_sources():
    """`make setup` builds its venvs inside the checkout (the Makefile's ``VENV`` and ``VLLM_VENV``): the book must
    not read them as sources (the vLLM venv ships Markdown files, and one of them broke `make book` on a fresh
    machine). Each venv folder named in the Makefile is a top-level entry of ``exclude_patterns``."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    venvs = re.findall(r"^(?:VENV|VLLM_VENV) \?= (\S+)$", makefile, flags=re.M)
    assert len(venvs) == 2, venvs
    patterns = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["exclude_patterns"]
    assert [v for v in venvs if v not in patterns] == []
