"""``invarirank models prepare|list|paper``: convert the registry's GGUF models into cached float32 folders once, list
them (:mod:`invarirank.llm.models`), or build the paper's three tokenizers as tiny local model folders
(:mod:`invarirank.llm._paper_models`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import InvariRankError


def register(subparsers: Any) -> None:
    from ..llm.models import REGISTRY  # torch-free: the registry is plain data

    p = subparsers.add_parser(
        "models",
        help="prepare (convert once) or list the registry models",
        description="Prepare (convert once) or list the registry models.",
    )
    sub = p.add_subparsers(dest="models_command", required=True, metavar="{prepare,list,paper}")
    prep = sub.add_parser("prepare", help="convert registry GGUFs into cached float32 folders (idempotent)")
    prep.add_argument("names", nargs="*", help=f"models (default: all of {', '.join(REGISTRY)})")
    prep.add_argument("--force", action="store_true", help="convert again even when a folder exists")
    sub.add_parser("list", help="list registry models and whether they are prepared")
    paper = sub.add_parser(
        "paper", help="build the paper models' real tokenizers with tiny random weights as local folders (idempotent)"
    )
    paper.add_argument("--force", action="store_true", help="build again even when a folder exists")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..llm.models import REGISTRY, is_prepared, prepare, prepared_dir

    if args.models_command == "paper":
        from ..llm._paper_models import build_all

        for name, path in build_all(force=args.force).items():
            print(f"{name}: {path}")
        return 0
    if args.models_command == "list":
        for name, entry in REGISTRY.items():
            state = "prepared" if is_prepared(name) else "not prepared"
            print(f"{name}\t{state}\t{prepared_dir(name)}\t{entry.description}")
        return 0
    for name in args.names or list(REGISTRY):
        if name not in REGISTRY:
            raise InvariRankError(f"unknown model {name!r}: expected one of {', '.join(REGISTRY)}")
        print(f"{name}: {prepare(name, force=args.force)}")
    return 0
