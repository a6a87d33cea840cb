"""Many runs in shards on one executor: prepare each run once, send every missing shard of every run to the
workers together, write each shard's folder as it arrives, merge each run when all its queries are there.

Order of the work units: runs are grouped by scorer settings (one pool of workers, one model load per worker,
per group); within a group each run is prepared on the driver first — data preparation and the first stage
(cached, computed once whatever shards need them), the scorer's identity and STELLA_LW's calibration per K (one
unit each, on a worker) — then all shards of the group's runs are in flight together, so every worker stays busy
across runs. One progress bar on the driver counts queries done / total with passes per second and an ETA.
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack
from typing import Any, Callable, Sequence

from ..errors import InvariRankError
from ..locks import folder_lock

from .checkpoint import Checkpoint
from .config import RunConfig
from .queries import QuerySet
from .phases import PreparedRun, RunResult, finish_run, prepare_run
from .shards import DEFAULT_SHARD_QUERIES, Shard, ShardFolders, plan_shards
from .worker import ShardResult, ShardTask, scorer_settings

__all__ = ["run_sharded"]


def _groups(configs: Sequence[RunConfig]) -> list[list[RunConfig]]:
    out: dict[str, list[RunConfig]] = {}
    for c in configs:
        out.setdefault(repr(sorted(scorer_settings(c).items())), []).append(c)
    return list(out.values())


def run_sharded(configs: Sequence[RunConfig], executor: Any, *, progress: bool = True,
                queries: QuerySet | None = None, on_shard_done: Callable[[int], None] | None = None,
                ) -> list[RunResult]:
    """Compute (or resume) every run of ``configs`` (each with its ``out`` folder) on ``executor``; results in
    the order of ``configs``. Finished shards in a run folder are kept; a shard of another configuration there
    is an error (:class:`~invarirank.runner.shards.ShardFolders`). ``queries`` (tests) replaces query loading for
    a single run; ``on_shard_done(n)`` is called after the n-th shard of this session is written.

    Every run folder is locked (:func:`invarirank.locks.folder_lock`) from before its first shard until it is
    merged: a second process computing one of the same runs stops at once, naming the holder. The shards of a
    run are written only by the workers of the driver that holds its lock."""
    with ExitStack() as locks:
        for config in configs:
            if not config.out:
                raise InvariRankError("no run folder: give --out RUN_DIR (or 'out' in the config)")
            locks.enter_context(folder_lock(config.out, "run folder"))
        return _run_sharded(configs, executor, progress=progress, queries=queries, on_shard_done=on_shard_done)


def _run_sharded(configs: Sequence[RunConfig], executor: Any, *, progress: bool,
                 queries: QuerySet | None, on_shard_done: Callable[[int], None] | None) -> list[RunResult]:
    results: dict[int, RunResult] = {}
    index = {id(c): i for i, c in enumerate(configs)}
    written = [0]
    for group in _groups(configs):
        runs: dict[str, dict[str, Any]] = {}
        tasks: list[ShardTask] = []
        for config in group:
            p = prepare_run(config, executor, queries=queries, progress=progress)
            folders = ShardFolders(p.out, p.config.run_name, p.fingerprint, p.parts)
            done, shard_facts = folders.finished()
            resumed = dict(done)
            ckpt = p.out / ".work" / "checkpoint.jsonl"
            if ckpt.exists():                    # queries of an earlier one-process session count too
                resumed.update(Checkpoint(ckpt, p.fingerprint).load())
            by_id = {q.query_id: q for q in p.qs.test}
            size = p.config.shard_queries or DEFAULT_SHARD_QUERIES
            for shard in plan_shards([q.query_id for q in p.qs.test], size):
                missing = tuple(qid for qid in shard.query_ids if qid not in resumed)
                if missing:
                    tasks.append(ShardTask(str(p.out), Shard(shard.index, missing).id, [by_id[q] for q in missing],
                                           p.config.to_dict(), p.model, p.config.effective_dataset,
                                           dict(p.calibrations)))
            runs[str(p.out)] = {"prepared": p, "folders": folders, "done": resumed, "shards": shard_facts,
                                "resumed": len(resumed), "index": index[id(config)], "size": size}
        _compute(group[0], executor, tasks, runs, progress, on_shard_done, written)
        for key, run in runs.items():
            p: PreparedRun = run["prepared"]
            records = [run["done"][q.query_id] for q in p.qs.test]
            results[run["index"]] = finish_run(p, records, _volatile(executor, run))
    return [results[i] for i in range(len(configs))]


def _compute(config: RunConfig, executor: Any, tasks: list[ShardTask], runs: dict[str, dict[str, Any]],
             progress: bool, on_shard_done: Callable[[int], None] | None, written: list[int]) -> None:
    """Send ``tasks`` to the executor; write each result's shard folder and count it on the progress bar."""
    total = sum(len(r["prepared"].qs.test) for r in runs.values())
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=total, initial=total - sum(len(t.queries) for t in tasks), desc="shards", unit="query",
                   file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    passes = [0]

    def on_result(res: ShardResult) -> None:
        run = runs[res.run]
        facts = {"id": res.shard, "queries": len(res.records), "seconds": res.seconds,
                 "passes": sum(int(r["misses"]) for r in res.records),
                 "tokens": sum(int(r["tokens"]) for r in res.records), "worker": res.worker}
        run["folders"].write(res.shard, res.records, facts)
        run["shards"].append(facts)
        for rec in res.records:
            run["done"][rec["query_id"]] = rec
        run["seconds"] = run.get("seconds", 0.0) + res.seconds
        passes[0] += facts["passes"]
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
        run["wall_seconds"] = round(time.perf_counter() - t0, 3)


def _volatile(executor: Any, run: dict[str, Any]) -> dict[str, Any]:
    """The sharded session's part of ``run.json``: executor, shards and their workers, model loads."""
    shards = run["shards"]
    workers = {}
    for facts in [*([{"worker": w} for w in getattr(executor, "worker_facts", lambda: [])()]), *shards]:
        w = facts.get("worker") or {}
        if w:
            workers[(w.get("host"), w.get("pid"), w.get("loaded_at"))] = {k: v for k, v in w.items()
                                                                          if k != "scorer_stats"}
    return {"timings": {"rerank_seconds_this_session": run.get("wall_seconds", 0.0)},
            "execution": {**executor.info(), "shard_queries": run["size"]},
            "queries_resumed_from_checkpoint": run["resumed"],
            "shards": sorted(shards, key=lambda s: s["id"]),
            "model_loads": len(workers), "workers": list(workers.values())}
