"""Where a project lies: the invarirank checkout at or above a folder, and the project root where ``results/``,
``runs/``, ``notebooks/`` and ``book/`` are found (never the installed package's own folder)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvariRankError


def checkout_root(start: str | os.PathLike | None = None) -> Path | None:
    """The invarirank checkout at or above ``start`` (default: the working directory): the nearest folder holding
    ``_toc.yml`` and ``configs/``; ``None`` outside any checkout."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "configs").is_dir():
            return folder
    return None


def project_root(
    start: str | os.PathLike | None = None,
    *,
    grid_file: str | os.PathLike | None = None,
    instead: str = "run from the checkout",
) -> Path:
    """The project root, where ``results/``, ``runs/``, ``notebooks/`` and ``book/`` lie: the checkout holding
    ``grid_file`` when one is given and lies in a checkout, else the checkout at or above ``start`` (default: the
    working directory). Never the installed package's own folder: outside a checkout this is an error that says
    what to do (``instead``; a run started there would otherwise publish into the package's tree)."""
    if grid_file is not None:
        root = checkout_root(Path(grid_file).absolute().parent)
        if root is not None:
            return root
    root = checkout_root(start)
    if root is None:
        here = Path(start or os.getcwd()).absolute()
        raise InvariRankError(
            f"{here}: not inside an invarirank checkout (no folder at or above it holds _toc.yml "
            f"and configs/); {instead}"
        )
    return root
