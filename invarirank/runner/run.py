"""Orchestration of one run: queries → scorer → STELLA_LW calibration → :func:`rerank_query` per query
(checkpointed) → observations, metrics, calibration, manifest; and :func:`ensure_run`, which reuses a finished
run or computes and publishes it.

``run_experiment(config)`` writes into ``config.out`` (RUN_DIR):

* ``observations.jsonl`` — one :class:`~invarirank.runner.records.ObservationRow` per query × method × presented
  order (by query, then method, then order); no wall-clock times, so equal runs give byte-identical files;
* ``metrics.json`` — :func:`invarirank.evaluation.evaluate` of those rows;
* ``calibration.json`` — STELLA_LW's count and transition matrices per K (when STELLA_LW runs);
* ``run.json`` — the volatile facts of the session (timings, executor, workers, shards, git, machine paths);
* ``manifest.json`` — :func:`invarirank.runner.manifest.build_manifest`: deterministic content only.

A run is prepared once on the driver (:func:`prepare_run`: data, first stage, the scorer's identity from a
worker, STELLA_LW's calibration), its queries are reranked — in this process query by query, each checkpointed
(:mod:`invarirank.runner.checkpoint`), or in shards by an executor (:mod:`invarirank.runner.sharded`) — and the
records are merged in run order (:func:`finish_run`). Killed at any moment and rerun, a run gives the same
observations, metrics, calibration and manifest bytes as an uninterrupted one, whichever executor, shard size or
thread count computed it. The final files are written atomically, manifest last; ``.work`` is removed at the very
end.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Callable

from ..errors import InvariRankError
from ..llm.factory import scoring_versions
from ..locks import folder_lock
from ..store import (SHARDS_DIR, committed_shards, export_shards, identity_difference, import_shards, project_root,
                     publish_run, refresh_metrics)
from ..types import Scorer
from .checkpoint import Checkpoint
from .config import RunConfig
from .executors import LocalExecutor
from .phases import PreparedRun, RunResult, finish_run, prepare_run, status_of
from .queries import QuerySet
from .sharded import run_sharded
from .worker import make_run_scorer, rerank_records, scorer_key_identity

__all__ = ["RunResult", "PreparedRun", "prepare_run", "finish_run", "run_experiment", "make_run_scorer",
           "scorer_key_identity", "status_of", "ensure_run", "reuse_or_prepare", "work_config",
           "resume_committed_shards"]


def _progress_bar(total: int, done: int, m: int, cache: Any) -> tuple[Any, Callable[[int], None]]:
    from tqdm.auto import tqdm
    bar = tqdm(total=total, initial=done, desc="rerank", unit="query", file=sys.stderr, dynamic_ncols=True)
    last = [0.0]

    def on_order(t: int) -> None:                # finer feedback inside a (long) real-model query
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            bar.set_postfix(order=f"{t + 1}/{m}", passes=cache.misses, shared_hits=cache.hits)
    return bar, on_order


def run_experiment(config: RunConfig, *, progress: bool = True, on_query_done: Callable[[int], None] | None = None,
                   queries: QuerySet | None = None, scorer: Scorer | None = None, executor: Any = None,
                   on_shard_done: Callable[[int], None] | None = None) -> RunResult:
    """Run (or resume) ``config`` into ``config.out``; see the module docstring. A finished run of *another*
    identity in ``config.out`` is never overwritten (an error). ``queries``/``scorer`` may be given to skip
    loading them.

    Without ``executor`` and ``config.shard_queries`` the run is computed in this process, query by query, each
    checkpointed; ``on_query_done(n)`` is called after the n-th query of this session is safely checkpointed
    (tests use it to simulate a kill). With an ``executor`` (:mod:`invarirank.runner.executors`) or a shard size,
    it is computed in shards (:func:`invarirank.runner.sharded.run_sharded`); ``on_shard_done(n)`` is called after
    the n-th shard of this session is written. The run folder is locked while it is written
    (:func:`invarirank.locks.folder_lock`): a second process on the same folder stops at once, naming the holder."""
    if executor is None and config.shard_queries is None:
        if not config.out:
            raise InvariRankError("no run folder: give --out RUN_DIR (or 'out' in the config)")
        with folder_lock(config.out, "run folder"), LocalExecutor(scorer=scorer) as local:   # one writer
            p = prepare_run(config, local, queries=queries, progress=progress)
            return _run_checkpointed(p, local.worker(p.config), progress, on_query_done)
    if executor is not None:
        return run_sharded([config], executor, progress=progress, queries=queries, on_shard_done=on_shard_done)[0]
    with LocalExecutor(scorer=scorer) as local:
        return run_sharded([config], local, progress=progress, queries=queries, on_shard_done=on_shard_done)[0]


def _run_checkpointed(p: PreparedRun, worker: Any, progress: bool,
                      on_query_done: Callable[[int], None] | None) -> RunResult:
    """One process: the queries in run order, each checkpointed (``.work/checkpoint.jsonl``), then the merge."""
    ckpt = Checkpoint(p.out / ".work" / "checkpoint.jsonl", p.fingerprint)
    done = ckpt.load()
    resumed = len(done)
    cache = worker.cache
    t = time.perf_counter()
    todo = [q for q in p.qs.test if q.query_id not in done]
    ckpt.ensure_header()
    n_all = len(p.qs.test)
    bar, on_order = _progress_bar(n_all, n_all - len(todo), p.config.M, cache) if progress else (None, None)
    try:
        for n, record in enumerate(rerank_records(cache, todo, p.config, model=p.model,
                                                  dataset=p.config.effective_dataset, calibrations=p.calibrations,
                                                  on_order=on_order), 1):
            ckpt.append(record)
            done[record["query_id"]] = record
            if bar is not None:
                bar.update(1)
            if on_query_done is not None:
                on_query_done(n)
    finally:
        if bar is not None:
            bar.close()
    volatile = {"timings": {"rerank_seconds_this_session": round(time.perf_counter() - t, 3)},
                "queries_resumed_from_checkpoint": resumed,
                "execution": {"executor": "local", "workers": 1},
                "scorer_stats": dict(getattr(worker.scorer, "stats", {}) or {}),
                "model_loads": 1, "workers": [worker.info]}
    return finish_run(p, [done[q.query_id] for q in p.qs.test], volatile)


# ---------------------------------------------------------------------------------------------
# reuse: the grid's and the notebook's path to a finished run
# ---------------------------------------------------------------------------------------------
def reuse_or_prepare(config: RunConfig, results_dir: str | Path | None = None, work_dir: str | Path | None = None,
                     *, allow_run: bool = True) -> tuple[Path, Path | None]:
    """The reuse check of :func:`ensure_run`: ``(target, None)`` when ``results/<grid>/<run>/`` holds the
    finished run (its metrics re-evaluated if of an older schema); else ``(target, work)``: the work folder to
    compute it in, cleared of a finished run of another configuration. A results folder of *another* identity
    is never overwritten (an error naming the folder and the settings that differ)."""
    if not config.grid:
        raise InvariRankError(f"run {config.run_name}: no 'grid' (results/<grid>/<run>/) to publish it in")
    root = project_root()
    target = Path(results_dir or root / "results") / config.grid / config.run_name
    status = status_of(config, target)
    if status == "old-metrics":
        print(f"grid: re-evaluating {target}: its metrics.json is of an older schema", file=sys.stderr)
        refresh_metrics(target)
        status = "complete"
    if status == "complete":
        print(f"grid: reusing the finished run {target}", file=sys.stderr)
        return target, None
    if status == "outdated":
        print(f"grid: computing {target} again: it was made by another version of the {config.scorer} scorer or "
              f"its prompt template ({scoring_versions(config.scorer)} now)", file=sys.stderr)
    if status == "mismatch":
        from ..io import read_json
        stored = RunConfig.identity_of_manifest(read_json(target / "manifest.json"))
        diff = identity_difference(config.identity(), stored)
        raise InvariRankError(f"{target}: a finished run with other settings ({', '.join(diff) or 'unknown'}) is "
                              f"there; delete the folder or give this run another name")
    if not allow_run:
        raise InvariRankError(f"{target}: run {status} and running is not allowed here")
    work = Path(work_dir or root / "runs") / config.grid / config.run_name
    if status_of(config, work) in ("mismatch", "outdated"):
        print(f"grid: removing {work}: a finished run with another configuration or scorer version",
              file=sys.stderr)
        for name in ("observations.jsonl", "metrics.json", "manifest.json", "calibration.json", "run.json"):
            (work / name).unlink(missing_ok=True)
    if status_of(config, work) == "old-metrics":
        refresh_metrics(work)
    return target, work


def work_config(config: RunConfig, work: Path) -> RunConfig:
    """``config`` computed in the work folder ``work`` (its raw-data folder resolved against the project root)."""
    return config.replace(out=str(work), raw_dir=config.resolved_raw_dir(project_root()))


def ensure_run(config: RunConfig, results_dir: str | Path | None = None, work_dir: str | Path | None = None, *,
               allow_run: bool = True, progress: bool = True) -> Path:
    """The finished run folder ``results/<grid>/<run>/`` of ``config``: reused when complete with the same
    identity (:func:`reuse_or_prepare`); else computed (or resumed) in ``work/<grid>/<run>/`` in this process and
    published there. (A grid on an executor computes its runs together: :func:`invarirank.grid.compute_runs`.)"""
    target, work = reuse_or_prepare(config, results_dir, work_dir, allow_run=allow_run)
    if work is None:
        return target
    if status_of(config, work) != "complete":
        config = resume_committed_shards(config, target, work)
        t0 = time.perf_counter()
        run_experiment(work_config(config, work), progress=progress,
                       on_shard_done=lambda _n: export_shards(work, target))
        print(f"grid: ran {config.run_name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return publish_run(work, target, config.to_json())


def resume_committed_shards(config: RunConfig, target: Path, work: Path) -> RunConfig:
    """Bring the shards committed under ``target/shards/`` into the work folder (:func:`invarirank.store.
    import_shards`) and return ``config`` computed in shards: with its own shard size, else — when shards were
    committed — the size of the first of them, so that a resumed run reads them (a shard size is an execution
    setting, never part of the run's identity; records of any shard plan count)."""
    copied = import_shards(target, work)
    if copied:
        print(f"grid: resuming {config.run_name} from {len(copied)} committed shard(s) in {target / SHARDS_DIR}",
              file=sys.stderr)
    shards = committed_shards(target)
    if config.shard_queries is None and shards:
        from ..io import read_json
        size = len(read_json(shards[0] / "shard.json").get("query_ids") or []) or None
        config = config.replace(shard_queries=size)
    return config
