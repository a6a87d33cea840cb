"""``invarirank evaluate FILE``: metrics of an observations file (any reranker's logs), printed and written as JSON.

Imports nothing heavy at module level (the evaluation core needs numpy only, imported when the command runs).
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .._limits import MAX_BOOTSTRAP, MAX_PERMUTATIONS
from ..errors import InvariRankError

HELP = (
    "compute HR/nDCG/recall/MRR, PPI, GPI (+ exact Kemeny), LOC and exposure of an observations file, and "
    "compare its methods paired over queries"
)


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
        "evaluate",
        help=HELP,
        description=HELP + ". The file is JSON Lines (optionally .gz) or Parquet, one row per "
        "(query, method, presented order) with query_id, method, permutation, input, output, relevant "
        "(see invarirank.evaluation.observations).",
    )
    p.add_argument("file", metavar="FILE", help="observations file (.jsonl, .jsonl.gz or .parquet)")
    p.add_argument(
        "--k",
        dest="ks",
        type=_int_list,
        default=[1, 5, 10],
        metavar="K1,K2,...",
        help="cut-offs for HR/nDCG/recall/MRR (default 1,5,10)",
    )
    p.add_argument(
        "--exposure-k",
        type=int,
        default=None,
        metavar="E",
        help="top-k of the exposure curve (default 5; given, below K)",
    )
    p.add_argument(
        "--buckets", type=int, default=None, metavar="B", help="position buckets of PPI (default 3; given, from 2 to K)"
    )
    p.add_argument(
        "--no-exact-kemeny",
        action="store_true",
        help="skip the exact Kemeny optimum (gpi_exact) that is reported next to GPI",
    )
    p.add_argument(
        "--exact-max-k", type=int, default=10, metavar="K", help="largest K solved exactly (default 10, at most 16)"
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help=f"bootstrap replicates for the 95%% intervals over queries (default 1000; 0 = none; at most "
        f"{MAX_BOOTSTRAP:,})",
    )
    p.add_argument(
        "--permutations",
        type=int,
        default=10000,
        metavar="N",
        help=f"seeded sign flips of the paired permutation test between methods (default 10000; exact "
        f"enumeration when the methods share at most 16 queries; 0 = no comparisons; at most "
        f"{MAX_PERMUTATIONS:,})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the sign flips (default 0)")
    p.add_argument(
        "--output",
        metavar="PATH",
        default=None,
        help="metrics JSON to write (default: metrics.json beside FILE, except in a run folder, whose "
        "metrics.json is the run's own: there --output is required; '-' prints the JSON to stdout "
        "and the table to stderr)",
    )
    p.set_defaults(func=run)


#: files that make a folder a run's (a published run, a work folder, a shard): the default --output avoids them
_RUN_MARKERS = ("manifest.json", "run.json", "shard.json", ".lock", ".work", "checkpoint.jsonl")


def check_input(file: str) -> None:
    """The observations file exists and is a regular file (an empty name, a folder, a FIFO are named as such)."""
    from .._io import special_file

    p = Path(file)
    if not file:
        raise InvariRankError("FILE '' is empty; expected the path of an observations file")
    if file == "-" and not p.exists():
        raise InvariRankError(
            "FILE '-': reading observations from standard input is not supported (the reader detects plain, gzip "
            "or Parquet from the file itself); save them to a file and give its path"
        )
    if p.is_dir():
        raise InvariRankError(f"{file}: is a folder, expected an observations file")
    kind = special_file(p)
    if kind:
        raise InvariRankError(f"{file}: is a {kind}, expected a regular observations file")
    if not p.is_file():
        raise InvariRankError(f"{file}: observations file not found")


def default_output(file: str) -> Path:
    """``metrics.json`` beside FILE, unless FILE lies in a run folder (see :data:`_RUN_MARKERS`): that folder's
    ``metrics.json`` is the run's own, and replacing it would let the grid reuse the run with other settings."""
    folder = Path(file).parent
    itself = Path(file).resolve()  # the observations file does not mark its own folder (one named run.json)
    marker = next((m for m in _RUN_MARKERS if (folder / m).exists() and (folder / m).resolve() != itself), None)
    if marker:
        raise InvariRankError(
            f"{file}: lies in a run folder ({folder} holds {marker}), whose metrics.json is the "
            f"run's own; give --output PATH outside it (or --output - to print the JSON)"
        )
    return folder / "metrics.json"


def check_output(args: argparse.Namespace) -> Path | None:
    """The metrics file to write (None for ``--output -``), checked before any work: not the observations file,
    not a folder, not a FIFO, in a writable folder; without ``--output``, not in a run folder
    (:func:`default_output`)."""
    from .._io import check_output_file

    check_input(args.file)
    if args.output == "-":
        return None
    if args.output == "":
        raise InvariRankError("--output '' is empty; expected a file name (or - for stdout)")
    out = Path(args.output) if args.output else default_output(args.file)
    if out.resolve() == Path(args.file).resolve():
        raise InvariRankError(f"--output {out} would overwrite the observations file")
    return check_output_file(out, "--output")


#: the flag of each parameter of :func:`invarirank.evaluation.engine.check_settings`: errors name what was typed
_FLAGS = {
    "ks": "--k",
    "exposure_k": "--exposure-k",
    "buckets": "--buckets",
    "exact_kemeny_max_k": "--exact-max-k",
    "exact_kemeny_off": "--no-exact-kemeny",
    "n_bootstrap": "--bootstrap",
    "n_permutations": "--permutations",
    "seed": "--seed",
}


def _without_cyclic_gc(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``command`` with Python's cyclic garbage collector off while it runs (restored for a caller in the same
    process). The rows hold no reference cycles (reference counting frees everything): the collector would only walk
    the file's hundreds of thousands of rows and lists again and again (0.05-0.07 s of 1.5 s CPU for 1,000 queries
    x K = 25 x M = 20)."""

    @functools.wraps(command)
    def wrapped(args: argparse.Namespace) -> int:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return command(args)
        finally:
            if enabled:
                gc.enable()

    return wrapped


#: the variables OpenBLAS reads its thread count from (a user's setting is kept)
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def _one_blas_thread() -> None:
    """Run numpy's BLAS on one thread in this process unless the user set its thread count (only before numpy is
    first imported, which is when OpenBLAS reads it). The command's matrix products are small (1,000 x 1,000 counts
    by a few dozen columns) and OpenBLAS's worker threads spin between them: about 0.2 s of the 1.0 s of CPU time
    of 1,000 queries x K = 25 x M = 20 on the project's busy two-core machine, and no shorter wall time. The
    metrics do not depend on it: the bootstrap's and the random order's products are of whole numbers, exact in
    any order, and every committed run's metrics.json is the same bytes with one thread as with two."""
    if "numpy" not in sys.modules and not any(name in os.environ for name in _BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


@_without_cyclic_gc
def run(args: argparse.Namespace) -> int:
    _one_blas_thread()
    from .._io import atomic_write_text
    from ..evaluation._code_reader import read_codes
    from ..evaluation._codes import codes_of_rows, list_lengths
    from ..evaluation.engine import check_list_lengths, check_settings, dumps_metrics, evaluate_codes
    from ..evaluation.observations import read_observations
    from ..evaluation.report import format_comparisons, format_table

    settings = check_settings(
        args.ks,
        5 if args.exposure_k is None else args.exposure_k,
        3 if args.buckets is None else args.buckets,
        None if args.no_exact_kemeny else args.exact_max_k,
        args.bootstrap,
        args.seed,
        args.permutations,
        names=_FLAGS,
    )
    out = check_output(args)
    # the file straight into codes; one the fast reader does not take is read row by row, which names any problem
    codes = read_codes(args.file) or codes_of_rows(read_observations(args.file))
    given = {"exposure_k": args.exposure_k is not None, "buckets": args.buckets is not None}
    for note in check_list_lengths(*list_lengths(codes), settings, args.file, given=given, names=_FLAGS):
        print(f"invarirank: note: {note}", file=sys.stderr)
    metrics = evaluate_codes(codes, settings)
    text = dumps_metrics(metrics)
    table = format_table(metrics)
    comparisons = format_comparisons(metrics)
    if comparisons:
        table += "\n" + comparisons
    if out is None:
        sys.stderr.write(table)
        sys.stdout.write(text)
        return 0
    atomic_write_text(out, text)
    sys.stdout.write(table)
    print(f"wrote {out}", file=sys.stderr)
    return 0
