"""The run's provenance and ``manifest.json``: package versions, git state, and the manifest built from its
sections (:mod:`invarirank.runner.records`).

The manifest holds only deterministic content (see :mod:`invarirank.store` for the split); everything that varies
between equal runs goes to the volatile ``run.json``. Paths are made portable by :func:`portable_paths`: a path
inside the project root is written relative to it, one inside the cache root as ``$INVARIRANK_CACHE/<rel>``, and
any other absolute path (and the run folder itself, ``out``, and the cache folder, ``cache_dir``, which say where a
run was written and cached, never what it computed, however they were spelt) is left out of the manifest (``null``)
and recorded in the volatile file's ``paths`` instead."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from .._io import sha256_file
from ..store import RunFolder
from ._config import RunConfig
from ._queries import QuerySet
from .records import FilesSection, Manifest, PassesSection, QueriesSection

#: settings and data-section keys that hold a file or folder path (made portable in the manifest)
PATH_KEYS = frozenset({"out", "cache_dir", "raw_dir", "data_dir", "candidates", "candidates_file", "retrieval_dir"})

#: path settings that say only where a run is written or cached: never in the manifest (a relative or absolute
#: spelling of one folder would otherwise give two manifests for one run)
_WHERE_ONLY = frozenset({"out", "cache_dir"})

_PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "scipy",
    "tqdm",
    "pyyaml",
    "safetensors",
    "torch",
    "transformers",
    "accelerate",
    "gguf",
    "implicit",
    "seaborn",
    "matplotlib",
)

#: how every random choice of a run is seeded (the manifest's ``seeds`` section states it for the reader)
_ORDERS_SEEDING = (
    "order t of a query: numpy default_rng(blake2b64('{seed}|{query_id}|order|{t}')), "
    "redrawn while equal to the retrieval order"
)
_METHOD_SEEDING = "blake2b64('{seed}|{query_id}|{t}|shuffle|{j}') and '{seed}|{query_id}|{t}|sgs|{step}'"


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that matter (from installed metadata; nothing is imported)."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": platform.python_version(), "invarirank": __version__}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info() -> dict[str, Any]:
    """The git commit of the package's checkout (None outside git) and whether its tree is dirty."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = (
            subprocess.run(
                ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or None
        )
        dirty = None
        if commit:
            status = subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=20,
            )
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def sha256_json(obj: Any) -> str:
    """sha256 of ``obj`` as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


def _portable(value: str, root: Path, cache: Path) -> str | None:
    p = Path(value)
    if not p.is_absolute():
        return value
    p = Path(os.path.normpath(p))
    for base, shown in ((root, None), (cache, "$INVARIRANK_CACHE")):
        try:
            rel = p.relative_to(base).as_posix()
        except ValueError:
            continue
        return rel if shown is None else f"{shown}/{rel}"
    return None


def portable_paths(
    obj: Any, moved: dict[str, str], *, root: Path | None = None, cache: Path | None = None, where: str = ""
) -> Any:
    """A copy of ``obj`` (nested dicts/lists) whose :data:`PATH_KEYS` values are portable (see the module
    docstring); ``out`` and ``cache_dir`` are always left out. Every value changed is recorded in ``moved`` as
    ``{"dotted.key": original}`` (it goes to the volatile file)."""
    from ..assets import cache_dir as default_cache_dir
    from ..store import checkout_root

    # outside a checkout, paths are made portable against the folder above the package (as they always were)
    root = Path(os.path.normpath(root or checkout_root() or Path(__file__).resolve().parents[2]))
    cache = Path(os.path.normpath(cache or default_cache_dir()))
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            here = f"{where}.{key}" if where else str(key)
            if key in PATH_KEYS and isinstance(value, str):
                new = None if key in _WHERE_ONLY else _portable(value, root, cache)
                if new != value:
                    moved[here] = value
                out[key] = new
            else:
                out[key] = portable_paths(value, moved, root=root, cache=cache, where=here)
        return out
    if isinstance(obj, list):
        return [portable_paths(v, moved, root=root, cache=cache, where=f"{where}[{i}]") for i, v in enumerate(obj)]
    return obj


def _per_method(config: RunConfig, rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for name in config.methods:
        counts = [row["passes"] for row in rows if row["method"] == name]
        out[name] = {
            "passes": int(sum(counts)),
            "orders": len(counts),
            "per_order_mean": round(sum(counts) / len(counts), 6) if counts else None,
            "per_order_min": min(counts) if counts else None,
            "per_order_max": max(counts) if counts else None,
        }
    return out


def build_manifest(
    config: RunConfig,
    *,
    out: Path,
    fingerprint: str,
    queries: QuerySet,
    test_sha256: str,
    identity: Mapping[str, Any],
    calibrations: Mapping[int, Any],
    records: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    moved_paths: dict[str, str],
    inputs: Mapping[str, str] | None = None,
) -> Manifest:
    """The manifest of a finished run in ``out`` (its observations already written): settings (execution
    settings such as ``shard_queries`` left out: they go to the volatile file), data and first-stage
    provenance, the queries, the scorer's ``identity``, seeds, pass counts from the checkpointed ``records``,
    files, versions, and the content hashes of the user's ``inputs`` (none for the embedded data). Paths are made
    portable; the originals are added to ``moved_paths``."""
    requests = sum(r["requests"] for r in records)
    hits = sum(r["hits"] for r in records)
    qs = queries
    settings = {k: v for k, v in config.to_dict().items() if k not in config.execution_fields()}
    return Manifest(
        invarirank_version=__version__,
        fingerprint=fingerprint,
        config=portable_paths(settings, moved_paths, where="config"),
        data=portable_paths(qs.info, moved_paths, where="data"),
        queries=QueriesSection(
            count=len(qs.test),
            ids=[q.query_id for q in qs.test],
            k=sorted({q.k for q in qs.test}),
            validation_available=len(qs.validation),
            fingerprint=test_sha256,
        ),
        model=dict(identity),
        methods=list(config.methods),
        seeds={
            "seed": config.seed,
            "retrieval_seed": config.retrieval_seed,
            "orders": _ORDERS_SEEDING,
            "method_shuffles": _METHOD_SEEDING,
            "noise_floor": config.noise_floor,
        },
        passes=PassesSection(
            per_method=_per_method(config, rows),
            requested=requests,
            scorer_calls=sum(r["misses"] for r in records),
            shared_cache_hits=hits,
            shared_cache_hit_rate=round(hits / requests, 6) if requests else None,
            calibration={
                str(k): {"passes": c.passes, "queries": len(c.query_ids), "key": c.key} for k, c in calibrations.items()
            },
        ),
        files=FilesSection(
            observations=RunFolder.OBSERVATIONS,
            metrics=RunFolder.METRICS,
            calibration=RunFolder.CALIBRATION if calibrations else None,
            observations_sha256=sha256_file(RunFolder(out).file(RunFolder.OBSERVATIONS)),
        ),
        packages=package_versions(),
        inputs=dict(inputs or {}),
    )
