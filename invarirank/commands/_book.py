"""``invarirank book [BOOK.yaml]``: execute the book's pages from the finished runs (:mod:`invarirank.grid._book`).

It computes no run (``invarirank grid GRID.yaml`` does): every grid of the book's rule (``configs/book.yaml``) gets a
page per run its grid file declares (its ``pages``) and the data pages of those runs, and the results page is
executed once, its main results taken from the first grid of the rule whose main run and K sweep are complete. A
declared run that is not complete stops it in one line (exit 2) before any page runs, naming the command that
computes it. Then ``jupyter-book build .`` renders the book.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "book",
        help="execute the book's pages from the finished runs (computes nothing)",
        description="Execute the book's notebooks for every grid of the book's rule (default configs/book.yaml): a "
        "page per run its grid file declares in 'pages', the data pages of those runs and the results page. No run "
        "is computed: a declared run that is not complete is an error naming the `invarirank grid` command that "
        "computes it.",
    )
    a = p.add_argument
    a("config", nargs="?", help="the book's rule (YAML), default configs/book.yaml")
    a("--build-dir", help="where executed notebooks go (default: book/generated)")
    a("--results-dir", help="finished runs, results/<grid>/<run>/ (default: results)")
    a("--force", action="store_true", help="execute every notebook even when up to date")
    a("--kernel", default="python3", help="Jupyter kernel for papermill (default python3)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from .._io import check_output_dir
    from ..compendium._labels import dataset_label
    from ..compendium._titles import run_page_title
    from ..grid._book import build_book
    from ..grid._book_build import PageTitles
    from ..grid._notebooks import check_kernel

    if args.build_dir:
        check_output_dir(args.build_dir, "--build-dir")
    check_kernel(args.kernel)  # before the first page, not after the data pages
    t0 = time.perf_counter()
    summary = build_book(
        args.config,
        build_dir=args.build_dir,
        results_dir=args.results_dir,
        force=args.force,
        kernel=args.kernel,
        titles=PageTitles(run=run_page_title, dataset=dataset_label),
    )
    pages = ", ".join(f"{grid} {len(runs)}" for grid, runs in summary["grids"].items())
    print(
        f"book: run pages per grid: {pages}; {len(summary['executed'])} notebooks executed, "
        f"{len(summary['skipped'])} up to date, {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return 0
