"""Committed shards: the finished shards of a run still being computed, copied between its work folder
(``.work/shards/``) and its results folder (``shards/``), with the STELLA_LW calibrations they were computed with
(:data:`~invarirank.store._layout.CALIBRATIONS_FILE`) and the calibration parts computed so far
(:data:`~invarirank.store._layout.CALIBRATION_PARTS_DIR`). The package's docstring (:mod:`invarirank.store`) says
why."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from .._io import atomic_folder, atomic_path, read_json
from ..errors import InvariRankError
from ._layout import CALIBRATIONS_FILE, SHARD_FILES, RunFolder


def _finished_shards(root: Path) -> dict[str, Path]:
    """Finished shard folders under ``root`` by name: all :data:`SHARD_FILES`, not a temporary folder."""
    if not root.is_dir():
        return {}
    return {
        p.name: p
        for p in sorted(root.iterdir())
        if p.is_dir() and not p.name.startswith(".") and all((p / f).is_file() for f in SHARD_FILES)
    }


def _copy_shards(source: Path, dest: Path) -> list[str]:
    """Copy every finished shard folder of ``source`` that ``dest`` lacks or holds with other bytes; each one
    atomically (a temporary folder renamed into place). Returns the names copied."""
    copied = []
    theirs = _finished_shards(dest)
    for name, folder in _finished_shards(source).items():
        if name in theirs and all((folder / f).read_bytes() == (theirs[name] / f).read_bytes() for f in SHARD_FILES):
            continue
        with atomic_folder(dest / name) as tmp:
            for f in SHARD_FILES:
                shutil.copyfile(folder / f, tmp / f)
        copied.append(name)
    return copied


def committed_shards(target: str | os.PathLike) -> list[Path]:
    """The finished shard folders committed under a results folder (``<target>/shards/<shard>/``), sorted."""
    return list(_finished_shards(RunFolder(target).committed).values())


def committed_queries(target: str | os.PathLike) -> int:
    """Queries of an unfinished run already committed in shards under ``<target>/shards/`` (0 when none)."""
    return sum(len(read_json(shard / "shard.json").get("query_ids") or []) for shard in committed_shards(target))


def shard_query_ids(folder: str | os.PathLike) -> set[str]:
    """The query ids held by the finished shards of a run folder in progress (``<folder>/.work/shards/``), of
    whatever configuration (for estimates only: resuming checks each shard's fingerprint)."""
    out: set[str] = set()
    for shard in _finished_shards(RunFolder(folder).shards).values():
        try:
            out.update(str(q) for q in read_json(shard / "shard.json").get("query_ids") or [])
        except (OSError, ValueError, AttributeError):
            continue
    return out


def copy_file(source: Path, dest: Path) -> None:
    """Copy ``source`` over ``dest`` atomically when it exists and ``dest`` lacks its bytes."""
    if source.is_file() and not (dest.is_file() and dest.read_bytes() == source.read_bytes()):
        with atomic_path(dest) as tmp:
            shutil.copyfile(source, tmp)


def calibration_part_files(root: str | os.PathLike) -> dict[int, list[Path]]:
    """The calibration part files under a parts folder (``.work/calibration-parts/`` or ``shards/calibration-parts/``
    of a run, :data:`CALIBRATION_PARTS_DIR`), by K: ``k<K>/*.json``, sorted, hidden (temporary) files left out."""
    found: dict[int, list[Path]] = {}
    root = Path(root)
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and folder.name[:1] == "k" and folder.name[1:].isdigit():
            files = [f for f in sorted(folder.iterdir()) if f.is_file() and f.suffix == ".json" and f.name[0] != "."]
            if files:
                found[int(folder.name[1:])] = files
    return found


def _copy_parts(source: Path, dest: Path) -> list[str]:
    """Copy every calibration part file of ``source`` that ``dest`` lacks or holds with other bytes, each
    atomically; returns their paths relative to ``source``."""
    copied = []
    for files in calibration_part_files(source).values():
        for f in files:
            out = dest / f.parent.name / f.name
            if not (out.is_file() and out.read_bytes() == f.read_bytes()):
                copy_file(f, out)
                copied.append(f"{f.parent.name}/{f.name}")
    return copied


def export_calibration_parts(work_dir: str | os.PathLike, target: str | os.PathLike) -> list[str]:
    """Copy the calibration parts of a run's work folder (``<work>/.work/calibration-parts/``) into its results
    folder (``<target>/shards/calibration-parts/``), to be committed as they are computed (a calibration may take
    longer than a session); returns the files copied (``k<K>/<name>.json``). A results folder that already holds
    the finished run gets none."""
    if RunFolder(target).is_published():
        return []
    return _copy_parts(RunFolder(work_dir).calibration_parts, RunFolder(target).committed_calibration_parts)


def committed_calibration_parts(target: str | os.PathLike) -> dict[int, list[dict[str, Any]]]:
    """The calibration parts committed under a results folder (``<target>/shards/calibration-parts/``), read, by K;
    for estimates only (an unreadable file is left out: a resumed run checks each part and refuses it)."""
    out: dict[int, list[dict[str, Any]]] = {}
    for k, files in calibration_part_files(RunFolder(target).committed_calibration_parts).items():
        for f in files:
            try:
                record = read_json(f)
            except (OSError, ValueError):
                continue
            if isinstance(record, dict):
                out.setdefault(k, []).append(record)
    return out


def export_shards(work_dir: str | os.PathLike, target: str | os.PathLike) -> list[str]:
    """Copy the finished shards of a run's work folder (``<work>/.work/shards/``) into its results folder
    (``<target>/shards/``), to be committed before the run is finished, with the run's STELLA_LW calibrations
    (:data:`CALIBRATIONS_FILE`) once a shard is there and its calibration parts
    (:func:`export_calibration_parts`); returns the shard names copied. A results folder that already holds the
    finished run gets none."""
    if RunFolder(target).is_published():
        return []
    export_calibration_parts(work_dir, target)
    copied = _copy_shards(RunFolder(work_dir).shards, RunFolder(target).committed)
    if committed_shards(target):
        copy_file(RunFolder(work_dir).work / CALIBRATIONS_FILE, RunFolder(target).committed / CALIBRATIONS_FILE)
    return copied


def import_shards(target: str | os.PathLike, work_dir: str | os.PathLike) -> list[str]:
    """Copy the shards committed under a results folder (``<target>/shards/``) into the run's work folder
    (``<work>/.work/shards/``) so that a resumed run computes only the others, with their STELLA_LW calibrations
    (:data:`CALIBRATIONS_FILE`, into ``<work>/.work/``) and the calibration parts committed so far (into
    ``<work>/.work/calibration-parts/``: a resumed calibration computes only the other parts); returns the shard
    names copied."""
    _copy_parts(RunFolder(target).committed_calibration_parts, RunFolder(work_dir).calibration_parts)
    copied = _copy_shards(RunFolder(target).committed, RunFolder(work_dir).shards)
    copy_file(RunFolder(target).committed / CALIBRATIONS_FILE, RunFolder(work_dir).work / CALIBRATIONS_FILE)
    return copied


def has_committed_calibrations(target: str | os.PathLike) -> bool:
    """Whether a results folder's committed shards come with STELLA_LW calibrations (``<target>/shards/
    calibrations.json``), for estimates only: a resumed run checks each one (:func:`recorded_calibrations`)."""
    return (RunFolder(target).committed / CALIBRATIONS_FILE).is_file() and bool(committed_shards(target))


def recorded_calibrations(folder: str | os.PathLike) -> dict[int, dict[str, Any]]:
    """The STELLA_LW calibrations recorded with a run in progress (``<folder>/.work/calibrations.json``), by K;
    empty when there are none. An unreadable file is an error: the run's shards were computed with it."""
    path = RunFolder(folder).work / CALIBRATIONS_FILE
    if not path.is_file():
        return {}
    try:
        got = read_json(path)["calibrations"]
        return {int(k): dict(v) for k, v in got.items()}
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as e:
        raise InvariRankError(
            f"{path}: unreadable ({type(e).__name__}: {e}); expected the STELLA_LW calibrations "
            f'the run\'s shards were computed with, {{"calibrations": {{K: ...}}}}, as written '
            f"beside them; restore it (e.g. from git) or delete the run's shards"
        ) from None
