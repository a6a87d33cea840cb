"""The computing half of :func:`invarirank.runner.ensure_runs`: many runs in shards on one executor. Prepare each
run once, send every missing shard of every run to the workers together, write each shard's folder as it arrives,
merge each run when all its queries are there. A one-process run is the same path on the local executor.

Order of the work units: runs are grouped by scorer settings (one pool of workers, one model load per worker,
per group); within a group each run is prepared on the driver first — data preparation and the first stage
(cached, computed once whatever shards need them), the scorer's identity and STELLA_LW's calibration per K (one
unit per probing query, spread over the workers and journaled: :mod:`invarirank.runner._calibration`) — then all
shards of the group's runs are in flight together, so every worker stays busy
across runs. The one progress bar on the driver counts queries done / total with passes per second and an ETA.
The finished shards are the one resume record (:mod:`invarirank.runner._shards`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from .._locks import folder_lock
from ..store import Run
from ._config import RunConfig
from ._executor_protocol import Executor
from ._phases import PreparedRun, calibrate_run, finish_run, prepare_run, record_calibrations
from ._provenance import rows_reproduce
from ._queries import QuerySet
from ._shards import Shard, ShardFolders, plan_shards
from ._worker import ShardResult, ShardTask, scorer_settings


@dataclass
class _Run:
    """One run in flight: prepared, its shard folders, the records so far by query id, the facts of its
    finished shards, the queries resumed from earlier sessions, its shard size and place among the configs."""

    prepared: PreparedRun
    folders: ShardFolders
    done: dict[str, dict[str, Any]]
    shards: list[dict[str, Any]]
    resumed: int
    size: int
    index: int
    wall_seconds: float = 0.0
    workers: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    stats: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)


def _groups(configs: Sequence[RunConfig]) -> list[list[RunConfig]]:
    out: dict[str, list[RunConfig]] = {}
    for c in configs:
        out.setdefault(repr(sorted(scorer_settings(c).items())), []).append(c)
    return list(out.values())


def compute_runs_in_shards(
    configs: Sequence[RunConfig],
    executor: Executor,
    *,
    progress: bool = True,
    queries: QuerySet | None = None,
    on_shard_done: Callable[[int], None] | None = None,
    on_calibration_part: Callable[[int], None] | None = None,
) -> list[Run]:
    """Compute (or resume) every run of ``configs`` (each with its ``out`` folder, checked by the caller) on
    ``executor``; results in the order of ``configs``. Finished shards in a run folder are kept; a shard of
    another configuration there is an error (:class:`~invarirank.runner._shards.ShardFolders`). ``queries``
    (tests) replaces query loading for a single run; ``on_shard_done(n)`` is called after the n-th shard of this
    session is written, ``on_calibration_part(n)`` after the n-th calibration part of a run is journaled
    (:func:`invarirank.runner._calibration.calibrate_in_parts`).

    Every run folder is locked (:func:`invarirank._locks.folder_lock`) from before its first shard until it is
    merged: a second process computing one of the same runs stops at once, naming the holder. The shards of a
    run are written only by the workers of the driver that holds its lock."""
    with ExitStack() as locks:
        for config in configs:
            locks.enter_context(folder_lock(str(config.out), "run folder"))
        results: dict[int, Run] = {}
        index = {id(c): i for i, c in enumerate(configs)}
        written = [0]
        for group in _groups(configs):
            runs: dict[str, _Run] = {}
            tasks: list[ShardTask] = []
            for config in group:
                run, todo = _plan(config, executor, queries, progress, index[id(config)], on_calibration_part)
                runs[str(run.prepared.out)] = run
                tasks += todo
            _compute(group[0], executor, tasks, runs, progress, on_shard_done, written)
            for run in runs.values():
                records = [run.done[q.query_id] for q in run.prepared.qs.test]
                results[run.index] = finish_run(run.prepared, records, _volatile(executor, run))
        return [results[i] for i in range(len(configs))]


def _plan(
    config: RunConfig,
    executor: Executor,
    queries: QuerySet | None,
    progress: bool,
    index: int,
    on_calibration_part: Callable[[int], None] | None = None,
) -> tuple[_Run, list[ShardTask]]:
    """Prepare one run, read its finished shards and plan the shards that still miss queries."""
    p = prepare_run(config, executor, queries=queries, progress=progress)
    by_id = {q.query_id: q for q in p.qs.test}
    c = p.config

    def reproduces(rows: list[Mapping[str, Any]]) -> str | None:
        return rows_reproduce(rows, by_id, M=c.M, seed=c.seed, noise_floor=c.noise_floor)

    folders = ShardFolders(p.out, c.run_name, p.fingerprint, p.parts, reproduces=reproduces)
    done, shard_facts = folders.finished()
    if folders.accepted_by_content:
        print(
            f"{c.run_name}: {len(folders.accepted_by_content)} shard(s) made from the same queries with other "
            f"first-stage float scores (another kind of CPU) resumed: every row's presented order and ground "
            f"truth checked against this machine's queries",
            file=sys.stderr,
        )
    # the calibration after the shards' check: a run whose shards are refused computes no part of it
    calibrate_run(p, executor, progress=progress, on_calibration_part=on_calibration_part)
    record_calibrations(p, resumed=bool(done))
    size = p.config.shard_queries or executor.default_shard_queries(p.config)
    tasks = []
    for shard in plan_shards([q.query_id for q in p.qs.test], size):
        missing = tuple(qid for qid in shard.query_ids if qid not in done)
        if missing:
            tasks.append(
                ShardTask(
                    str(p.out),
                    Shard(shard.index, missing).id,
                    [by_id[q] for q in missing],
                    p.config.to_dict(),
                    p.model,
                    p.config.effective_dataset,
                    dict(p.calibrations),
                )
            )
    return _Run(p, folders, dict(done), list(shard_facts), len(done), size, index), tasks


def _compute(
    config: RunConfig,
    executor: Executor,
    tasks: list[ShardTask],
    runs: dict[str, _Run],
    progress: bool,
    on_shard_done: Callable[[int], None] | None,
    written: list[int],
) -> None:
    """Send ``tasks`` to the executor; write each result's shard folder and count it on the progress bar."""
    total = sum(len(r.prepared.qs.test) for r in runs.values())
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=total,
            initial=total - sum(len(t.queries) for t in tasks),
            desc="rerank",
            unit="query",
            file=sys.stderr,
            dynamic_ncols=True,
        )
    t0 = time.perf_counter()
    passes = [0]

    def on_result(res: ShardResult) -> None:
        run = runs[res.run]
        n_passes = sum(int(r["misses"]) for r in res.records)
        facts: dict[str, Any] = {
            "id": res.shard,
            "queries": len(res.records),
            "seconds": res.seconds,
            "passes": n_passes,
            "tokens": sum(int(r["tokens"]) for r in res.records),
            "worker": res.worker,
        }
        run.folders.write(res.shard, res.records, facts)
        run.shards.append(facts)
        run.workers[_worker_key(res.worker)] = {k: v for k, v in res.worker.items() if k != "scorer_stats"}
        run.stats[_worker_key(res.worker)] = dict(res.worker.get("scorer_stats") or {})
        for rec in res.records:
            run.done[rec["query_id"]] = rec
        passes[0] += n_passes
        written[0] += 1
        if bar is not None:
            bar.update(len(res.records))
            bar.set_postfix(passes_per_s=f"{passes[0] / max(time.perf_counter() - t0, 1e-9):.1f}")
        if on_shard_done is not None:
            on_shard_done(written[0])

    try:
        if tasks:
            executor.map_shards(config, tasks, on_result)
    finally:
        if bar is not None:
            bar.close()
    for run in runs.values():
        run.wall_seconds = round(time.perf_counter() - t0, 3)


def _worker_key(worker: dict[str, Any]) -> tuple[Any, ...]:
    return worker.get("host"), worker.get("pid"), worker.get("loaded_at")


def _volatile(executor: Executor, run: _Run) -> dict[str, Any]:
    """This session's part of ``run.json``: executor, shards (each naming its worker by host, pid and slot),
    the workers (once each), model loads, and the scorer's counters (each worker's last report, summed over the
    workers)."""
    workers = {_worker_key(w): w for w in executor.worker_facts()}
    for facts in run.shards:  # workers of earlier sessions, from their shards
        w = facts.get("worker") or {}
        if w:
            workers.setdefault(_worker_key(w), {k: v for k, v in w.items() if k != "scorer_stats"})
    workers.update(run.workers)
    stats: dict[str, Any] = {}
    for one in run.stats.values():
        for key, value in one.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                stats[key] = stats.get(key, 0) + value
    shards = [
        {**facts, "worker": {k: (facts.get("worker") or {}).get(k) for k in ("host", "pid", "slot")}}
        for facts in sorted(run.shards, key=lambda s: s["id"])
    ]
    return {
        "timings": {"rerank_seconds_this_session": run.wall_seconds},
        "execution": {**executor.info(), "shard_queries": run.size},
        "queries_resumed_from_checkpoint": run.resumed,
        "scorer_stats": stats,
        "shards": shards,
        "model_loads": len(workers),
        "workers": list(workers.values()),
    }
