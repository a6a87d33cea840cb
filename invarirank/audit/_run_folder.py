"""An audit's run folder: the same files as every run (:mod:`invarirank.store`), written from an audit's rows.

Stability: caller (``invarirank audit --out RUN``). The folder holds

* ``observations.jsonl`` — the audit's rows (:func:`invarirank.audit`), through the observations writer;
* ``metrics.json`` — :func:`invarirank.evaluate` of those rows with a run's evaluation settings (cut-offs 1, 5, 10;
  exposure top-5; 1,000 bootstrap replicates seeded by the audit's seed), so it reads like every run's;
* ``manifest.json`` — deterministic: ``kind: "audit"``, the reranker identities, the design, the seed, the query
  count and ids, the order rule's repair counts per method, the observations' sha256 and the package version;
* ``run.json`` — the volatile facts (seconds, platform).

Files are written atomically, the manifest last, so a folder with a manifest is complete. A folder that holds
another kind of run (a manifest without ``kind: "audit"``) is refused, never overwritten.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from .._io import atomic_write_json, read_json
from ..errors import InvariRankError
from ..evaluation import evaluate, write_observations
from ..store import VOLATILE_FILE, RunFolder
from .driver import repair_totals

AUDIT_MANIFEST_VERSION = 1


def check_audit_folder(out: str | os.PathLike) -> Path:
    """Check, before any work, that ``out`` can hold an audit: a writable folder (or one that can be made) that
    holds no other kind of run (its ``manifest.json``, if any, is an audit's)."""
    from .._io import check_output_dir

    p = check_output_dir(out, "--out")
    manifest = RunFolder(p).file(RunFolder.MANIFEST)
    if manifest.is_file():
        old = read_json(manifest)
        if not isinstance(old, dict) or old.get("kind") != "audit":
            raise InvariRankError(
                f"{out}: holds another run (its manifest.json is not an audit's); choose another --out"
            )
    return p


def write_audit_run(
    out: str | os.PathLike,
    rows: Sequence[Mapping[str, Any]],
    *,
    rerankers: Sequence[Mapping[str, Any]],
    design: Mapping[str, Any],
    seed: int,
    seconds: float | None = None,
) -> dict[str, Any]:
    """Write the run folder ``out`` (module docstring) from ``rows``; returns its metrics. ``rerankers`` are the
    rerankers' identities, ``design`` the design's settings (:meth:`invarirank.audit.Design.to_json`)."""
    t0 = time.perf_counter()
    folder = RunFolder(check_audit_folder(out))
    manifest_path = folder.file(folder.MANIFEST)
    Path(out).mkdir(parents=True, exist_ok=True)
    obs = write_observations(folder.file(folder.OBSERVATIONS), rows)
    metrics = evaluate(obs, ks=(1, 5, 10), exposure_k=5, n_bootstrap=1000, seed=seed)
    atomic_write_json(folder.file(folder.METRICS), metrics)
    query_ids = list(dict.fromkeys(r["query_id"] for r in rows))
    manifest = {
        "manifest_version": AUDIT_MANIFEST_VERSION,
        "invarirank_version": __version__,
        "kind": "audit",
        "rerankers": [dict(r) for r in rerankers],
        "design": dict(design),
        "seed": seed,
        "queries": {"count": len(query_ids), "ids": query_ids},
        "rows": len(rows),
        "repairs": repair_totals(rows),
        "files": {
            "observations": folder.OBSERVATIONS,
            "metrics": folder.METRICS,
            "observations_sha256": hashlib.sha256(obs.read_bytes()).hexdigest(),
        },
    }
    volatile = {
        "run_version": 1,
        "timings": {
            "audit_seconds": None if seconds is None else round(seconds, 3),
            "write_seconds": round(time.perf_counter() - t0, 3),
        },
        "platform": platform.platform(),
    }
    atomic_write_json(folder.file(VOLATILE_FILE), volatile)
    atomic_write_json(manifest_path, manifest)
    return metrics
