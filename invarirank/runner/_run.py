"""The one path from run configs to finished run folders: :func:`ensure_runs` (many runs, one executor);
:func:`ensure_run` and :func:`run_experiment` are its one-element cases.

Where a run lives (:func:`run_folder`): in ``config.out`` when it is given (``invarirank rerank --out``: the run is
computed in that folder), else published as ``results/<grid>/<run>/`` (a grid, a notebook: computed in the work
folder ``runs/<grid>/<run>/``, then :func:`invarirank.store.publish_run`). A folder that holds the finished run is
reused (its metrics re-evaluated if of an older schema, :func:`invarirank.store.refresh_metrics`); one that holds a
finished run of *another* identity is never overwritten (an error naming the folder and the settings that differ);
one made by another scorer or template version is computed again.

Every run is computed the same way (:mod:`invarirank.runner._sharded`): prepared once on the driver
(:func:`~invarirank.runner._phases.prepare_run`: data, first stage, the scorer's identity from a worker,
STELLA_LW's calibration), its queries reranked in shards by an executor — the local one (this process, one query
per shard unless the run sets ``shard_queries``) or Ray — each finished shard written into ``.work/shards/`` (the
one resume record), then merged in run order (:func:`~invarirank.runner._phases.finish_run`). The run folder holds

* ``observations.jsonl`` — one :class:`~invarirank.runner.records.ObservationRow` per query × method × presented
  order (by query, then method, then order); no wall-clock times, so equal runs give byte-identical files;
* ``metrics.json`` — :func:`invarirank.evaluation.evaluate` of those rows;
* ``calibration.json`` — STELLA_LW's count and transition matrices per K (when STELLA_LW runs);
* ``run.json`` — the volatile facts of the session (timings, executor, workers, shards, git, machine paths);
* ``manifest.json`` — :func:`invarirank.runner._manifest.build_manifest`: deterministic content only.

Killed at any moment and rerun, a run gives the same observations, metrics, calibration and manifest bytes as an
uninterrupted one, whichever executor, shard size or thread count computed it. A grid run copies each finished
shard into ``results/<grid>/<run>/shards/`` as it lands (:func:`invarirank.store.export_shards`), to be committed
before the run is finished, and so each part of STELLA_LW's calibration (``shards/calibration-parts/``,
:mod:`invarirank.runner._calibration`); a later session — on a fresh clone too — resumes from them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from .._io import read_json
from ..errors import InvariRankError
from ..llm.factory import scoring_versions
from ..store import (
    Run,
    RunFolder,
    calibration_part_files,
    committed_shards,
    export_calibration_parts,
    export_shards,
    identity_difference,
    import_shards,
    load_run,
    project_root,
    publish_run,
    refresh_metrics,
)
from ..types import Scorer
from ._config import RunConfig
from ._executor_protocol import Executor
from ._executors import LocalExecutor
from ._manifest import portable_paths
from ._phases import run_status, stored_identity, wanted_identity
from ._queries import QuerySet
from ._sharded import compute_runs_in_shards

#: the one error of a run with nowhere to go
NO_RUN_FOLDER = "no run folder: give --out RUN_DIR (or 'out' in the config), or a 'grid' to publish it in"


def run_folder(config: RunConfig, results_dir: str | Path | None = None) -> Path:
    """Where ``config``'s finished run lives: ``config.out`` when given, else ``<results_dir>/<grid>/<run>/``
    (default: ``results/`` of the project). Neither an ``out`` nor a ``grid``: :data:`NO_RUN_FOLDER`."""
    if config.out:
        return Path(config.out)
    if not config.grid:
        raise InvariRankError(NO_RUN_FOLDER)
    root = (
        results_dir
        or project_root(
            instead="give --out RUN_DIR (or 'out' in the config), or run from the "
            "checkout to publish the run in its results/"
        )
        / "results"
    )
    return Path(root) / config.grid / config.run_name


@dataclass
class _Place:
    """One run's folders: ``target`` (where it ends), ``work`` (where it is computed; ``None``: reused as it is,
    the same as ``target`` for a run computed in place), ``config`` (computed with ``out`` = ``work``) and
    ``given`` (as asked for: what is published)."""

    given: RunConfig
    config: RunConfig
    target: Path
    work: Path | None


def mismatch_error(config: RunConfig, target: Path) -> InvariRankError:
    """The error of a run whose folder ``target`` holds a finished run of another configuration (status
    ``mismatch``): it names the settings that differ, or the input file whose content changed, and what to do."""
    stored = stored_identity(read_json(RunFolder(target).file(RunFolder.MANIFEST)))
    wanted = wanted_identity(config)
    names = identity_difference(wanted, stored)
    if "inputs" in names:  # name the input whose content changed
        now, then = wanted.get("inputs") or {}, stored.get("inputs") or {}
        names = [n for n in names if n != "inputs"] + [
            f"the content of {key} ({config_path(config, key)}"
            + ("; the finished run recorded none: made by an earlier version)" if key not in then else ")")
            for key in sorted(set(now) | set(then))
            if now.get(key) != then.get(key)
        ]
    diff = ", ".join(names) or "unknown"
    what = (
        "choose another --out or remove that folder"
        if config.out
        else "delete the folder or give this run another name"
    )
    return InvariRankError(
        f"{target}: holds a finished run with a different configuration, other settings ({diff}); {what}"
    )


def _place(config: RunConfig, results_dir: str | Path | None, work_dir: str | Path | None, allow_run: bool) -> _Place:
    """The reuse check of one run (see the module docstring). A run published in a results folder reads its
    relative paths against the project root, as a grid file's; a run computed in place (``out``) against the
    working directory, as the check of its inputs (:func:`invarirank.runner._inputs.input_hashes`). Either way
    ``~`` and environment variables are expanded (:meth:`RunConfig.with_absolute_paths`), and one that is not set
    is an error naming the setting."""
    config.check_path_variables()
    target = run_folder(config, results_dir)
    in_place = bool(config.out)
    # a grid's relative paths: the project root; a run in place: the working directory (so is a run with none)
    root = project_root() if not in_place and config.relative_paths() else Path.cwd()
    config = config.with_absolute_paths(root)
    who = "rerank" if in_place else "grid"
    if target.exists() and not target.is_dir():
        raise InvariRankError(f"{target}: the run folder must be a folder")
    status = run_status(config, target)
    if status == "old-metrics":
        print(f"{who}: re-evaluating {target}: its metrics.json is of an older schema", file=sys.stderr)
        refresh_metrics(target)
        status = "complete"
    if status == "complete":
        print(f"{who}: reusing the finished run {target}", file=sys.stderr)
        return _Place(config, config, target, None)
    if status == "mismatch":
        raise mismatch_error(config, target)
    if not allow_run:
        raise InvariRankError(f"{target}: run {status} and running is not allowed here")
    if status == "outdated":
        print(
            f"{who}: computing {target} again: it was made by another version of the {config.scorer} scorer or "
            f"its prompt template ({scoring_versions(config.scorer)} now)",
            file=sys.stderr,
        )
    if in_place:
        if status == "outdated":
            RunFolder(target).clear_run()
        return _Place(config, config, target, target)
    work = Path(work_dir or project_root() / "runs") / str(config.grid) / config.run_name
    if run_status(config, work) in ("mismatch", "outdated"):
        print(f"grid: removing {work}: a finished run with another configuration or scorer version", file=sys.stderr)
        RunFolder(work).clear_run()
    if run_status(config, work) == "old-metrics":
        refresh_metrics(work)
    computed = config if run_status(config, work) == "complete" else _resume_committed_shards(config, target, work)
    return _Place(config, computed.replace(out=str(work)), target, work)


def config_path(config: RunConfig, key: str) -> str:
    """The path the setting ``key`` (``candidates``, ``raw_dir``, ``data_dir``) of ``config`` names, for messages."""
    return str(getattr(config, key, None) or "not given now")


def _resume_committed_shards(config: RunConfig, target: Path, work: Path) -> RunConfig:
    """Bring the shards committed under ``target/shards/`` into the work folder (:func:`invarirank.store.
    import_shards`) and return ``config`` computed with their shard size when it sets none, so that the resumed
    run's shards line up with them (a shard size is an execution setting, never part of the run's identity;
    records of any shard plan count)."""
    copied = import_shards(target, work)
    if copied:
        print(
            f"grid: resuming {config.run_name} from {len(copied)} committed shard(s) in {RunFolder(target).committed}",
            file=sys.stderr,
        )
    parts = sum(len(f) for f in calibration_part_files(RunFolder(target).committed_calibration_parts).values())
    if parts:
        print(
            f"grid: {config.run_name}: {parts} committed calibration part(s) in "
            f"{RunFolder(target).committed_calibration_parts}",
            file=sys.stderr,
        )
    shards = committed_shards(target)
    if config.shard_queries is None and shards:
        size = len(read_json(shards[0] / "shard.json").get("query_ids") or []) or None
        config = config.replace(shard_queries=size)
    return config


def ensure_runs(
    configs: Sequence[RunConfig],
    executor: Executor | None = None,
    *,
    results_dir: str | Path | None = None,
    work_dir: str | Path | None = None,
    allow_run: bool = True,
    progress: bool = True,
    queries: QuerySet | None = None,
    scorer: Scorer | None = None,
    on_shard_done: Callable[[int], None] | None = None,
    on_calibration_part: Callable[[int], None] | None = None,
) -> list[Path]:
    """The finished run folder of every config (:func:`run_folder`), in the order of ``configs``: reused when
    there, else computed (or resumed) and, for a grid's run, published (see the module docstring).

    ``executor`` (:class:`~invarirank.runner._executor_protocol.Executor`) computes the missing runs' shards, all
    together (it is not closed here); without one a :class:`~invarirank.runner._executors.LocalExecutor` computes
    them in this process, with ``scorer`` when given instead of building one. ``allow_run=False`` makes a run that
    is not there an error. ``queries`` (tests) replaces query loading for a single run. ``on_shard_done(n)`` is
    called after the n-th shard of this session is written (and, for a grid's run, copied for committing);
    ``on_calibration_part(n)`` likewise after the n-th calibration part of a run is journaled (and copied)."""
    if executor is not None and scorer is not None:
        raise InvariRankError("ensure_runs: give a scorer (for the local executor) or an executor, not both")
    places = [_place(c, results_dir, work_dir, allow_run) for c in configs]
    todo = [pl for pl in places if pl.work is not None and run_status(pl.config, pl.work) != "complete"]
    if todo:

        def shard_done(n: int) -> None:  # every finished shard is committable at once
            for pl in todo:
                if pl.work is not None and pl.work != pl.target:
                    export_shards(pl.work, pl.target)
            if on_shard_done is not None:
                on_shard_done(n)

        def part_done(n: int) -> None:  # so is every calibration part: a calibration may outlast a session
            for pl in todo:
                if pl.work is not None and pl.work != pl.target:
                    export_calibration_parts(pl.work, pl.target)
            if on_calibration_part is not None:
                on_calibration_part(n)

        t0 = time.perf_counter()
        with ExitStack() as stack:
            ex = executor if executor is not None else stack.enter_context(LocalExecutor(scorer=scorer))
            compute_runs_in_shards(
                [pl.config for pl in todo],
                ex,
                progress=progress,
                queries=queries,
                on_shard_done=shard_done,
                on_calibration_part=part_done,
            )
        grid_runs = [pl.given.run_name for pl in todo if pl.work != pl.target]
        if grid_runs:
            print(f"grid: ran {', '.join(grid_runs)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    for pl in places:
        if pl.work is not None and pl.work != pl.target:
            # the settings as given, with their paths portable as in the manifest's config (the grid made them
            # absolute; none of them is part of the identity)
            publish_run(pl.work, pl.target, portable_paths(pl.given.to_json(), {}))
    return [pl.target for pl in places]


def ensure_run(
    config: RunConfig,
    results_dir: str | Path | None = None,
    work_dir: str | Path | None = None,
    *,
    allow_run: bool = True,
    progress: bool = True,
    executor: Executor | None = None,
) -> Path:
    """The finished run folder of ``config``: :func:`ensure_runs` of one run."""
    return ensure_runs(
        [config], executor, results_dir=results_dir, work_dir=work_dir, allow_run=allow_run, progress=progress
    )[0]


def run_experiment(
    config: RunConfig,
    *,
    progress: bool = True,
    queries: QuerySet | None = None,
    scorer: Scorer | None = None,
    executor: Executor | None = None,
    on_shard_done: Callable[[int], None] | None = None,
    on_calibration_part: Callable[[int], None] | None = None,
) -> Run:
    """:func:`ensure_runs` of one run, read back as the one result type, :class:`invarirank.store.Run` (its rows:
    :meth:`~invarirank.store.Run.rows`; its ``run.json``: :attr:`~invarirank.store.Run.volatile`). ``queries`` and
    ``scorer`` may be given to skip loading them; ``on_shard_done`` and ``on_calibration_part`` as in
    :func:`ensure_runs` (tests use them to simulate a kill)."""
    folder = ensure_runs(
        [config],
        executor,
        progress=progress,
        queries=queries,
        scorer=scorer,
        on_shard_done=on_shard_done,
        on_calibration_part=on_calibration_part,
    )[0]
    return load_run(folder)
