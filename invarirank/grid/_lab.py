"""Where the teaching lab reads its precomputed sweep from, wherever its notebook runs.

Inside a checkout the sweep is the committed ``results/<grid>/<shape>-s<strength>/`` runs. A student's copy of the
notebook, saved outside any checkout, has no results folder: it carries the grid file's ``lab:`` section instead
(the book writes it into the student version), and the same runs are computed here, into the cache, once. The
sweep is deterministic (simulated scorer, seeded synthetic candidates), so these runs are the committed ones byte
for byte; a second opening reuses them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..runner import ensure_runs
from ..store import checkout_root
from ._spec import _check_lab, lab_runs


def sweep_results(
    results_dir: str | os.PathLike | None = None,
    settings: Mapping[str, Any] | None = None,
    *,
    cache: str | os.PathLike | None = None,
) -> Path:
    """The results folder that holds the lab's sweep (read it with :func:`invarirank.compendium._lab.sweep_frame`):
    ``results_dir`` when given; else ``results/`` of the checkout at or above the working directory; else (a
    notebook saved outside any checkout) ``<cache>/lab-sweep/<settings hash>/results`` with the sweep of
    ``settings`` (a grid file's ``lab:`` section) computed there now, or reused when an earlier call computed it.
    ``cache`` defaults to ``$INVARIRANK_CACHE`` or ``~/.cache/invarirank``."""
    if results_dir is not None:
        return Path(results_dir)
    root = checkout_root()
    if root is not None:
        return root / "results"
    if settings is None:
        raise InvariRankError(
            f"{Path.cwd()}: not inside an invarirank checkout, and no lab sweep settings were given: open the lab "
            "from a clone (notebooks/lab.ipynb), or use the student notebook of the book, which carries them"
        )
    _check_lab(dict(settings), "lab sweep settings")
    key = hashlib.sha256(json.dumps(dict(settings), sort_keys=True).encode()).hexdigest()[:12]
    if cache is None:
        from ..assets import cache_dir

        cache = cache_dir()
    folder = Path(cache) / "lab-sweep" / key
    configs = lab_runs(settings)
    print(
        f"lab: no checkout here; the sweep's {len(configs)} simulated runs are computed in {folder} "
        "(about a minute of CPU time, once; a later opening reuses them)",
        file=sys.stderr,
        flush=True,
    )
    started = time.perf_counter()
    ensure_runs(configs, results_dir=folder / "results", work_dir=folder / "work", progress=True)
    print(f"lab: the sweep is ready ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return folder / "results"
