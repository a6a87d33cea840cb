"""Prepare data sets: raw files → prepared tables (Parquet) and stats.json, cached (`data prepare`).

Prints where the prepared data is, whether it was reused, and a small table of counts (raw users,
items and ratings before filtering, then the kept counts and the split sizes).
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from . import int_at_least


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def check_arguments(args: argparse.Namespace) -> None:
    """Before any work: ``--out`` (or the cache, where the prepared data goes by default) is a writable folder."""
    from .._io import check_output_dir
    from ..assets import cache_dir

    check_output_dir(cache_dir(), "the cache folder ($INVARIRANK_CACHE)")
    if args.out:
        check_output_dir(args.out, "--out")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "data", help="prepare data sets (raw files → prepared tables)", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    prep = sub.add_parser(
        "prepare",
        help="prepare a data set: filter, split, build queries",
        description="Read raw MovieLens or Amazon files, keep users with enough ratings, "
        "split each user's history chronologically and build the test and "
        "validation queries. Output is cached and reused.",
    )
    prep.add_argument(
        "--dataset",
        choices=["ml-100k", "movielens", "amazon-books"],
        default="ml-100k",
        help="ml-100k (embedded, default), movielens (any MovieLens layout in --raw-dir), "
        "amazon-books (Amazon Reviews 2023 JSONL)",
    )
    prep.add_argument("--raw-dir", metavar="DIR", help="folder with the raw files (layout auto-detected)")
    prep.add_argument("--reviews", metavar="FILE", help="amazon-books: the reviews JSONL(.gz) file")
    prep.add_argument("--metadata", metavar="FILE", help="amazon-books: the metadata JSONL(.gz) file")
    prep.add_argument(
        "--split",
        choices=["temporal", "loo"],
        default="temporal",
        help="temporal 70/10/20 per user (default) or leave-one-out",
    )
    prep.add_argument(
        "--min-interactions",
        type=int_at_least(3),
        metavar="N",
        default=None,
        help="keep users with at least N ratings, all ratings counted (default: 10 MovieLens, 3 Amazon)",
    )
    prep.add_argument(
        "--positive-threshold", type=_finite, default=4.0, metavar="R", help="a rating >= R is a positive (default 4.0)"
    )
    prep.add_argument(
        "--history-len",
        type=int_at_least(1),
        default=20,
        metavar="H",
        help="history items per query, newest first (default 20)",
    )
    prep.add_argument("--out", metavar="DIR", help="write the prepared folder here (default: the cache)")
    prep.add_argument("--force", action="store_true", help="rebuild even when matching prepared data exists")
    prep.set_defaults(func=run)
    parser.set_defaults(func=_no_action)


def _no_action(args: argparse.Namespace) -> int:
    """``invarirank data`` without an action: a usage error (exit 2), not a silent success."""
    from ..errors import InvariRankError

    raise InvariRankError("data: expected an action: prepare (see invarirank data --help)")


def run(args: argparse.Namespace) -> int:
    from ..data._preparation import format_stats, prepare_data
    from ..data._prepared import read_stats

    check_arguments(args)
    start = time.perf_counter()
    folder, reused = prepare_data(
        args.dataset,
        args.raw_dir,
        args.out,
        args.split,
        reviews=args.reviews,
        metadata=args.metadata,
        min_interactions=args.min_interactions,
        positive_threshold=args.positive_threshold,
        history_len=args.history_len,
        force=args.force,
    )
    stats = read_stats(folder)
    seconds = time.perf_counter() - start
    print(format_stats(stats))
    how = "reused" if reused else "prepared"
    print(f"{how} in {seconds:.1f} s: {folder}")
    sys.stdout.flush()
    return 0
