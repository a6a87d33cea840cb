"""``invarirank grid GRID.yaml``: compute a grid's missing runs, then execute that grid's notebooks
(:mod:`invarirank.grid.book_build`); ``--compute-only`` executes none (``invarirank book`` executes the whole book's
pages, every grid's, once); ``--dry-run`` prints each run's status and scorer passes instead."""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from .rerank import add_executor_arguments, check_executor_flags, executor_from_args


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "grid",
        help="compute a grid's missing runs, then execute the book's notebooks",
        description="Compute (or reuse) the runs of a grid, with a progress bar, then execute the book's notebooks.",
    )
    a = p.add_argument
    a("grid", help="grid file (YAML), e.g. configs/grid-default.yaml")
    a("--build-dir", help="where executed notebooks go (default: book/generated)")
    a("--results-dir", help="finished runs, results/<grid>/<run>/ (default: results)")
    a("--work-dir", help="runs in progress (default: runs)")
    a("--force", action="store_true", help="execute every notebook even when up to date")
    a("--only", action="append", default=[], help="only these runs/pages: a run name, 'data' or 'rerank' (repeatable)")
    a("--skip-results", action="store_true", help="do not execute the results notebook")
    a(
        "--compute-only",
        action="store_true",
        help="compute the missing runs and execute no notebook (`invarirank book` then executes the book's pages)",
    )
    a("--dry-run", action="store_true", help="print each run's status and its scorer passes, run nothing")
    a(
        "--seconds-per-pass",
        type=float,
        default=None,
        help="for --dry-run: seconds per scorer pass, to print minutes (measure it with `invarirank rerank --dry-run`)",
    )
    a("--kernel", default="python3", help="Jupyter kernel for papermill (default python3)")
    a(
        "--bench",
        metavar="FILE",
        help="for --dry-run: price the runs from this benchmark file (benchmarks.gpu "
        "--json; default: the newest under results/bench/, else the grid's assumption)",
    )
    add_executor_arguments(p)
    p.set_defaults(func=run)


def check_only(only: list[str], grid: Any) -> None:
    """Every ``--only`` value names a run of the grid (or of its lab), ``data`` or ``rerank``: a misspelt one
    would select nothing and exit 0."""
    from ..grid.spec import lab_runs

    known = {c.run_name for c in [*grid.runs, *(lab_runs(grid.lab) if grid.lab else [])]} | {"data", "rerank"}
    for name in only:
        if name not in known:
            raise InvariRankError(
                f"--only {name!r}: not a run of {grid.path} (nor 'data' or 'rerank'); expected "
                f"one of {', '.join(sorted(known))}"
            )


def check_places(args: argparse.Namespace, root: Path) -> None:
    """Before a dry or a real run computes anything: each output folder (``--results-dir``, ``--work-dir``,
    ``--build-dir``, their defaults under the project ``root``) is or can become a writable folder, and so is the
    cache; the paths given are made absolute, once, here (the notebooks run in ``notebooks/``)."""
    from ..assets import cache_dir
    from ..io import check_output_dir

    defaults = {"results_dir": "results", "work_dir": "runs", "build_dir": "book/generated"}
    for name, default in defaults.items():
        given = getattr(args, name)
        path = Path(os.path.abspath(given)) if given else root / default
        check_output_dir(path, "--" + name.replace("_", "-"))
        if given:
            setattr(args, name, str(path))
    check_output_dir(cache_dir(), "the cache folder ($INVARIRANK_CACHE)")


def run(args: argparse.Namespace) -> int:
    from ..grid import build, load_grid
    from ..grid.book_build import OUTSIDE_CHECKOUT
    from ..grid.spec import check_folders, check_paths
    from ..runner import run_folder, run_status
    from ..runner.plan import find_bench, format_grid_cost, format_grid_estimate
    from ..store import project_root

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
        from ..store import committed_queries, has_committed_calibrations

        committed = [committed_queries(results / str(c.grid) / c.run_name) for c in grid.runs]
        recorded = [has_committed_calibrations(results / str(c.grid) / c.run_name) for c in grid.runs]
        statuses = [run_status(c, run_folder(c, results)) for c in grid.runs]
        print(format_grid_estimate(grid.runs, statuses, args.seconds_per_pass, committed, recorded))
        if grid.raw.get("estimate"):
            print()
            print(format_grid_cost(grid.runs, grid.raw["estimate"], bench=find_bench(args.bench)))
        return 0
    from ..compendium.labels import dataset_label
    from ..compendium.titles import run_page_title
    from ..grid.book_build import PageTitles
    from ..grid.notebooks import check_kernel

    check_kernel(args.kernel)  # the notebooks run after the runs: their kernel is checked before the first pass

    t0 = time.perf_counter()
    executor = executor_from_args(args)
    try:
        summary = build(
            args.grid,
            build_dir=args.build_dir,
            results_dir=args.results_dir,
            work_dir=args.work_dir,
            force=args.force,
            only=args.only,
            skip_results=args.skip_results,
            kernel=args.kernel,
            executor=executor,
            execution=execution,
            root=root,
            titles=PageTitles(run=run_page_title, dataset=dataset_label),
            pages_too=not args.compute_only,
        )
    finally:
        if executor is not None:
            executor.close()
    ran = sum(v == "ran" for v in summary["runs"].values())
    print(
        f"grid {summary['grid']}: {len(summary['runs'])} runs ({ran} computed, {len(summary['runs']) - ran} "
        f"reused), {len(summary['executed'])} notebooks executed, {len(summary['skipped'])} up to date, "
        f"{time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return 0
