"""The ``invarirank`` command line: ``data``, ``retrieve``, ``rerank``, ``evaluate``, ``report``.

Each sub-command lives in ``invarirank/commands/<name>.py`` and exposes ``register(subparsers)``,
which adds its parser and sets ``func`` (called with the parsed arguments, returning an exit code).
Command modules import heavy libraries (torch, transformers) only inside their run functions, so
``invarirank evaluate`` starts fast and works without torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import InvariRankError

COMMANDS = ["data", "retrieve", "rerank", "evaluate", "report"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="invarirank",
        description="Position bias in listwise LLM reranking: data, first stage, reranking, metrics.")
    parser.add_argument("--version", action="version", version=f"invarirank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"invarirank.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"invarirank.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except InvariRankError as exc:
        print(f"invarirank: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("invarirank: interrupted (finished work is kept; rerun to resume)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
