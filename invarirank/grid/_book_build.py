"""``invarirank grid``'s work and what the book's pages are made of.

- **Runs** (:func:`compute_grid`), on the terminal with a progress bar: every run of the grid (and of its
  teaching-lab sweep) that is not complete under ``results/<grid>/<run>/`` is computed (or resumed) through the
  runner (:func:`invarirank.runner.ensure_runs`) and published; complete runs are reused as they are. No page is
  executed here: computing and rendering are two commands, so that rendering the book never computes.
- **Pages' parameters and names** (:func:`run_parameters`, :func:`data_parameters`, :func:`run_page_name`,
  :class:`PageTitles`), which :mod:`invarirank.grid._book` uses to execute ``notebooks/rerank.ipynb`` once per
  declared run and ``notebooks/data.ipynb`` once per data set.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runner import Executor, RunConfig, ensure_runs, mismatch_error, run_folder, run_status
from ..store import project_root
from ._spec import Grid, lab_runs, load_grid


def _run_id_title(config: RunConfig) -> str:
    return f"Run {config.run_name}"


def data_page_title(name: str, ks: Sequence[int]) -> str:
    """A data page's title: the data set's name and its list lengths, in increasing order, e.g. ``MovieLens-100K at
    K = 5, 10, 15, 25: counts and the first stage's coverage`` (no ``at K`` part without list lengths)."""
    at = f" at K = {', '.join(str(k) for k in sorted(ks))}" if ks else ""
    return f"{name}{at}: counts and the first stage's coverage"


@dataclass(frozen=True)
class PageTitles:
    """How :func:`invarirank.grid._book.build_book` titles the pages it executes: ``run`` (a run → its page's
    title) and ``dataset`` (a data set's label or id → the name its data page's title gives it,
    :func:`data_page_title`). The grid layer knows ids only; ``invarirank book`` passes the book's display names
    (:mod:`invarirank.compendium._titles`, :func:`invarirank.compendium._labels.dataset_label`)."""

    run: Callable[[RunConfig], str] = _run_id_title
    dataset: Callable[[str], str] = str


#: what to do when neither the grid file nor the working directory lies in a checkout
OUTSIDE_CHECKOUT = "a grid publishes into the checkout's results: run it from the checkout or keep the grid file in one"


def compute_runs(
    configs: Sequence[RunConfig], results_dir: Path, work_dir: Path, executor: Executor | None = None
) -> dict[str, str]:
    """Compute and publish every run that is not complete, through :func:`invarirank.runner.ensure_runs`;
    returns ``{"<grid>/<run>": "reused" | "re-evaluated" | "ran"}`` (re-evaluated: only its metrics were
    rewritten for a newer metrics schema).

    Without ``executor`` the runs are computed by the local executor in this process; with one
    (:mod:`invarirank.runner._executors`) every missing run's shards go to its workers together. Either way there is
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


def compute_grid(
    grid_path: str | os.PathLike,
    *,
    results_dir: str | os.PathLike | None = None,
    work_dir: str | os.PathLike | None = None,
    only: Sequence[str] = (),
    executor: Executor | None = None,
    execution: dict[str, Any] | None = None,
    root: Path | None = None,
) -> dict[str, Any]:
    """Compute (or resume) a grid's missing runs and its teaching-lab sweep; execute no page (the book's pages are
    :func:`invarirank.grid._book.build_book`'s job, ``invarirank book``). ``only`` limits the work to these runs
    (the lab sweep is always included); ``executor`` computes the runs in shards (:func:`compute_runs`),
    ``execution`` overrides the runs' execution settings (``shard_queries``, ``query_window``), ``root`` is the
    project root (default: found from ``grid_path``, :func:`invarirank.store.project_root`). Returns ``{"grid":
    name, "runs": {"<grid>/<run>": "reused" | "re-evaluated" | "ran"}}``."""
    root = root or project_root(grid_file=grid_path, instead=OUTSIDE_CHECKOUT)
    grid = load_grid(grid_path, execution=execution, root=root)
    results = Path(os.path.abspath(results_dir)) if results_dir else root / "results"
    work = Path(os.path.abspath(work_dir)) if work_dir else root / "runs"
    selected = [c for c in grid.runs if not only or c.run_name in only]
    lab = lab_runs(grid.lab) if grid.lab else []
    return {"grid": grid.name, "runs": compute_runs([*lab, *selected], results, work, executor)}
