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
    patterns = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["execute"]["exclude_patterns"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    build_dirs = ["book/generated", *re.findall(r"--build-dir\s+(\S+)", makefile)]
    assert "book/generated/evidence" in build_dirs, build_dirs
    for build in build_dirs:
        for page in ("results.ipynb", "data/ml-100k.ipynb", "rerank/smollm2-span-k10.ipynb"):
            path = ROOT / build / page
            assert _excluded(path, patterns), (str(path.relative_to(ROOT)), patterns)
    # the pages jupyter-book itself must execute stay executed
    for page in ("book/metrics.md", "book/protocol.md", "notebooks/lab.ipynb"):
        assert not _excluded(ROOT / page, patterns), page


def test_every_run_page_make_book_writes_is_committed_complete():
    """`make book` writes the pages of the evidence and paper-cpu runs named in the Makefile and computes nothing
    for them: every one is a run of its grid, committed complete (a run still in shards would start hours of
    computing)."""
    from invarirank.grid import load_grid, run_folder
    from invarirank.runner import run_status

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = 0
    for variable, grid in (("EVIDENCE_PAGES", "evidence"), ("PAPER_CPU_PAGES", "paper-cpu")):
        line = re.search(rf"^{variable} \?=(.*)$", makefile, re.M)
        assert line, variable
        spec = load_grid(ROOT / "configs" / f"grid-{grid}.yaml")
        for run in line.group(1).split():
            config = spec.run(run).with_absolute_paths(ROOT)
            assert run_status(config, run_folder(config, ROOT / "results")) == "complete", (variable, run)
            named += 1
    assert named >= 7
