"""The run folder: what a finished run holds on disk, and how it is found, read and published.

A finished run lives in ``<results>/<grid>/<run>/`` and holds exactly :data:`RESULT_FILES`::

    observations.jsonl.gz   one line per (query, method, presented order) — the public observations schema
    manifest.json           settings, versions, cost; ``grid_run`` = the run's settings, ``complete: true``
    metrics.json            invarirank.evaluation.evaluate(observations)
    run.json                the volatile facts of the session that computed it (wall times, workers, ...)

The first three (:data:`RUN_FILES`) are the run: they are deterministic and make a folder complete; ``run.json`` is
published beside them as the record of how long it took and where, and is never compared.

A work folder (``runs/<grid>/<run>/``, or any ``invarirank rerank --out`` folder) holds the same files with the
observations uncompressed (``observations.jsonl``) while the run is computed, plus ``.work/`` until it finishes
(``.work/shards/<shard>/``: the finished shards, the one resume record, see :mod:`invarirank.runner.shards`), plus
the **volatile file** ``run.json``. :class:`RunFolder` owns this layout: every other module asks it for the paths.

**Deterministic and volatile** (defined here, once): ``manifest.json`` holds only what equal runs share, so two
runs of one configuration write the same manifest whichever executor, shard size, thread count, machine or
session made them; it records no absolute path of the machine (a path inside the project is written relative
to the project root, one inside ``$INVARIRANK_CACHE`` as ``$INVARIRANK_CACHE/...``, any other is left out).
``run.json`` holds what varies: timings, hosts, processes, the git checkout, model loads, the executor and its
shard size and threads, per-shard counters and the machine's paths. ``publish_run`` copies it beside the
deterministic files; a folder without it is still complete (:func:`read_volatile` then gives ``{}``), so that two
equal runs have byte-identical published files whatever machines made them.

**Committed shards.** A long run can be committed piece by piece: while it is computed, every finished shard of its
work folder (``.work/shards/<shard>/``) is copied into ``<results>/<grid>/<run>/shards/<shard>/``
(:func:`export_shards`), and a later session — on this machine or a fresh clone — copies them back into its work
folder before computing (:func:`import_shards`), so only the missing shards are computed. Such a folder holds
*only* ``shards/``; it is never a finished run (:func:`complete_runs` skips it) and :func:`publish_run` removes
``shards/`` once the run's files are written. A shard holds ``shard.json`` (run, id, query ids, the run's
fingerprint), ``records.jsonl`` and ``volatile.json`` (its worker and timings; no machine path); a shard of
another configuration is refused when the run resumes (:class:`invarirank.runner.shards.ShardFolders`). Beside
them, ``shards/calibrations.json`` (:data:`CALIBRATIONS_FILE`) holds the STELLA_LW calibrations the shards were
computed with, so that a fresh machine takes them instead of computing them again.

:meth:`RunFolder.status` is the one reuse check: a folder's status against a run's identity (the settings that change
its results, :meth:`invarirank.runner.RunConfig.identity`). This module knows the folder, not how a run is
computed (``invarirank.runner``) or shown (``invarirank.compendium``). It imports only the core modules and
``invarirank.evaluation``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .errors import InvariRankError
from .evaluation.engine import METRICS_SCHEMA_VERSION, evaluate
from .evaluation.observations import read_text
from .evaluation.references import FIRST_STAGE_FILE
from .io import atomic_folder, atomic_path, atomic_write_json, atomic_write_text, read_json
from .locks import LOCK_NAME

__all__ = [
    "RESULT_FILES",
    "OPTIONAL_RESULT_FILES",
    "RUN_FILES",
    "VOLATILE_FILE",
    "read_volatile",
    "Run",
    "load_run",
    "complete_runs",
    "publish_run",
    "find_observations",
    "RunFolder",
    "identity_difference",
    "project_root",
    "checkout_root",
    "RunStatus",
    "refresh_metrics",
    "SHARDS_DIR",
    "SHARD_FILES",
    "CALIBRATIONS_FILE",
    "export_shards",
    "import_shards",
    "committed_shards",
    "committed_queries",
    "recorded_calibrations",
    "has_committed_calibrations",
]

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
#: The files of one finished shard (:mod:`invarirank.runner.shards`).
SHARD_FILES = ("shard.json", "records.jsonl", "volatile.json")
#: STELLA_LW's calibrations of a run in progress, beside its shards (``.work/`` and ``shards/``): what its shards'
#: STELLA_LW rows were computed with, so that a later session on a fresh machine takes them instead of computing
#: them again (:meth:`invarirank.methods.stella.Calibration.to_record`, by K)
CALIBRATIONS_FILE = "calibrations.json"


class RunFolder:
    """One run folder — a work folder (``runs/<grid>/<run>/``, an ``invarirank rerank --out`` folder) or a
    published one (``results/<grid>/<run>/``) — and the one owner of its layout (see the module docstring):

    * the run's files: :data:`WORK_FILES` while it is computed (observations uncompressed), :data:`RESULT_FILES`
      once published;
    * ``.work/`` (:attr:`work`) while a run is in progress, with the finished shards in ``.work/shards/``
      (:attr:`shards`, :mod:`invarirank.runner.shards`);
    * ``shards/`` (:attr:`committed`): the shards of a run still being computed, committed in a results folder;
    * ``.lock`` (:attr:`lock`): the writer's lock (:func:`invarirank.locks.folder_lock`), never a run file.
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


@dataclass
class Run:
    """A finished run folder: its settings (from the manifest's ``grid_run``, else its ``config``),
    metrics and manifest. ``K`` is the list length; ``n_queries`` the queries actually reranked; ``methods``
    in the order of ``metrics.json``."""

    path: Path
    grid: str
    name: str
    dataset: str
    model: str
    scorer: str
    retriever: str
    K: int
    M: int
    n_queries: int
    methods: list[str]
    metrics: dict[str, Any]
    manifest: dict[str, Any]
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def volatile(self) -> dict[str, Any]:
        """What varied in the session that made the run (:func:`read_volatile`; ``{}`` when nothing is recorded)."""
        return read_volatile(self.path)

    @property
    def observations(self) -> Path:
        """The observations file (``observations.jsonl.gz`` when published, else ``observations.jsonl``)."""
        gz = self.path / "observations.jsonl.gz"
        return gz if gz.is_file() else self.path / "observations.jsonl"


def load_run(path: str | os.PathLike) -> Run:
    """Read one run folder (``metrics.json`` + ``manifest.json``)."""
    p = Path(path)
    try:
        metrics = read_json(p / "metrics.json")
        manifest = read_json(p / "manifest.json")
    except (OSError, ValueError) as exc:
        raise InvariRankError(f"{p}: not a finished run folder ({exc})") from None
    spec = dict(manifest.get("grid_run") or {})
    config = manifest.get("config") or {}
    queries = manifest.get("queries") or {}
    ks = queries.get("k") or [spec.get("K") or config.get("K") or config.get("k")]
    methods = list(metrics.get("methods", {}))
    first_method: dict[str, Any] = next(iter(metrics.get("methods", {}).values()), {})
    any_overall = first_method.get("overall", {})
    return Run(
        path=p,
        grid=p.parent.name,
        name=p.name,
        dataset=str(spec.get("label") or spec.get("dataset") or config.get("dataset") or "?"),
        model=str(spec.get("model") or config.get("model") or (manifest.get("model") or {}).get("model") or "?"),
        scorer=str(spec.get("scorer") or config.get("scorer") or "?"),
        retriever=str(spec.get("retriever") or config.get("retriever") or "?"),
        K=int(max(int(k) for k in ks if k is not None)),
        M=int(spec.get("M") or config.get("M") or config.get("m") or 0),
        n_queries=int(queries.get("count") or any_overall.get("queries") or 0),
        methods=methods,
        metrics=metrics,
        manifest=manifest,
        spec=spec,
    )


def read_volatile(folder: str | os.PathLike) -> dict[str, Any]:
    """The volatile facts of a run folder: its ``run.json``, or ``{}`` without one (a folder is complete without
    it: the facts that vary between equal runs are never needed to reuse or read a run)."""
    p = Path(folder)
    if (p / VOLATILE_FILE).is_file():
        return dict(read_json(p / VOLATILE_FILE))
    return {}


def complete_runs(results_dir: str | os.PathLike, grids: Iterable[str] | None = None) -> list[Path]:
    """Folders under ``results_dir/<grid>/`` holding all :data:`RUN_FILES` (sorted)."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    wanted = None if grids is None else set(grids)
    out = []
    for grid_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if wanted is not None and grid_dir.name not in wanted:
            continue
        for run in sorted(p for p in grid_dir.iterdir() if p.is_dir()):
            if RunFolder(run).is_published():
                out.append(run)
    return out


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


def identity_difference(wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> list[str]:
    """The settings in which two identities differ (sorted), for a "mismatch" message."""
    return sorted(k for k in set(wanted) | set(stored) if wanted.get(k) != stored.get(k))


def find_observations(folder: str | os.PathLike) -> Path | None:
    """The observations file of a (work or published) run folder, or ``None``."""
    for name in ("observations.jsonl", "observations.jsonl.gz"):
        if (Path(folder) / name).is_file():
            return Path(folder) / name
    return None


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
    _copy_file(work / "metrics.json", target / "metrics.json")
    if (work / FIRST_STAGE_FILE).is_file():
        _copy_file(work / FIRST_STAGE_FILE, target / FIRST_STAGE_FILE)
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


def _copy_file(source: Path, dest: Path) -> None:
    """Copy ``source`` over ``dest`` atomically when it exists and ``dest`` lacks its bytes."""
    if source.is_file() and not (dest.is_file() and dest.read_bytes() == source.read_bytes()):
        with atomic_path(dest) as tmp:
            shutil.copyfile(source, tmp)


def export_shards(work_dir: str | os.PathLike, target: str | os.PathLike) -> list[str]:
    """Copy the finished shards of a run's work folder (``<work>/.work/shards/``) into its results folder
    (``<target>/shards/``), to be committed before the run is finished, with the run's STELLA_LW calibrations
    (:data:`CALIBRATIONS_FILE`) once a shard is there; returns the shard names copied. A results folder that
    already holds the finished run gets none."""
    if RunFolder(target).is_published():
        return []
    copied = _copy_shards(RunFolder(work_dir).shards, RunFolder(target).committed)
    if committed_shards(target):
        _copy_file(RunFolder(work_dir).work / CALIBRATIONS_FILE, RunFolder(target).committed / CALIBRATIONS_FILE)
    return copied


def import_shards(target: str | os.PathLike, work_dir: str | os.PathLike) -> list[str]:
    """Copy the shards committed under a results folder (``<target>/shards/``) into the run's work folder
    (``<work>/.work/shards/``) so that a resumed run computes only the others, with their STELLA_LW calibrations
    (:data:`CALIBRATIONS_FILE`, into ``<work>/.work/``); returns the shard names copied."""
    copied = _copy_shards(RunFolder(target).committed, RunFolder(work_dir).shards)
    _copy_file(RunFolder(target).committed / CALIBRATIONS_FILE, RunFolder(work_dir).work / CALIBRATIONS_FILE)
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
