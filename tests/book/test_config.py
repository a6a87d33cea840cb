"""The book's build configuration: every notebook that `make book` executes with papermill beforehand is excluded
from a second execution by jupyter-book (myst-nb matches ``execute.exclude_patterns`` against the notebook's path
with :meth:`pathlib.PurePosixPath.match`, from the right, one ``*`` per path component)."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import yaml

from tests.support import ROOT


def _excluded(path: Path, patterns: list[str]) -> bool:
    return any(PurePosixPath(path.as_posix()).match(p) for p in patterns)


def test_papermill_pages_are_not_executed_again_by_jupyter_book():
    from invarirank.grid.book import load_book_config

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


def test_make_book_runs_each_grid_once_and_lists_no_run_by_hand():
    """`make book` computes the default grid once (no pages), then `invarirank book` writes every grid's pages from
    the rule file; which runs get pages is never a Makefile list (tests/grid/test_book_rule.py checks that every
    page's run is committed complete)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^book:.*?(?=^\S)", makefile, re.M | re.S)
    assert recipe, "no book target"
    assert recipe.group(0).count("$(INVARIRANK) book") == 1 and "$(INVARIRANK) grid" not in recipe.group(0)
    grid = re.search(r"^grid:.*?(?=^\S)", makefile, re.M | re.S)
    assert grid and grid.group(0).count("$(INVARIRANK) grid") == 1 and "--compute-only" in grid.group(0)
