"""The output folder of a preparation (``--out``): the cache key of a complete prepared folder, what may be replaced
(an empty folder or an earlier prepared one, never anything else), and installing the finished temporary folder
in its place, so that a folder is either the earlier preparation or the new one, never half of each.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .._io import read_json
from ..errors import InvariRankError
from ._prepared import MANIFEST_KIND, TABLES, Prepared, format_stats, load_prepared  # noqa: F401 (re-exported)


def prepared_key(folder: Path) -> str | None:
    """The cache key of a complete prepared folder, or None."""
    try:
        manifest = read_json(folder / "manifest.json")
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        return None
    if not all((folder / name).is_file() for name in TABLES):
        return None
    return manifest.get("key")


def check_target(target: Path) -> None:
    """Refuse to replace anything that is not an empty folder or an earlier prepared folder."""
    if not target.exists():
        return
    if not target.is_dir():
        raise InvariRankError(f"{target}: exists and is not a folder; expected a new or empty folder for --out")
    if not any(target.iterdir()):
        return
    try:
        manifest = read_json(target / "manifest.json")
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise InvariRankError(
            f"{target}: folder is not empty and holds no prepared data; expected a new or "
            "empty folder (or an earlier output of `invarirank data prepare`)"
        )


def install_folder(tmp: Path, target: Path) -> None:
    """Move the finished temporary folder onto ``target`` (replacing an earlier prepared folder)."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
