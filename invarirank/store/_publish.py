"""A run's files from its work folder into its results folder (:func:`publish_run`), and a finished run's
``metrics.json`` re-evaluated from its own observations (:func:`refresh_metrics`): the two ways a published run's
files are written. Every file is written atomically, the manifest last."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._io import atomic_write_json, atomic_write_text, read_json
from ..errors import InvariRankError
from ..evaluation._references import FIRST_STAGE_FILE
from ..evaluation.engine import evaluate
from ..evaluation.observations import read_text
from ._layout import VOLATILE_FILE, RunFolder, find_observations
from ._shards import copy_file


def refresh_metrics(folder: str | os.PathLike) -> Path:
    """Rewrite a finished run's ``metrics.json`` with this version's evaluation of its own observations, under
    the settings the old file records (the schema has grown; the observations are the run's evidence and stay
    as they are), with the first-stage reference when the folder holds ``first_stage.jsonl.gz``. Written
    atomically."""
    p = Path(folder)
    settings = read_json(p / "metrics.json").get("settings") or {}
    obs = find_observations(p)
    if obs is None:
        raise InvariRankError(f"{p}: no observations file to evaluate")
    keep = {
        "ks": "ks",
        "exposure_k": "exposure_k",
        "buckets": "buckets",
        "exact_kemeny_max_k": "exact_kemeny_max_k",
        "bootstrap": "n_bootstrap",
        "seed": "seed",
        "permutations": "n_permutations",
        "reference_replicates": "reference_replicates",
    }
    first_stage = p / FIRST_STAGE_FILE
    metrics = evaluate(
        obs,
        **{arg: settings[key] for key, arg in keep.items() if key in settings},
        first_stage=first_stage if first_stage.is_file() else None,
    )
    atomic_write_json(p / "metrics.json", metrics)
    return p / "metrics.json"


def publish_run(work_dir: str | os.PathLike, target: str | os.PathLike, grid_run: Mapping[str, Any]) -> Path:
    """Copy a finished run from its work folder into its results folder ``target``.

    The observations are written gzip-compressed (deterministically), ``first_stage.jsonl.gz`` and ``run.json``
    are copied when the work folder has them (``run.json`` without its ``paths``: the machine's absolute paths stay
    in the work folder), the manifest gains ``grid_run`` (the run's settings, JSON) and ``complete: true``; every
    file is written atomically, the manifest last, so a folder with a complete manifest is a complete run.
    """
    work, target = Path(work_dir), Path(target)
    obs = find_observations(work)
    if obs is None:
        raise InvariRankError(f"{work}: no observations file to publish")
    for needed in ("manifest.json", "metrics.json"):
        if not (work / needed).is_file():
            raise InvariRankError(f"{work}: {needed} missing; the run is not finished")
    target.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target / "observations.jsonl.gz", read_text(obs), compress=True)
    copy_file(work / "metrics.json", target / "metrics.json")
    if (work / FIRST_STAGE_FILE).is_file():
        copy_file(work / FIRST_STAGE_FILE, target / FIRST_STAGE_FILE)
    else:
        (target / FIRST_STAGE_FILE).unlink(missing_ok=True)
    if (work / VOLATILE_FILE).is_file():  # the machine's own paths stay in the work folder
        volatile = {k: v for k, v in read_json(work / VOLATILE_FILE).items() if k != "paths"}
        atomic_write_json(target / VOLATILE_FILE, volatile)
    manifest = read_json(work / "manifest.json")
    manifest["grid_run"] = dict(grid_run)
    manifest["complete"] = True
    atomic_write_json(target / "manifest.json", manifest)
    shutil.rmtree(RunFolder(target).committed, ignore_errors=True)  # the run's files now hold every record
    return target
