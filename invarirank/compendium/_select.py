"""Run selection: which finished runs a page shows (the main run, its K sweep, setting groups, other grids).

Runs are read through :mod:`invarirank.store`; here they only get their methods in the paper's order and are
chosen and grouped. Nothing here computes a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..store import Run, complete_runs
from ..store import committed_queries as _committed_queries
from ..store import load_run as _load_run
from ._labels import dataset_label, in_paper_order, model_label


def load_run(path: str | Path) -> Run:
    """Read one finished run folder (:func:`invarirank.store.load_run`), methods in the paper's order."""
    run = _load_run(path)
    run.methods = in_paper_order(run.methods)
    return run


def collect_runs(
    results_dir: str | Path, grids: Iterable[str] | None = None, exclude: Iterable[str] = ("lab",)
) -> list[Run]:
    """Every finished run under ``results_dir/<grid>/<run>/`` (the lab's sweep excluded by default),
    sorted by grid, dataset, model, scorer, K."""
    skip = set(exclude)
    runs = [load_run(p) for p in complete_runs(results_dir, grids) if p.parent.name not in skip]
    return sorted(runs, key=lambda r: (r.grid, r.dataset, r.model, r.scorer, r.K, r.name))


def main_k(runs: Sequence[Run]) -> int:
    """The K of the runs with the most methods (ties: the most queries, then the larger K)."""
    return max(runs, key=lambda r: (len(r.methods), r.n_queries, r.K)).K


def main_run(runs: Sequence[Run], name: str | None = None) -> Run:
    """The run that sets Table 1: the one called ``name`` when given (the grid file's main run), else the
    one with the most methods, then real over simulated scorers, span over choice, the most queries and
    the larger K."""
    if not runs:
        raise InvariRankError("no finished runs")
    if name:
        for r in runs:
            if r.name == name:
                return r
        raise InvariRankError(f"main run {name!r} is not among the finished runs ({', '.join(r.name for r in runs)})")
    return max(runs, key=lambda r: (len(r.methods), r.scorer != "simulated", r.scorer == "span", r.n_queries, r.K))


def sweep_runs(runs: Sequence[Run], main: Run) -> list[Run]:
    """The runs with the main run's data set, first stage, model and scorer, one per K (sorted by K)."""
    same = [
        r
        for r in runs
        if (r.dataset, r.retriever, r.model, r.scorer) == (main.dataset, main.retriever, main.model, main.scorer)
    ]
    by_k: dict[int, Run] = {}
    for r in same:
        if r.K not in by_k or (len(r.methods), r.n_queries) > (len(by_k[r.K].methods), by_k[r.K].n_queries):
            by_k[r.K] = r
    by_k[main.K] = main
    return [by_k[k] for k in sorted(by_k)]


def choice_runs(runs: Sequence[Run], baseline: str) -> list[Run]:
    """The runs of the choice scorer that hold ``baseline`` (the method the scorer comparison reads), most
    queries first (equal counts in the order given)."""
    chosen = [r for r in runs if r.scorer == "choice" and baseline in r.methods]
    return sorted(chosen, key=lambda r: r.n_queries, reverse=True)


def setting_groups(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Runs grouped by (data set, first stage, model, scorer), each group sorted by K; keys are display
    names (``Llama-3B on MovieLens-32M, span scorer``)."""
    out: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: (r.dataset, r.retriever, r.model, r.scorer, r.K)):
        label = f"{model_label(r.model)} on {dataset_label(r.dataset)} ({r.retriever}), {r.scorer} scorer"
        out.setdefault(label, []).append(r)
    return out


def other_grids(runs: Sequence[Run], grid: str) -> dict[str, list[Run]]:
    """Runs of grids other than ``grid``, grouped by grid (for the 'other grids' section)."""
    out: dict[str, list[Run]] = {}
    for r in runs:
        if r.grid != grid:
            out.setdefault(r.grid, []).append(r)
    return out


@dataclass(frozen=True)
class GridChoice:
    """A grid the results page may take Table 1 and Figures 1–2 from (:func:`grid_to_show`): its ``name``, its
    ``file`` (named to the reader), its ``main_run``, the runs it ``needed`` complete (the main run and every run of
    its setting — data set, first stage, model, scorer — i.e. its K sweep) and all its ``runs`` as (name, test
    queries it reranks: ``first_queries`` when set, else ``n_queries``; None: all)."""

    name: str
    file: str
    main_run: str
    needed: tuple[str, ...]
    runs: tuple[tuple[str, int | None], ...]


def grid_choice(grid: Any, sweep: Sequence[Any]) -> GridChoice:
    """The :class:`GridChoice` of a loaded grid (:func:`invarirank.grid.load_grid`: its ``name``, ``path`` and
    ``runs``) whose main run and K sweep are ``sweep``, main run first (:func:`invarirank.grid.main_sweep`)."""
    return GridChoice(
        grid.name,
        Path(grid.path).name,
        sweep[0].run_name,
        tuple(c.run_name for c in sweep),
        tuple((c.run_name, c.planned_queries) for c in grid.runs),
    )


def grid_to_show(
    results_dir: str | Path, choices: Sequence[GridChoice], fallback: str
) -> tuple[str, dict[str, list[str]]]:
    """``(grid, missing)``: the grid whose runs set the results page's Table 1 and figures — the first of
    ``choices`` whose ``needed`` runs are all complete under ``results_dir/<grid>/`` (all of
    :data:`invarirank.store.RESULT_FILES`; a folder holding only part of a run, e.g. ``shards/``, is not), else
    ``fallback``. ``missing`` maps each choice passed over (before the one shown; all of them when ``fallback`` is
    shown) to its needed runs that are not complete. A choice that needs no run is never shown."""
    missing: dict[str, list[str]] = {}
    for choice in choices:
        done = {p.name for p in complete_runs(results_dir, [choice.name])}
        left = [name for name in choice.needed if name not in done]
        if choice.needed and not left:
            return choice.name, missing
        missing[choice.name] = left
    return fallback, missing


def shard_progress(
    results_dir: str | Path, choices: Sequence[GridChoice], missing: dict[str, list[str]]
) -> dict[str, dict[str, tuple[int, int | None]]]:
    """For each choice passed over, each missing run → (queries committed in shards, its test queries)."""
    out: dict[str, dict[str, tuple[int, int | None]]] = {}
    for choice in choices:
        sizes = dict(choice.runs)
        out[choice.name] = {
            name: (committed_queries(results_dir, choice.name, name), sizes.get(name))
            for name in missing.get(choice.name, [])
        }
    return out


def committed_queries(results_dir: str | Path, grid: str, run: str) -> int:
    """Queries of an unfinished run already committed in shards under ``results_dir/<grid>/<run>/shards/``
    (:func:`invarirank.store.committed_queries`; 0 when none)."""
    return _committed_queries(Path(results_dir) / grid / run)
