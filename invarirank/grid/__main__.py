"""``python -m invarirank.grid`` = ``invarirank grid``: a deprecated alias (see :mod:`invarirank._deprecation`)."""

import sys

from .._deprecation import deprecated_command
from ..cli import main

deprecated_command("python -m invarirank.grid", "invarirank grid (or python -m invarirank grid)", removed_in="0.3.0")
raise SystemExit(main(["grid", *sys.argv[1:]]))
