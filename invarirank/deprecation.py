"""Deprecation over two releases: a form kept for users of an older release (a ``python -m`` alias, a renamed
name) warns when used, naming what replaces it and the release that removes it, and is removed in that release.

The warning is a :class:`FutureWarning`, which Python shows by default: the people who meet these forms run
commands, and a :class:`DeprecationWarning` would be hidden from them. ``removed_in`` is a promise the tests hold the
package to (``tests/structure/test_deprecations.py``): a release whose version reaches it fails them until the form
is gone, and the removal is listed in ``CHANGELOG.md``.
"""

from __future__ import annotations

import warnings

__all__ = ["deprecated"]


def deprecated(old: str, new: str, *, removed_in: str, stacklevel: int = 2) -> None:
    """Warn that ``old`` (a form still accepted) is deprecated in favour of ``new`` and goes in release
    ``removed_in`` (a version ``X.Y.Z`` later than the package's)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in invarirank {removed_in}; use {new}",
        FutureWarning,
        stacklevel=stacklevel + 1,
    )
