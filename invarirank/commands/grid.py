"""``invarirank grid GRID.yaml``: compute a grid's missing runs, then execute the book's notebooks
(:mod:`invarirank.grid.build`); ``--dry-run`` prints each run's status and scorer passes instead."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from .rerank import add_executor_arguments, check_executor_flags, executor_from_args


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "grid", help="compute a grid's missing runs, then execute the book's notebooks",
        description="Compute (or reuse) the runs of a grid, with a progress bar, then execute the book's notebooks.")
    a = p.add_argument
    a("grid", help="grid file (YAML), e.g. configs/grid-default.yaml")
    a("--build-dir", help="where executed notebooks go (default: book/generated)")
    a("--results-dir", help="finished runs, results/<grid>/<run>/ (default: results)")
    a("--work-dir", help="runs in progress (default: runs)")
    a("--force", action="store_true", help="execute every notebook even when up to date")
    a("--only", action="append", default=[],
      help="only these runs/pages: a run name, 'data' or 'rerank' (repeatable)")
    a("--skip-results", action="store_true", help="do not execute the results notebook")
    a("--dry-run", action="store_true", help="print each run's status and its scorer passes, run nothing")
    a("--seconds-per-pass", type=float, default=None,
      help="for --dry-run: seconds per scorer pass, to print minutes (measure it with `invarirank rerank --dry-run`)")
    a("--kernel", default="python3", help="Jupyter kernel for papermill (default python3)")
    a("--bench", metavar="FILE", help="for --dry-run: price the runs from this benchmark file (benchmarks.gpu "
                                      "--json; default: the newest under results/bench/, else the grid's assumption)")
    add_executor_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..grid import build, load_grid
    from ..runner import run_folder, run_status
    from ..grid.spec import check_paths
    from ..runner.plan import find_bench, format_grid_cost, format_grid_estimate
    from ..store import project_root

    grid = load_grid(args.grid)           # a dry run rejects what a real run would, before computing
    check_paths(grid)
    if args.dry_run:
        results = Path(args.results_dir) if args.results_dir else project_root() / "results"
        from ..store import committed_queries
        committed = [committed_queries(results / str(c.grid) / c.run_name) for c in grid.runs]
        statuses = [run_status(c, run_folder(c, results)) for c in grid.runs]
        print(format_grid_estimate(grid.runs, statuses, args.seconds_per_pass, committed))
        if grid.raw.get("estimate"):
            print()
            print(format_grid_cost(grid.runs, grid.raw["estimate"], bench=find_bench(args.bench)))
        return 0
    check_executor_flags(args)                                      # bad input fails before any cluster starts
    execution = {"shard_queries": args.shard_queries, "query_window": args.query_window}
    load_grid(args.grid, execution=execution)
    t0 = time.perf_counter()
    executor = executor_from_args(args)
    try:
        summary = build(args.grid, build_dir=args.build_dir, results_dir=args.results_dir, work_dir=args.work_dir,
                        force=args.force, only=args.only, skip_results=args.skip_results, kernel=args.kernel,
                        executor=executor, execution=execution)
    finally:
        if executor is not None:
            executor.close()
    ran = sum(v == "ran" for v in summary["runs"].values())
    print(f"grid {summary['grid']}: {len(summary['runs'])} runs ({ran} computed, {len(summary['runs']) - ran} "
          f"reused), {len(summary['executed'])} notebooks executed, {len(summary['skipped'])} up to date, "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0
