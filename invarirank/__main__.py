"""``python -m invarirank`` = ``invarirank`` (the command line, :mod:`invarirank.cli`)."""

import sys

from .cli import main

raise SystemExit(main(sys.argv[1:]))
