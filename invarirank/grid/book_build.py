"""The ``make book`` path: compute every missing run of a grid, then execute the book's notebooks.

1. **Runs first**, on the terminal with a progress bar: every run of the grid (and of its teaching-lab sweep) that
   is not complete under ``results/<grid>/<run>/`` is computed (or resumed) through the runner
   (:func:`invarirank.runner.ensure_runs`) and published; complete runs are reused as they are.
2. **Notebooks**, into the build folder (default ``book/generated/``, which ``_toc.yml`` includes)::

       <build>/data/<dataset>.ipynb       notebooks/data.ipynb, once per data set (retrievers, Ks)
       <build>/rerank/<run>.ipynb         notebooks/rerank.ipynb, once per run: it only reads the finished run
       <build>/results.ipynb              notebooks/results.ipynb, once

   A notebook is executed again only when its fingerprint changed (:mod:`invarirank.grid.notebooks`); a failed
   one stops the build (exit status 1) with its partial output in ``<build>/_failed/``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runner import Executor, RunConfig, ensure_runs, mismatch_error, run_folder, run_status, slug
from ..store import RunFolder, complete_runs, project_root
from .notebooks import execute_notebook, fingerprint, package_files
from .spec import Grid, lab_runs, load_grid, main_run

__all__ = [
    "build",
    "compute_runs",
    "run_parameters",
    "data_parameters",
    "run_page_name",
    "PageTitles",
    "data_page_title",
    "OUTSIDE_CHECKOUT",
]


def _run_id_title(config: RunConfig) -> str:
    return f"Run {config.run_name}"


def data_page_title(name: str, ks: Sequence[int]) -> str:
    """A data page's title: the data set's name and its list lengths, in increasing order, e.g. ``MovieLens-100K at
    K = 5, 10, 15, 25: counts and the first stage's coverage`` (no ``at K`` part without list lengths)."""
    at = f" at K = {', '.join(str(k) for k in sorted(ks))}" if ks else ""
    return f"{name}{at}: counts and the first stage's coverage"


@dataclass(frozen=True)
class PageTitles:
    """How :func:`build` titles the pages it executes: ``run`` (a run → its page's title) and ``dataset`` (a data
    set's label or id → the name its data page's title gives it, :func:`data_page_title`). The grid layer knows ids
    only; ``invarirank grid`` passes the book's display names (:mod:`invarirank.compendium.titles`,
    :func:`invarirank.compendium.labels.dataset_label`)."""

    run: Callable[[RunConfig], str] = _run_id_title
    dataset: Callable[[str], str] = str


#: what to do when neither the grid file nor the working directory lies in a checkout
OUTSIDE_CHECKOUT = "a grid executes the checkout's notebooks: run it from the checkout or keep the grid file in one"


def compute_runs(
    configs: Sequence[RunConfig], results_dir: Path, work_dir: Path, executor: Executor | None = None
) -> dict[str, str]:
    """Compute and publish every run that is not complete, through :func:`invarirank.runner.ensure_runs`;
    returns ``{"<grid>/<run>": "reused" | "re-evaluated" | "ran"}`` (re-evaluated: only its metrics were
    rewritten for a newer metrics schema).

    Without ``executor`` the runs are computed by the local executor in this process; with one
    (:mod:`invarirank.runner.executors`) every missing run's shards go to its workers together. Either way there is
    one progress bar over the missing runs' queries; each finished shard is copied into
    ``results/<grid>/<run>/shards/`` as it lands, to be committed before the run is finished, and a later call
    resumes from the committed shards."""
    before = [run_status(c, run_folder(c, results_dir)) for c in configs]
    mismatched = [c for c, s in zip(configs, before) if s == "mismatch"]
    if mismatched:  # refused before anything is computed: the error names the run and what differs
        raise mismatch_error(mismatched[0], run_folder(mismatched[0], results_dir))
    todo = [c for c, s in zip(configs, before) if s != "complete"]
    done = {"complete": "reused", "old-metrics": "re-evaluated"}
    summary = {f"{c.grid}/{c.run_name}": done.get(s, "ran") for c, s in zip(configs, before)}
    print(
        f"grid: {len(configs) - len(todo)} runs complete, {len(todo)} to compute or re-evaluate",
        file=sys.stderr,
        flush=True,
    )
    if todo:
        ensure_runs(todo, executor, results_dir=results_dir, work_dir=work_dir, progress=True)
    return summary


def data_parameters(entry: dict[str, Any], grid: Grid, root: Path) -> dict[str, Any]:
    ks = entry.get("K", [])
    rets = entry.get("retrievers", entry.get("retriever", ["lightgcn"]))
    raw_dir = entry.get("raw_dir")
    return {
        "dataset": entry["dataset"],
        "label": entry.get("label"),
        "raw_dir": RunConfig(raw_dir=str(raw_dir)).with_absolute_paths(root).raw_dir if raw_dir else None,
        "retrievers": list(rets if isinstance(rets, list) else [rets]),
        "K_values": [int(k) for k in (ks if isinstance(ks, list) else [ks])],
        "seed": int(entry.get("seed", (grid.raw.get("defaults") or {}).get("seed", 42))),
    }


def run_parameters(config: RunConfig, results_dir: Path, work_dir: Path) -> dict[str, Any]:
    """Papermill parameters of ``notebooks/rerank.ipynb`` for a run: all its settings (the notebook's own
    defaults are the default grid's, not the schema's) and where runs live."""
    skip = {"out", *config.execution_fields()}
    settings = {k: v for k, v in config.to_dict().items() if k not in skip}
    return {**settings, "results_dir": str(results_dir), "work_dir": str(work_dir)}


def run_page_name(config: Any) -> str:
    """The file of a run's page under ``<build>/rerank/``: its list length first, zero-padded, then the run's name
    (``k005-smollm2-span-k5.ipynb``), so that the book's table of contents, which sorts a folder's pages by name,
    lists a grid's runs by K (by name, ``…-k25`` came before ``…-k5``). A run whose K comes from its candidates
    file (``K: null``) is named by the run alone."""
    return f"{config.run_name}.ipynb" if config.K is None else f"k{int(config.K):03d}-{config.run_name}.ipynb"


def build(
    grid_path: str | os.PathLike,
    *,
    build_dir: str | os.PathLike | None = None,
    results_dir: str | os.PathLike | None = None,
    work_dir: str | os.PathLike | None = None,
    force: bool = False,
    only: Sequence[str] = (),
    skip_results: bool = False,
    kernel: str = "python3",
    executor: Executor | None = None,
    execution: dict[str, Any] | None = None,
    root: Path | None = None,
    titles: PageTitles | None = None,
    pages_too: bool = True,
) -> dict[str, Any]:
    """Compute a grid's missing runs, then (``pages_too``) execute its notebooks (see the module docstring; the
    whole book's pages, every grid's, are :func:`invarirank.grid.book.build_book`'s job). ``only`` limits
    the work to these runs/pages (a run name, ``data`` or ``rerank``); ``executor`` computes the runs in shards
    (:func:`compute_runs`), ``execution`` overrides the runs' execution settings (``shard_queries``,
    ``query_window``), ``root`` is the project root (default: found from ``grid_path``,
    :func:`invarirank.store.project_root`), ``titles`` how the pages are titled (default: by ids); returns a summary
    of what ran."""
    titles = titles or PageTitles()
    root = root or project_root(grid_file=grid_path, instead=OUTSIDE_CHECKOUT)
    grid = load_grid(grid_path, execution=execution, root=root)
    # every path resolved once, here: the notebooks run in notebooks/ and must not read a relative one there
    pages = Path(os.path.abspath(build_dir)) if build_dir else root / "book" / "generated"
    results = Path(os.path.abspath(results_dir)) if results_dir else root / "results"
    work = Path(os.path.abspath(work_dir)) if work_dir else root / "runs"
    notebooks = root / "notebooks"
    pkg = package_files()
    selected = [c for c in grid.runs if not only or c.run_name in only or "rerank" in only]
    summary: dict[str, Any] = {
        "grid": grid.name,
        "executed": [],
        "skipped": [],
        "runs": compute_runs([*(lab_runs(grid.lab) if grid.lab else []), *selected], results, work, executor),
    }
    if not pages_too:
        return summary

    def execute(name: str, out: Path, params: dict[str, Any], files: list[Path], title: str | None = None) -> None:
        fp = fingerprint(params, files=[notebooks / name, *files, *pkg])
        done = execute_notebook(
            notebooks / name,
            out,
            params,
            title=title,
            fingerprint=fp,
            force=force,
            cwd=notebooks,
            kernel=kernel,
            failed_dir=pages / "_failed",
        )
        summary["executed" if done else "skipped"].append(str(out))

    pages.mkdir(parents=True, exist_ok=True)
    data_pages = []
    for entry in grid.data:
        out = pages / "data" / f"{slug(entry.get('label') or entry['dataset'])}.ipynb"
        data_pages.append(out)
        if not only or "data" in only:
            params = data_parameters(entry, grid, root)
            execute(
                "data.ipynb",
                out,
                params,
                [],
                title=data_page_title(titles.dataset(entry.get("label") or entry["dataset"]), params["K_values"]),
            )
    run_pages = [pages / "rerank" / run_page_name(c) for c in grid.runs]
    for config in selected:
        folder = RunFolder(run_folder(config, results))
        run_files = [folder.file(f) for f in (RunFolder.MANIFEST, RunFolder.METRICS)]
        execute(
            "rerank.ipynb",
            pages / "rerank" / run_page_name(config),
            run_parameters(config, results, work),
            run_files,
            title=titles.run(config),
        )
    for page_dir, keep in ((pages / "rerank", run_pages), (pages / "data", data_pages)):
        if page_dir.is_dir():  # pages of runs no longer in the grid would be stale
            for nb in page_dir.glob("*.ipynb"):
                if nb not in keep:
                    nb.unlink()
    if not skip_results:
        params = {
            "grid": grid.name,
            "results_dir": str(results),
            "grid_file": str(Path(grid_path).resolve()),
            "paper_table": str(root / "book" / "data" / "paper_table1.csv"),
            "include_simulated": bool(grid.raw.get("include_simulated", False)),
            "main_run": main_run(grid).run_name if grid.runs else None,
        }
        run_files = [
            RunFolder(d).file(f) for d in complete_runs(results) for f in (RunFolder.METRICS, RunFolder.MANIFEST)
        ]
        run_files += sorted(results.glob("*/*/shards/*/shard.json"))  # its sentence counts committed shards
        execute(
            "results.ipynb", pages / "results.ipynb", params, [Path(grid_path), Path(params["paper_table"]), *run_files]
        )
    return summary
