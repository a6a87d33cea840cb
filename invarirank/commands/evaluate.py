"""``invarirank evaluate FILE``: metrics of an observations file (any reranker's logs), printed and written as JSON.

Imports nothing heavy at module level (the evaluation core needs numpy only, imported when the command runs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InvariRankError

HELP = ("compute HR/nDCG/recall/MRR, PPI, GPI (+ exact Kemeny), LOC and exposure of an observations file, and "
        "compare its methods paired over queries")


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,5,10, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected cut-offs >= 1, got {text!r}")
    return values


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help=HELP, description=HELP + ". The file is JSON Lines (optionally .gz) or Parquet, one row per "
        "(query, method, presented order) with query_id, method, permutation, input, output, relevant "
        "(see invarirank.evaluation.observations).")
    p.add_argument("file", metavar="FILE", help="observations file (.jsonl, .jsonl.gz or .parquet)")
    p.add_argument("--k", dest="ks", type=_int_list, default=[1, 5, 10], metavar="K1,K2,...",
                   help="cut-offs for HR/nDCG/recall/MRR (default 1,5,10)")
    p.add_argument("--exposure-k", type=int, default=5, metavar="E",
                   help="top-k of the exposure curve (default 5)")
    p.add_argument("--buckets", type=int, default=3, metavar="B",
                   help="position buckets of PPI (default 3)")
    p.add_argument("--no-exact-kemeny", action="store_true",
                   help="skip the exact Kemeny optimum (gpi_exact) that is reported next to GPI")
    p.add_argument("--exact-max-k", type=int, default=10, metavar="K",
                   help="largest K solved exactly (default 10, at most 16)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap replicates for the 95%% intervals over queries (default 1000; 0 = none)")
    p.add_argument("--permutations", type=int, default=10000, metavar="N",
                   help="seeded sign flips of the paired permutation test between methods (default 10000; exact "
                        "enumeration when the methods share at most 16 queries; 0 = no comparisons)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the sign flips (default 0)")
    p.add_argument("--output", metavar="PATH", default=None,
                   help="metrics JSON to write (default: metrics.json beside FILE; '-' prints the JSON to stdout "
                        "and the table to stderr)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..io import atomic_write_text
    from ..evaluation.engine import check_settings, dumps_metrics, evaluate_rows
    from ..evaluation.observations import read_observations
    from ..evaluation.report import format_comparisons, format_table

    settings = check_settings(args.ks, args.exposure_k, args.buckets,
                              None if args.no_exact_kemeny else args.exact_max_k, args.bootstrap, args.seed,
                              args.permutations)
    rows = read_observations(args.file)
    metrics = evaluate_rows(rows, settings)
    text = dumps_metrics(metrics)
    table = format_table(metrics)
    comparisons = format_comparisons(metrics)
    if comparisons:
        table += "\n" + comparisons
    if args.output == "-":
        sys.stderr.write(table)
        sys.stdout.write(text)
        return 0
    out = Path(args.output) if args.output else Path(args.file).parent / "metrics.json"
    if out.resolve() == Path(args.file).resolve():
        raise InvariRankError(f"--output {out} would overwrite the observations file")
    atomic_write_text(out, text)
    sys.stdout.write(table)
    print(f"wrote {out}", file=sys.stderr)
    return 0
