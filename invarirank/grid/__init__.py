"""Many runs: grid files (:mod:`._spec`), the book's notebooks through papermill (:mod:`._notebooks`), the
``invarirank grid`` path (:mod:`._book_build`: every missing run computed, with a progress bar; no page executed) and
the book's rule and pages (:mod:`._book`: ``configs/book.yaml`` lists the grids, each grid file's ``pages`` the runs
that get a page; ``invarirank book`` executes them from the complete runs, computing nothing).

Entry point: ``invarirank grid GRID.yaml`` (``python -m invarirank.grid``: a deprecated alias). A grid imports the
runner and the run store only. Conventions: K is the number of candidates, M the number of presented orders per query; a
run's name is ``<dataset>-<retriever>-<model>-<scorer>-k<K>`` unless the grid names it; every random choice is
seeded from the grid's ``seed``.
"""

from __future__ import annotations

from ..runner import ensure_run, ensure_runs, run_folder, run_status
from ..store import RESULT_FILES, complete_runs, project_root
from ._book import build_book, load_book_config
from ._book_build import compute_grid, compute_runs
from ._spec import Grid, lab_runs, load_grid, main_run, main_sweep
