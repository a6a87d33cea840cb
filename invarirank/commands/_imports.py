"""``invarirank import {trec,rank-llm,authors} FILE --out observations.jsonl``: other tools' logs → the observations
file. Layouts: :mod:`invarirank.audit.trec`, :mod:`invarirank.audit.rank_llm`, :mod:`invarirank.audit.authors`.
(The module is ``imports``: ``import`` is a Python keyword.)"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import InvariRankError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "import",
        help="another tool's logs (a TREC run, rank_llm results, the authors' harness) → an observations file",
        description="Read another tool's reranking logs and write them as an observations file (the format "
        "'invarirank evaluate' reads). Any ranking that is not a complete permutation of the presented candidates "
        "is completed by the stated order rule and counted in the rows' 'repairs'.",
    )
    sub = p.add_subparsers(dest="layout", metavar="LAYOUT", required=True)
    trec = sub.add_parser("trec", help="a TREC run (tags METHOD@T) with RUN.presented.jsonl and RUN.qrels")
    trec.add_argument("file", metavar="RUN")
    trec.add_argument("--presented", metavar="FILE", help="presented orders (default RUN.presented.jsonl)")
    trec.add_argument("--qrels", metavar="FILE", help="TREC qrels (default RUN.qrels)")
    trec.add_argument(
        "--candidates", metavar="FILE", help="a candidates file: its order is every list's presented order"
    )
    rank_llm = sub.add_parser("rank-llm", help="rank_llm results with their requests (the presented orders)")
    rank_llm.add_argument("file", metavar="RESULTS")
    rank_llm.add_argument("--requests", required=True, metavar="FILE", help="the request file the results answer")
    rank_llm.add_argument("--qrels", required=True, metavar="FILE", help="TREC qrels (the ground truth)")
    rank_llm.add_argument("--method", default="rank_llm", help="the rows' method (default rank_llm)")
    authors = sub.add_parser("authors", help="the paper authors' PermutationSuite results or ranked-list records")
    authors.add_argument("file", metavar="FILE")
    authors.add_argument("--qrels", metavar="FILE", help="TREC qrels (default: the records' relevance labels)")
    authors.add_argument("--method", default="authors", help="the method when a record names none")
    for q in (trec, rank_llm, authors):
        q.add_argument("--min-relevance", type=float, default=1.0, help="relevant when RELEVANCE >= this (default 1)")
        q.add_argument("--out", required=True, metavar="OBSERVATIONS", help="observations file to write")
        q.set_defaults(func=run_import)


def run_import(args: argparse.Namespace) -> int:
    from .._io import check_output_file
    from ..audit import repair_totals
    from ..evaluation import write_observations

    out = check_output_file(args.out, "--out")
    inputs = [getattr(args, name, None) for name in ("file", "presented", "qrels", "candidates", "requests")]
    if args.layout == "trec":  # the side files read beside RUN when not named (RUN.presented.jsonl, RUN.qrels)
        from ..audit.trec import presented_path, qrels_path

        if args.presented is None and args.candidates is None:
            inputs.append(presented_path(args.file))
        if args.qrels is None and args.candidates is None:
            inputs.append(qrels_path(args.file))
    if any(x and Path(x).resolve() == out.resolve() for x in inputs):
        raise InvariRankError(f"--out {out} is one of the input files; expected a new observations file")
    if args.layout == "trec":
        from ..audit.trec import read_trec_run

        rows = read_trec_run(
            args.file,
            presented=args.presented,
            qrels=args.qrels,
            candidates=args.candidates,
            min_relevance=args.min_relevance,
        )
    elif args.layout == "rank-llm":
        from ..audit.rank_llm import read_rank_llm

        rows = read_rank_llm(
            args.file, requests=args.requests, qrels=args.qrels, method=args.method, min_relevance=args.min_relevance
        )
    elif args.layout == "authors":
        from ..audit.authors import read_authors

        rows = read_authors(args.file, method=args.method, qrels=args.qrels, min_relevance=args.min_relevance)
    else:  # pragma: no cover - argparse restricts the choices
        raise InvariRankError(f"import: unknown layout {args.layout!r}")
    write_observations(out, rows)
    repaired = {m: t for m, t in repair_totals(rows).items() if t["repaired_rows"]}
    for method, t in repaired.items():
        print(
            f"invarirank: note: {method}: {t['repaired_rows']} of {t['rows']} rankings completed by the order rule "
            f"({t['unknown']} unknown, {t['duplicate']} duplicate, {t['missing']} missing)",
            file=sys.stderr,
        )
    print(f"wrote {out} ({len(rows)} rows)", file=sys.stderr)
    return 0
