"""The run folder's layout: the file names of a run, work and published, and :class:`RunFolder`, which owns them.

The layout is described once in :mod:`invarirank.store` (the package's docstring); this module names its files and
answers the one reuse check (:meth:`RunFolder.status`). It holds no result: a finished run, read, is
:class:`invarirank.store.Run`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from .._io import read_json
from .._locks import LOCK_NAME
from ..evaluation._references import FIRST_STAGE_FILE
from ..evaluation.engine import METRICS_SCHEMA_VERSION

#: a run folder's status against a run's identity (see :meth:`RunFolder.status`)
RunStatus = Literal["complete", "missing", "incomplete", "mismatch", "outdated", "old-metrics"]

#: The files that are a finished run: deterministic (equal runs give equal bytes); all three make a folder complete.
RUN_FILES = ("observations.jsonl.gz", "manifest.json", "metrics.json")
#: The volatile file of a run folder (timings, hosts, workers; see the module docstring).
VOLATILE_FILE = "run.json"
#: The files of a published run folder: :data:`RUN_FILES` and the volatile file.
RESULT_FILES = (*RUN_FILES, VOLATILE_FILE)
#: Files a published run folder may hold beside them: the first stage's rankings (the reference rows' input)
OPTIONAL_RESULT_FILES = (FIRST_STAGE_FILE,)
#: The folder of a results folder that holds the committed shards of a run still being computed.
SHARDS_DIR = "shards"
#: The files of one finished shard (:mod:`invarirank.runner._shards`).
SHARD_FILES = ("shard.json", "records.jsonl", "volatile.json")
#: STELLA_LW's calibrations of a run in progress, beside its shards (``.work/`` and ``shards/``): what its shards'
#: STELLA_LW rows were computed with, so that a later session on a fresh machine takes them instead of computing
#: them again (:meth:`invarirank.methods.stella.Calibration.to_record`, by K)
CALIBRATIONS_FILE = "calibrations.json"
#: The folder of STELLA_LW's calibration parts beside a run's shards (``.work/`` and ``shards/``): one JSON file per
#: probing query and K, ``calibration-parts/k<K>/<name>.json`` (:func:`calibration_part_name`), written as each
#: part is computed, so that a calibration longer than a session resumes (:mod:`invarirank.methods._calibration_parts`)
CALIBRATION_PARTS_DIR = "calibration-parts"


def calibration_part_name(query_id: str) -> str:
    """The file name of a probing query's calibration part: the query id with every character outside
    ``[A-Za-z0-9_-]`` replaced by ``_`` (at most 60 of them), ``-`` and the first 10 hex digits of the id's sha256
    (two ids never share a name), ``.json``."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", query_id)[:60]
    return f"{safe}-{hashlib.sha256(query_id.encode('utf-8')).hexdigest()[:10]}.json"


class RunFolder:
    """One run folder — a work folder (``runs/<grid>/<run>/``, an ``invarirank rerank --out`` folder) or a
    published one (``results/<grid>/<run>/``) — and the one owner of its layout (see the module docstring):

    * the run's files: :data:`WORK_FILES` while it is computed (observations uncompressed), :data:`RESULT_FILES`
      once published;
    * ``.work/`` (:attr:`work`) while a run is in progress, with the finished shards in ``.work/shards/``
      (:attr:`shards`, :mod:`invarirank.runner._shards`);
    * ``shards/`` (:attr:`committed`): the shards of a run still being computed, committed in a results folder;
    * ``.lock`` (:attr:`lock`): the writer's lock (:func:`invarirank._locks.folder_lock`), never a run file.

    It is a handle on a folder, not a result: it holds nothing read from the files, and the run in it may be
    missing, in progress or finished. A finished run, read, is :class:`invarirank.store.Run` (``Run.folder`` gives
    its ``RunFolder``).
    """

    OBSERVATIONS = "observations.jsonl"
    METRICS = "metrics.json"
    MANIFEST = "manifest.json"
    CALIBRATION = "calibration.json"
    #: the files a run writes into its (work) folder, manifest last
    WORK_FILES = (OBSERVATIONS, METRICS, CALIBRATION, VOLATILE_FILE, MANIFEST)

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def work(self) -> Path:
        """``.work/``: present while a run is in progress in this folder."""
        return self.path / ".work"

    @property
    def shards(self) -> Path:
        """``.work/shards/``: the finished shards of the run in progress (the one resume record)."""
        return self.work / "shards"

    @property
    def committed(self) -> Path:
        """``shards/``: shards committed in a results folder before the run is finished."""
        return self.path / SHARDS_DIR

    @property
    def calibration_parts(self) -> Path:
        """``.work/calibration-parts/``: the calibration parts computed for the run in progress (the calibration's
        journal, :data:`CALIBRATION_PARTS_DIR`)."""
        return self.work / CALIBRATION_PARTS_DIR

    @property
    def committed_calibration_parts(self) -> Path:
        """``shards/calibration-parts/``: the calibration parts committed in a results folder."""
        return self.committed / CALIBRATION_PARTS_DIR

    def calibration_part(self, k: int, query_id: str) -> Path:
        """The journal file of the calibration part of probing query ``query_id`` at K = ``k``."""
        return self.calibration_parts / f"k{k}" / calibration_part_name(query_id)

    @property
    def lock(self) -> Path:
        """``.lock``: the writer's lock file."""
        return self.path / LOCK_NAME

    def file(self, name: str) -> Path:
        """The path of one of the run's files (e.g. :attr:`MANIFEST`)."""
        return self.path / name

    def observations(self) -> Path | None:
        """The observations file (``observations.jsonl`` or, published, ``observations.jsonl.gz``), or ``None``."""
        return find_observations(self.path)

    def is_published(self) -> bool:
        """Whether the folder holds every one of :data:`RUN_FILES` (a published, finished run)."""
        return all((self.path / f).is_file() for f in RUN_FILES)

    def clear_run(self) -> None:
        """Remove the run's files (:data:`WORK_FILES`) of a finished run that is to be computed again; ``.work/``
        and the lock stay."""
        for name in self.WORK_FILES:
            (self.path / name).unlink(missing_ok=True)

    def clear_work(self) -> None:
        """Remove ``.work/`` (the run is finished: its files hold every record)."""
        shutil.rmtree(self.work, ignore_errors=True)

    def status(
        self,
        identity: Mapping[str, Any],
        identity_of: Callable[[Mapping[str, Any]], Mapping[str, Any]],
        versions: Mapping[str, Any] | None = None,
    ) -> RunStatus:
        """The one reuse check of this folder against the run that is wanted:

        * ``"missing"``: none of its files; ``"incomplete"``: some, an unreadable or unfinished manifest, or a run
          in progress (``.work/``);
        * ``"mismatch"``: complete, but made with other settings (another run's folder: never overwritten);
        * ``"outdated"``: the same settings, but made by a scorer of other ``versions`` (the manifest's ``model``
          section: scorer and prompt-template versions; a code change that alters scores): to be computed again;
        * ``"old-metrics"``: up to date but its ``metrics.json`` is of an older schema: to be re-evaluated from its
          observations (:func:`refresh_metrics`), nothing recomputed;
        * ``"complete"``: to be reused as it is.

        ``identity_of(manifest)`` reads the identity a stored manifest describes (the run schema's
        :meth:`~invarirank.runner.RunConfig.identity_of_manifest`; it reads every manifest version written so far).
        The runner's :func:`invarirank.runner.run_status` calls it with a run config's identity.
        """
        p = self.path
        present = [self.observations() is not None, (p / self.MANIFEST).is_file(), (p / self.METRICS).is_file()]
        if not any(present):
            return "missing"
        if not all(present) or self.work.exists():
            return "incomplete"
        try:
            manifest = read_json(p / self.MANIFEST)
            metrics = read_json(p / self.METRICS)
        except (OSError, ValueError):
            return "incomplete"
        if not isinstance(manifest, dict) or not manifest.get("complete", True):
            return "incomplete"
        if dict(identity_of(manifest)) != dict(identity):
            return "mismatch"
        stored = manifest.get("model") or {}
        if versions is not None and any(stored.get(k) != v for k, v in versions.items()):
            return "outdated"
        if not isinstance(metrics, dict) or int(metrics.get("schema_version", 1)) < METRICS_SCHEMA_VERSION:
            return "old-metrics"
        return "complete"


def read_volatile(folder: str | os.PathLike) -> dict[str, Any]:
    """The volatile facts of a run folder: its ``run.json``, or ``{}`` without one (a folder is complete without
    it: the facts that vary between equal runs are never needed to reuse or read a run)."""
    p = Path(folder)
    if (p / VOLATILE_FILE).is_file():
        return dict(read_json(p / VOLATILE_FILE))
    return {}


def identity_difference(wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> list[str]:
    """The settings in which two identities differ (sorted), for a "mismatch" message."""
    return sorted(k for k in set(wanted) | set(stored) if wanted.get(k) != stored.get(k))


def find_observations(folder: str | os.PathLike) -> Path | None:
    """The observations file of a (work or published) run folder, or ``None``."""
    for name in ("observations.jsonl", "observations.jsonl.gz"):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None
