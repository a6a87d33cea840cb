"""Deprecation over two releases: a form kept for users of an older release (a ``python -m`` alias, a renamed
name) warns when used, naming what replaces it and the release that removes it, and is removed in that release.

:func:`deprecated` is for Python names: a :class:`FutureWarning`, which Python shows by default (a
:class:`DeprecationWarning` would be hidden from the people who meet it). :func:`deprecated_command` is for
command-line forms: one line ``invarirank: warning: ...`` on standard error, in the command line's own style, so
that a command's output stays lines a user can read (and its one error line stays one line). ``removed_in`` is a
promise the tests hold the package to (``tests/structure/test_deprecations.py``): a release whose version reaches
it fails them until the form is gone, and the removal is listed in ``CHANGELOG.md``.
"""

from __future__ import annotations

import sys
import warnings


def _message(old: str, new: str, removed_in: str) -> str:
    return f"{old} is deprecated and will be removed in invarirank {removed_in}; use {new}"


def deprecated(old: str, new: str, *, removed_in: str, stacklevel: int = 2) -> None:
    """Warn (:class:`FutureWarning`) that the Python name ``old`` is deprecated in favour of ``new`` and goes in
    release ``removed_in`` (a version ``X.Y.Z`` later than the package's)."""
    warnings.warn(_message(old, new, removed_in), FutureWarning, stacklevel=stacklevel + 1)


def deprecated_command(old: str, new: str, *, removed_in: str) -> None:
    """Say on standard error, in one line, that the command form ``old`` is deprecated in favour of ``new`` and goes
    in release ``removed_in``; the command then runs as before."""
    print(f"invarirank: warning: {_message(old, new, removed_in)}", file=sys.stderr)
