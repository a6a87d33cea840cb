"""``invarirank export trec OBSERVATIONS --out RUN``: any observations file (every method) → a TREC run with its
presented-order and qrels files (:mod:`invarirank.audit.trec`: 1-based ranks, strictly decreasing scores)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import InvariRankError


def register(subparsers: Any) -> None:
    e = subparsers.add_parser("export", help="an observations file → a TREC run (every method and order tagged)")
    esub = e.add_subparsers(dest="layout", metavar="LAYOUT", required=True)
    et = esub.add_parser("trec", help="RUN, RUN.presented.jsonl and RUN.qrels (1-based ranks, decreasing scores)")
    et.add_argument("file", metavar="OBSERVATIONS")
    et.add_argument("--out", required=True, metavar="RUN")
    et.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from .._io import check_output_file
    from ..audit.trec import write_trec_run

    out = check_output_file(args.out, "--out")
    if out.resolve() == Path(args.file).resolve():
        raise InvariRankError(f"--out {out} is the observations file; expected a new run file")
    write_trec_run(out, args.file)
    print(f"wrote {out} (+ .presented.jsonl, .qrels)", file=sys.stderr)
    return 0
