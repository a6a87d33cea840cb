"""Many runs: grid files (:mod:`.spec`), the book's notebooks through papermill (:mod:`.notebooks`), the
``invarirank grid`` path (:mod:`.book_build`: every missing run computed, with a progress bar; no page executed) and
the book's rule and pages (:mod:`.book`: ``configs/book.yaml`` lists the grids, each grid file's ``pages`` the runs
that get a page; ``invarirank book`` executes them from the complete runs, computing nothing).

Entry point: ``invarirank grid GRID.yaml`` (``python -m invarirank.grid``: a deprecated alias). A grid imports the
runner and the run store only. Conventions: K is the number of candidates, M the number of presented orders per query; a
run's name is ``<dataset>-<retriever>-<model>-<scorer>-k<K>`` unless the grid names it; every random choice is
seeded from the grid's ``seed``.
"""

from __future__ import annotations

from ..runner import ensure_run, ensure_runs, run_folder, run_status
from ..store import RESULT_FILES, complete_runs, project_root
from .book import build_book, load_book_config
from .book_build import compute_grid, compute_runs
from .spec import Grid, lab_runs, load_grid, main_run, main_sweep

__all__ = [
    "Grid",
    "load_grid",
    "lab_runs",
    "main_run",
    "main_sweep",
    "compute_grid",
    "build_book",
    "load_book_config",
    "compute_runs",
    "run_status",
    "run_folder",
    "ensure_run",
    "ensure_runs",
    "complete_runs",
    "project_root",
    "RESULT_FILES",
]
