"""``invarirank grid GRID.yaml``: compute a grid's missing runs and its lab sweep
(:func:`invarirank.grid.compute_grid`); it executes no page (``invarirank book`` executes the book's pages, every
grid's, once, computing nothing), so that computing and rendering never hide inside each other. ``--dry-run`` prints
each run's status and scorer passes instead. The page flags of older releases (``--compute-only``, ``--build-dir``,
``--skip-results``, ``--force``, ``--kernel``) are accepted with a deprecation warning and do nothing."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ._rerank import add_executor_arguments, check_executor_flags, executor_from_args


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "grid",
        help="compute a grid's missing runs (executes no page: `invarirank book` does)",
        description="Compute (or reuse) the runs of a grid and its teaching-lab sweep, with a progress bar. No "
        "notebook is executed: `invarirank book` then executes the pages the grid files declare (their 'pages').",
    )
    a = p.add_argument
    a("grid", help="grid file (YAML), e.g. configs/grid-default.yaml")
    a("--results-dir", help="finished runs, results/<grid>/<run>/ (default: results)")
    a("--work-dir", help="runs in progress (default: runs)")
    a("--only", action="append", default=[], help="only this run (a run name of the grid; repeatable)")
    a("--dry-run", action="store_true", help="print each run's status and its scorer passes, run nothing")
    a(
        "--seconds-per-pass",
        type=float,
        default=None,
        help="for --dry-run: seconds per scorer pass, to print minutes (measure it with `invarirank rerank --dry-run`)",
    )
    a(
        "--bench",
        metavar="FILE",
        help="for --dry-run: price the runs from this benchmark file (benchmarks.gpu "
        "--json; default: the newest under results/bench/, else the grid's assumption)",
    )
    add_executor_arguments(p)
    old = p.add_argument_group("deprecated (no effect; removed in 0.3.0: `invarirank book` executes the pages)")
    old.add_argument("--compute-only", action="store_true", help="what `invarirank grid` now always does")
    old.add_argument("--build-dir", help=argparse.SUPPRESS)
    old.add_argument("--skip-results", action="store_true", help=argparse.SUPPRESS)
    old.add_argument("--force", action="store_true", help=argparse.SUPPRESS)
    old.add_argument("--kernel", help=argparse.SUPPRESS)
    p.set_defaults(func=run)


#: the page flags ``invarirank grid`` had when it also executed the notebooks: accepted, ignored, warned about
PAGE_FLAGS = ("compute_only", "build_dir", "skip_results", "force", "kernel")


def warn_page_flags(args: argparse.Namespace) -> None:
    """One ``invarirank: warning:`` line per page flag given: it does nothing now, and goes in 0.3.0."""
    from .._deprecation import deprecated_command

    for name in PAGE_FLAGS:
        if getattr(args, name):
            flag = "--" + name.replace("_", "-")
            new = "invarirank grid (it executes no page)" if name == "compute_only" else f"invarirank book {flag}"
            deprecated_command(f"invarirank grid {flag}", new, removed_in="0.3.0")


def check_only(only: list[str], grid: Any) -> None:
    """Every ``--only`` value names a run of the grid (or of its lab sweep, always computed): a misspelt one would
    select nothing and exit 0, and a page (``data``, ``rerank``: older releases took these) is ``invarirank book``'s."""
    from ..grid._spec import lab_runs

    known = {c.run_name for c in [*grid.runs, *(lab_runs(grid.lab) if grid.lab else [])]}
    for name in only:
        if name in {"data", "rerank"} and name not in known:
            raise InvariRankError(
                f"--only {name!r}: a page, not a run; `invarirank grid` executes no page (`invarirank book` does)"
            )
        if name not in known:
            raise InvariRankError(
                f"--only {name!r}: not a run of {grid.path}; expected one of {', '.join(sorted(known))}"
            )


def check_places(args: argparse.Namespace, root: Path) -> None:
    """Before a dry or a real run computes anything: each output folder (``--results-dir``, ``--work-dir``, their
    defaults under the project ``root``) is or can become a writable folder, and so is the cache; the paths given
    are made absolute, once, here (the runner's workers may run elsewhere)."""
    from .._io import check_output_dir
    from ..assets import cache_dir

    defaults = {"results_dir": "results", "work_dir": "runs"}
    for name, default in defaults.items():
        given = getattr(args, name)
        path = Path(os.path.abspath(given)) if given else root / default
        check_output_dir(path, "--" + name.replace("_", "-"))
        if given:
            setattr(args, name, str(path))
    check_output_dir(cache_dir(), "the cache folder ($INVARIRANK_CACHE)")


def run(args: argparse.Namespace) -> int:
    from ..grid import compute_grid, load_grid
    from ..grid._book_build import OUTSIDE_CHECKOUT
    from ..grid._spec import check_folders, check_paths
    from ..runner import run_folder, run_status
    from ..runner._bench_files import find_bench
    from ..runner._grid_estimate import format_grid_cost, format_grid_estimate
    from ..store import project_root

    warn_page_flags(args)
    check_executor_flags(args)  # a dry run rejects what a real run would, before computing
    execution = {"shard_queries": args.shard_queries, "query_window": args.query_window}
    try:  # a dry run needs the checkout a real run needs
        root = project_root(grid_file=args.grid, instead=OUTSIDE_CHECKOUT)
    except InvariRankError:
        load_grid(args.grid, execution=execution)  # the file's own errors come first
        raise
    grid = load_grid(args.grid, execution=execution, root=root)  # the runs' paths absolute against the root
    check_paths(grid)
    check_places(args, root)
    results = Path(args.results_dir or root / "results")
    check_folders(grid, results)
    check_only(args.only, grid)
    if args.seconds_per_pass is not None and not (math.isfinite(args.seconds_per_pass) and args.seconds_per_pass > 0):
        raise InvariRankError(f"--seconds-per-pass {args.seconds_per_pass:g}: expected a positive number of seconds")
    if args.dry_run:
        from ..store import committed_calibration_parts, committed_queries, has_committed_calibrations

        committed = [committed_queries(results / str(c.grid) / c.run_name) for c in grid.runs]
        recorded = [has_committed_calibrations(results / str(c.grid) / c.run_name) for c in grid.runs]
        parts = [committed_calibration_parts(results / str(c.grid) / c.run_name) for c in grid.runs]
        statuses = [run_status(c, run_folder(c, results)) for c in grid.runs]
        print(format_grid_estimate(grid.runs, statuses, args.seconds_per_pass, committed, recorded, parts))
        if grid.raw.get("estimate"):
            print()
            print(format_grid_cost(grid.runs, grid.raw["estimate"], bench=find_bench(args.bench)))
        return 0
    t0 = time.perf_counter()
    executor = executor_from_args(args)
    try:
        summary = compute_grid(
            args.grid,
            results_dir=args.results_dir,
            work_dir=args.work_dir,
            only=args.only,
            executor=executor,
            execution=execution,
            root=root,
        )
    finally:
        if executor is not None:
            executor.close()
    ran = sum(v == "ran" for v in summary["runs"].values())
    print(
        f"grid {summary['grid']}: {len(summary['runs'])} runs ({ran} computed, {len(summary['runs']) - ran} "
        f"reused), {time.perf_counter() - t0:.0f} s; `invarirank book` executes the pages",
        file=sys.stderr,
    )
    return 0
