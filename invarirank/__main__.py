"""``python -m invarirank`` = ``invarirank`` (the command line, :mod:`invarirank.cli`)."""

from .cli import main

raise SystemExit(main())  # (its arguments: sys.argv[1:])
