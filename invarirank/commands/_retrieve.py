"""``invarirank retrieve``: the first stage (LightGCN, implicit ALS or popularity) → candidates.

Writes ``DIR/candidates.jsonl`` (kept test queries, then kept validation queries; the documented file
of :mod:`invarirank.candidates`) and ``DIR/stats.json`` (coverage, recall, HR, nDCG at 15/25/50 over
the test queries, kept/dropped counts, training time and loss curve), and prints a stats table.
torch and implicit are imported only when the command runs.
"""

from __future__ import annotations

import argparse

from . import int_at_least


def check_arguments(args: argparse.Namespace) -> None:
    """Before any work: ``--out`` (or the cache, where candidates go by default) is a writable folder."""
    from .._io import check_output_dir
    from ..assets import cache_dir

    check_output_dir(cache_dir(), "the cache folder ($INVARIRANK_CACHE)")
    if args.out:
        check_output_dir(args.out, "--out")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "retrieve",
        help="first stage: top-K candidates of the test and validation queries",
        description="Train (or load from the cache) a retriever on a prepared data folder and write the "
        "top-K unseen candidates of every query whose top-K holds a ground-truth item.",
    )
    p.add_argument(
        "--data",
        required=True,
        metavar="DIR",
        help="prepared data folder (invarirank data prepare), or a dataset name to prepare",
    )
    p.add_argument("--retriever", default="lightgcn", metavar="NAME", help="lightgcn (default), als or popularity")
    p.add_argument("--k", type=int, default=25, help="candidates per query (default 25)")
    p.add_argument(
        "--out", default=None, metavar="DIR", help="output folder (default: the cache, keyed by data and settings)"
    )
    p.add_argument("--seed", type=int, default=42, help="training seed (default 42)")
    p.add_argument(
        "--epochs",
        type=int_at_least(1),
        default=None,
        help="override LightGCN epochs / ALS iterations (default: protocol, 100 / 20)",
    )
    p.add_argument("--device", default=None, help="LightGCN device: cpu or cuda (default: cuda if available)")
    p.add_argument("--force", action="store_true", help="ignore cached models and candidates")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..retrieval import format_stats, retrieve

    check_arguments(args)
    result = retrieve(
        args.data,
        retriever=args.retriever,
        k=args.k,
        seed=args.seed,
        out=args.out,
        epochs=args.epochs,
        device=args.device,
        progress=not args.no_progress,
        force=args.force,
    )
    print(format_stats(result.stats))
    note = " (cached)" if result.candidates_cached else ""
    print(f"candidates: {result.candidates_path}{note}")
    print(f"stats: {result.out_dir / 'stats.json'}")
    return 0
