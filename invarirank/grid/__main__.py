"""``python -m invarirank.grid`` = ``invarirank grid`` (an alias)."""

import sys

from ..cli import main

raise SystemExit(main(["grid", *sys.argv[1:]]))
