"""The book's rule and its pages: which grids the book renders, which one sets the main results, which runs get pages.

One small file decides it (``configs/book.yaml``, :func:`load_book_config`)::

    grids:                                   # priority order
      - {file: configs/grid-paper.yaml, main_K: 25}
      - {file: configs/grid-paper-cpu.yaml, main_K: 25}
      - {file: configs/grid-evidence.yaml}

- **Main results**: the first grid listed whose main run and K sweep (:func:`invarirank.grid.main_sweep` at its
  ``main_K``) are complete under ``results/<grid>/`` sets the results page's Table 1, Figures 1–2 and the claims
  (the choice itself is :func:`invarirank.compendium.grid_to_show`, made in the results notebook).
- **Pages**: each grid file declares which of its runs get a page (its ``pages`` field: ``all`` by default, or a
  list of run names, :func:`invarirank.grid.load_grid` checks them); :func:`book_runs` reads each one's settings
  from its own manifest. A run in progress (only ``shards/``) is left out of ``pages`` until it is committed.

:func:`build_book` executes the pages (``invarirank book``); it computes no run (``invarirank grid`` does): a declared
run that is not complete under ``results/<grid>/`` stops it, in one line naming the runs and the command that
computes them, before any page is executed.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import existing_file, read_json, read_utf8
from .._yaml_reader import load_yaml
from ..errors import InvariRankError
from ..runner import RunConfig, run_folder, slug
from ..store import RunFolder, complete_runs, project_root
from ._book_build import PageTitles, data_page_title, data_parameters, run_page_name, run_parameters
from ._notebooks import execute_notebook, fingerprint, package_files
from ._spec import Grid, load_grid, main_sweep

#: the book's rule, relative to the project root
BOOK_CONFIG = "configs/book.yaml"
_ENTRY_KEYS = {"file", "main_K"}


@dataclass(frozen=True)
class BookGrid:
    """A grid the book renders: its loaded ``grid`` file and the list length ``main_K`` of its main run (None: the
    grid's first run with the most methods, at any K)."""

    grid: Grid
    main_K: int | None

    def sweep(self) -> list[RunConfig]:
        """The main run first, then its K sweep: what must be complete for this grid to set the main results."""
        return main_sweep(self.grid, self.main_K)


@dataclass(frozen=True)
class BookConfig:
    """The parsed ``configs/book.yaml``: its ``path`` and its ``grids`` in priority order."""

    path: Path
    grids: tuple[BookGrid, ...]


def load_book_config(path: str | os.PathLike | None = None, *, root: Path | None = None) -> BookConfig:
    """Read and check the book's rule (default ``<root>/configs/book.yaml``). Each entry's ``file`` is a grid file,
    relative to the project ``root`` (found from ``path`` when not given); an error is one line naming the file and
    the field."""
    if root is None:
        root = project_root(grid_file=path) if path else project_root()
    p = Path(path) if path else root / BOOK_CONFIG
    if not p.exists():
        raise InvariRankError(f"{p}: book configuration not found (it lists the grids the book shows)")
    existing_file(p, "book configuration")
    raw = load_yaml(read_utf8(p, "book configuration"), str(p))
    if not isinstance(raw, dict) or set(raw) != {"grids"}:
        raise InvariRankError(f"{p}: expected one field 'grids' (a list of {{file: GRID.yaml, main_K: K}})")
    entries = raw["grids"]
    if not isinstance(entries, list) or not entries:
        raise InvariRankError(f"{p}: field 'grids' must be a non-empty list of {{file: GRID.yaml, main_K: K}}")
    grids: list[BookGrid] = []
    for i, entry in enumerate(entries):
        where = f"{p}: grids[{i}]"
        if isinstance(entry, str):
            entry = {"file": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise InvariRankError(f"{where}: expected a mapping with 'file' (a grid file) and optional 'main_K'")
        unknown = sorted(set(entry) - _ENTRY_KEYS, key=str)
        if unknown:
            raise InvariRankError(f"{where}: unknown field {unknown[0]!r}; expected file, main_K")
        k = entry.get("main_K")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
            raise InvariRankError(f"{where}: field 'main_K' = {k!r}, expected an integer >= 2")
        file = Path(os.path.expandvars(os.path.expanduser(entry["file"])))
        try:
            grid = load_grid(file if file.is_absolute() else root / file, root=root)
        except InvariRankError as exc:
            raise InvariRankError(f"{where}: {exc}") from None
        if any(g.grid.name == grid.name for g in grids):
            raise InvariRankError(f"{where}: grid {grid.name!r} is listed twice")
        book_grid = BookGrid(grid, k)
        try:
            book_grid.sweep()
        except InvariRankError as exc:
            raise InvariRankError(f"{where}: {exc}") from None
        grids.append(book_grid)
    return BookConfig(p, tuple(grids))


def missing_pages(grid: Grid, results_dir: str | os.PathLike) -> list[str]:
    """The runs ``grid`` declares a page for (``grid.pages``) that are not complete under ``results_dir/<grid>/``
    (absent, or only ``shards/``: a run in progress), in file order."""
    done = {folder.name for folder in complete_runs(results_dir, [grid.name])}
    return [name for name in grid.pages if name not in done]


def book_runs(grid: Grid, results_dir: str | os.PathLike, root: Path | None = None) -> list[RunConfig]:
    """The runs of ``grid`` that get a page: those its file declares (``grid.pages``), each with the settings its
    own manifest under ``results_dir/<grid>/<run>/`` records (what the page shows is the committed run), its paths
    made absolute against ``root``; sorted by K, then name. Every declared run must be complete
    (:func:`missing_pages`; :class:`InvariRankError` otherwise)."""
    missing = missing_pages(grid, results_dir)
    if missing:
        raise InvariRankError(_missing_message(grid, missing, Path(results_dir)))
    out = []
    for name in grid.pages:
        manifest = read_json(Path(results_dir) / grid.name / name / RunFolder.MANIFEST)
        config = RunConfig.from_manifest(manifest).replace(grid=grid.name, name=name)
        if config.candidates is None and name in {c.run_name for c in grid.runs}:
            # a published manifest records a candidates file by its content, not its (machine) path: the page
            # reads the file the grid names, which the run's identity then checks by content
            config = config.replace(candidates=grid.run(name).candidates)
        out.append(config.with_absolute_paths(root) if root is not None else config)
    return sorted(out, key=lambda c: (c.effective_k or 0, c.run_name))


def _missing_message(grid: Grid, missing: list[str], results: Path) -> str:
    names = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    every = len(missing) == len(grid.runs)
    only = "" if every else "".join(f" --only {name}" for name in missing)
    return (
        f"{grid.path}: field 'pages': {len(missing)} declared run(s) not complete under {results / grid.name}: "
        f"{names}; the book computes nothing: compute them first (`invarirank grid {grid.path}{only}`) or take them "
        f"out of 'pages'"
    )


def build_book(
    config_path: str | os.PathLike | None = None,
    *,
    build_dir: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    work_dir: str | os.PathLike | None = None,
    force: bool = False,
    kernel: str = "python3",
    root: Path | None = None,
    titles: PageTitles | None = None,
) -> dict[str, Any]:
    """Execute the book's pages for every grid of the book's rule (:func:`load_book_config`): a page per run the
    grid file declares (``<build>/<grid>/rerank/``, :func:`book_runs`), its data pages (``<build>/<grid>/data/``,
    one per data set of those runs) and the results page once (``<build>/results.ipynb``; it shows simulated runs
    only when a grid of the rule says ``include_simulated``). Every declared run is checked complete first: a
    missing one is an :class:`InvariRankError` before any page runs. Pages of runs no longer declared are removed,
    and so are pages left in ``<build>/rerank/`` and ``<build>/data/`` by older releases, whose ``invarirank grid``
    executed a grid's pages there (the table of contents would list those runs twice). Up-to-date pages are
    skipped (their fingerprint). Nothing is computed: returns ``{"executed": [...], "skipped": [...], "grids":
    {grid: [run, ...]}}``."""
    titles = titles or PageTitles()
    if root is None:
        root = project_root(grid_file=config_path) if config_path else project_root()
    book = load_book_config(config_path, root=root)
    pages = Path(os.path.abspath(build_dir)) if build_dir else root / "book" / "generated"
    results = Path(os.path.abspath(results_dir)) if results_dir else root / "results"
    work = Path(os.path.abspath(work_dir)) if work_dir else root / "runs"
    notebooks = root / "notebooks"
    pkg = package_files()
    summary: dict[str, Any] = {"executed": [], "skipped": [], "grids": {}}

    def execute(name: str, out: Path, params: dict[str, Any], files: list[Path], title: str | None = None) -> None:
        done = execute_notebook(
            notebooks / name,
            out,
            params,
            title=title,
            fingerprint=fingerprint(params, files=[notebooks / name, *files, *pkg]),
            force=force,
            cwd=notebooks,
            kernel=kernel,
            failed_dir=pages / "_failed",
        )
        summary["executed" if done else "skipped"].append(str(out))

    for entry in book.grids:  # every missing run refused before the first page is executed
        missing = missing_pages(entry.grid, results)
        if missing:
            raise InvariRankError(_missing_message(entry.grid, missing, results))
    for entry in book.grids:
        grid = entry.grid
        runs = book_runs(grid, results, root)
        summary["grids"][grid.name] = [c.run_name for c in runs]
        keep: list[Path] = []
        labels = {c.data_label for c in runs}  # a data page only for a data set with a page (it reads raw files)
        for data in (d for d in grid.data if (d.get("label") or d["dataset"]) in labels):
            out = pages / grid.name / "data" / f"{slug(data.get('label') or data['dataset'])}.ipynb"
            keep.append(out)
            params = data_parameters(data, grid, root)
            title = data_page_title(titles.dataset(data.get("label") or data["dataset"]), params["K_values"])
            execute("data.ipynb", out, params, [], title=title)
        for config in runs:
            out = pages / grid.name / "rerank" / run_page_name(config)
            keep.append(out)
            folder = RunFolder(run_folder(config, results))
            files = [folder.file(f) for f in (RunFolder.MANIFEST, RunFolder.METRICS)]
            execute("rerank.ipynb", out, run_parameters(config, results, work), files, title=titles.run(config))
        for stale in sorted((pages / grid.name).glob("*/*.ipynb")):  # pages of runs no longer declared
            if stale not in keep:
                print(f"book: removing {stale} (its run is no longer among {grid.path.name}'s pages)", file=sys.stderr)
                stale.unlink()
    for stale in sorted([*pages.glob("rerank/*.ipynb"), *pages.glob("data/*.ipynb")]):
        # an older release's `invarirank grid FILE` wrote these; the book's pages are under <build>/<grid>/
        print(f"book: removing {stale} (a single grid's page; the book's are under <build>/<grid>/)", file=sys.stderr)
        stale.unlink()
    params = {
        "grid": None,
        "results_dir": str(results),
        "book_config": str(book.path.resolve()),
        "paper_table": str(root / "book" / "data" / "paper_table1.csv"),
        "include_simulated": any(g.grid.raw.get("include_simulated", False) for g in book.grids),
    }
    run_files = [RunFolder(d).file(f) for d in complete_runs(results) for f in (RunFolder.METRICS, RunFolder.MANIFEST)]
    run_files += sorted(results.glob("*/*/shards/*/shard.json"))  # its sentence counts committed shards
    grid_files = [book.path, *(g.grid.path for g in book.grids)]
    execute("results.ipynb", pages / "results.ipynb", params, [*grid_files, Path(params["paper_table"]), *run_files])
    return summary
