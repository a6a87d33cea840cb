"""The unit that computes: one scorer, loaded once and kept, that computes STELLA_LW's calibration parts and reranks
shards.

:class:`ShardWorker` is the same object in every executor: in the driver's process for the ``local`` executor, as
one Ray actor per GPU (or CPU slot) for the ``ray`` executor (:mod:`invarirank.runner._executors`). It never prepares
data or trains a first stage (the driver hands it the queries) and it writes no file of the run: it returns
records, and the driver writes the shard folder. Its scorer keeps a pass cache of its own (a SQLite file per
worker slot on the worker's machine, which it alone writes and the machine's other workers also read; never one
shared across machines); correctness never depends on it.

:func:`rerank_records` is the loop both the one-process run and a shard use: :func:`rerank_query` per query →
one :class:`~invarirank.runner.records.QueryRecord` (its rows, requested passes per method and the shared pass
cache's counters for that query, which are the same whichever process computes the query).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..llm._precision import cpu_description
from ..methods.registry import calibrated_method
from ..methods.registry import method as registered_method
from ..types import Query, Scorer
from ._config import RunConfig
from .records import QueryRecord
from .rerank import rerank_query, rerank_window

#: the settings that build a run's scorer: runs that agree on them can share one worker (and its loaded model)
SCORER_SETTINGS = ("scorer", "model", "scorer_options", "device", "seed", "noise_floor", "cache_dir")


def make_run_scorer(config: RunConfig, *, pass_cache_dir: str | None = None) -> Scorer:
    """The run's scorer, through :func:`invarirank.llm.make_scorer` (the one place scorers are built): kind
    ``config.scorer``, ``config.model``, the seed, ``scorer_options``, ``device`` (real scorers, unless
    ``auto``), the cache folder (``pass_cache_dir``: the pass cache's own folder, e.g. one per Ray worker); the
    noise floor turns the persistent pass cache off (every copy is recomputed)."""
    from ..llm.factory import make_scorer

    options = dict(config.scorer_options)
    if config.scorer != "simulated":
        if config.device != "auto":
            options.setdefault("device", config.device)
        if config.noise_floor:
            options.setdefault("pass_cache", False)
        if pass_cache_dir or config.cache_dir:
            options["cache_dir"] = pass_cache_dir or config.cache_dir
    return make_scorer(config.scorer, config.model, seed=config.seed, **options)


def read_sibling_caches(scorer: Any, own_dir: Path) -> None:
    """Let ``scorer``'s persistent pass cache also read, read-only, the other worker slots' files beside its own
    (``<cache>/passes/worker-*/passes.sqlite3`` on this machine, those there when it starts): a shard resumed
    after a stop finds the passes computed for it before, whichever worker takes it (nothing for a scorer without
    a persistent cache: :meth:`~invarirank.llm._persistent_cache.PersistentPassCache.read_also`)."""
    cache = getattr(scorer, "pass_cache", None)
    if cache is not None:
        cache.read_also(sorted(p for p in own_dir.parent.glob("worker-*/passes.sqlite3") if p.parent != own_dir))


def scorer_key_identity(scorer: Any) -> dict[str, Any]:
    """What determines a scorer's scores: ``key_identity()`` where the scorer has one (real scorers: weights,
    tokenizer, dtype, device type, template, options — not cache locations), else ``identity()``."""
    from ..methods import as_batch_scorer

    return dict(as_batch_scorer(scorer).key_identity())


def calibration_method(config: RunConfig) -> str:
    """The name of the run's method that needs a calibration per K (the registry's ``calibrator``: STELLA_LW);
    the calibration files of the run name it. An error when the run has none (no calibration is then computed)."""
    calibrated = calibrated_method(config.methods)
    if calibrated is None:
        raise InvariRankError(f"{config.run_name}: no method of {list(config.methods)} needs a calibration")
    return calibrated.name


def scorer_settings(config: RunConfig) -> dict[str, Any]:
    """The part of ``config`` that builds its scorer (:data:`SCORER_SETTINGS`), as JSON."""
    return {name: getattr(config, name) for name in SCORER_SETTINGS}


def rerank_records(
    cache: Any,
    queries: Sequence[Query],
    config: RunConfig,
    *,
    model: str,
    dataset: str,
    calibrations: Mapping[int, Any],
    on_order: Callable[[int], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Rerank ``queries`` through ``cache`` (a :class:`~invarirank.methods.QueryPassCache`), one after the other or,
    with ``config.query_window`` > 1, in windows of that many queries in lockstep
    (:func:`~invarirank.runner.rerank.rerank_window`); yield each query's :class:`QueryRecord` as JSON, in the
    order of ``queries``, with the pass cache's counters *of that query* (the same either way; ``seconds`` is
    wall-clock time, a window's shared evenly: volatile)."""
    window = 1 if config.noise_floor else max(1, int(config.query_window or 1))
    for start in range(0, len(queries), window):
        chunk = list(queries[start : start + window])
        tq = time.perf_counter()
        for q in chunk:
            cache.clear_counters(q.query_id)
        settings: dict[str, Any] = dict(
            methods=config.methods,
            M=config.M,
            seed=config.seed,
            calibrations=calibrations,
            model=model,
            dataset=dataset,
        )
        if window == 1:
            all_rows = [rerank_query(cache, chunk[0], noise_floor=config.noise_floor, on_order=on_order, **settings)]
        else:
            all_rows = rerank_window(cache, chunk, **settings)
        seconds = round((time.perf_counter() - tq) / len(chunk), 4)
        for q, rows in zip(chunk, all_rows):
            counters = cache.counters(q.query_id)
            passes = {name: sum(r.passes for r in rows if r.method == name) for name in config.methods}
            yield QueryRecord(
                query_id=q.query_id,
                rows=[r.to_json() for r in rows],
                passes=passes,
                **{c: counters[c] for c in ("requests", "hits", "misses", "tokens")},
                seconds=seconds,
            ).to_json()


@dataclass
class ShardTask:
    """One shard to compute: ``run`` (the run's key for the driver), ``shard`` (its id), the queries (in run
    order), the run's settings (``config``, JSON), the model and data set names written into the rows, and
    STELLA_LW's calibrations by K."""

    run: str
    shard: str
    queries: list[Query]
    config: dict[str, Any]
    model: str
    dataset: str
    calibrations: dict[int, Any] = field(default_factory=dict)


@dataclass
class CalibrationTask:
    """One part of a calibration to compute (:mod:`invarirank.methods._calibration_parts`): ``run`` (the run's key
    for the driver), the calibrated ``method``, ``k``, ``index`` (the probing query's place among the calibration's
    probing queries) and the probing ``query`` (truncated to ``k``), the ``repeats`` and the ``seed``."""

    run: str
    method: str
    k: int
    index: int
    query: Query
    repeats: int
    seed: int


@dataclass
class CalibrationResult:
    """A computed calibration part: the task's ``run``, ``k`` and ``index``, ``top1`` (per probe, the position the
    scorer ranked first), and the worker's facts and ``seconds`` (volatile: never in the part's file)."""

    run: str
    k: int
    index: int
    top1: list[int]
    worker: dict[str, Any]
    seconds: float


@dataclass
class ShardResult:
    """A computed shard: its records (in the task's query order) and what the worker reports about itself
    (``worker``: host, pid, slot, GPU ids, model loads of this process; ``seconds`` of the shard)."""

    run: str
    shard: str
    records: list[dict[str, Any]]
    worker: dict[str, Any]
    seconds: float


class ShardWorker:
    """One scorer, loaded once (see the module docstring).

    ``settings``: :func:`scorer_settings` of a run. ``scorer``: an already built scorer (the local executor may be
    handed one). ``threads``: torch intra-op threads of this worker (set before the model loads; Ray would
    otherwise leave one thread per worker). ``slot``: the worker's number; with ``own_pass_cache`` its pass cache
    is ``<cache>/passes/worker-<slot>/passes.sqlite3`` on its machine, and it also reads the other slots' files
    there (:func:`read_sibling_caches`). ``fault``: a test hook,
    ``{"marker": PATH, "after_queries": N}``: the first process to reach query N of a shard while ``PATH`` does not
    exist creates it and dies with ``os._exit(1)`` (a worker lost in the middle of a shard); with
    ``"after_parts": N`` instead, the first to finish its N-th calibration part does, before returning it.
    """

    def __init__(
        self,
        settings: Mapping[str, Any],
        *,
        scorer: Scorer | None = None,
        threads: int | None = None,
        slot: int = 0,
        own_pass_cache: bool = False,
        fault: Mapping[str, Any] | None = None,
    ) -> None:
        from ..methods import QueryPassCache

        t0 = time.perf_counter()
        self.settings = dict(settings)
        self.config = RunConfig.from_mapping(self.settings, "worker")
        self.threads = threads
        if threads:
            os.environ["OMP_NUM_THREADS"] = str(threads)
            if self.config.scorer != "simulated":
                from ..llm._devices import set_threads

                set_threads(threads)
        pass_cache_dir = None
        if own_pass_cache and self.config.scorer != "simulated":
            from ..assets import cache_dir as default_cache_dir

            root = Path(self.config.cache_dir) if self.config.cache_dir else default_cache_dir()
            pass_cache_dir = str(root / "passes" / f"worker-{slot}")
        self.scorer = scorer or make_run_scorer(self.config, pass_cache_dir=pass_cache_dir)
        if pass_cache_dir is not None:
            read_sibling_caches(self.scorer, Path(pass_cache_dir))
        self.cache = QueryPassCache(self.scorer)
        self.slot = slot
        self.fault = dict(fault) if fault else None
        self.parts_done = 0
        if self.config.scorer != "simulated" and threads is None:  # the number in force ($INVARIRANK_THREADS
            import torch  # or the CPUs), recorded in run.json

            threads = torch.get_num_threads()
        self.info = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "slot": slot,
            "gpu_ids": _gpu_ids(),
            "threads": threads,
            "cpu": cpu_description(),
            "load_seconds": round(time.perf_counter() - t0, 3),
            "loaded_at": time.time(),
        }

    def describe(self) -> dict[str, Any]:
        """The scorer's identity (the manifest's ``model`` section), its key identity (what decides its scores),
        its batch size, and the worker's own facts (host, pid, slot, GPU ids, threads, model load time)."""
        from ..methods import batch_size_of

        return {
            "identity": dict(self.scorer.identity()),
            "key_identity": scorer_key_identity(self.scorer),
            "batch_size": batch_size_of(self.scorer),
            "worker": dict(self.info),
        }

    def check_queries(self, queries: Sequence[Query]) -> int:
        """Check that the scorer can score every query (:meth:`~invarirank.types.ScorerBase.check_query`: an
        empty line, a prompt over ``max_length``, too many candidates for the labels raise
        :class:`~invarirank.errors.InvariRankError` naming the query) before any pass; returns how many were
        checked (a plain scorer without ``check_query`` checks nothing)."""
        from ..types import ScorerBase

        if not isinstance(self.scorer, ScorerBase):
            return 0
        for query in queries:
            self.scorer.check_query(query)
        return len(queries)

    def calibration_part(self, task: CalibrationTask) -> CalibrationResult:
        """One part of the calibration of ``task.method`` (the run's calibrated method, :func:`calibration_method`):
        the probes of one probing query, computed by the method's :class:`~invarirank.methods.registry.Calibrator`
        (``part``). The driver journals it and sums the parts."""
        calibrator = registered_method(task.method).calibrator
        if calibrator is None:
            raise InvariRankError(f"calibrate: method {task.method!r} needs no calibration")
        t0 = time.perf_counter()
        top1 = calibrator.part(self.scorer, task.query, task.k, repeats=task.repeats, seed=task.seed)
        self.parts_done += 1
        self._maybe_die(self.parts_done, "after_parts")
        return CalibrationResult(
            task.run, task.k, task.index, list(top1), dict(self.info), round(time.perf_counter() - t0, 3)
        )

    def run_shard(self, task: ShardTask) -> ShardResult:
        """Rerank the task's queries; records in the task's order."""
        t0 = time.perf_counter()
        config = RunConfig.from_mapping(task.config, f"shard {task.shard}")
        records = []
        for n, record in enumerate(
            rerank_records(
                self.cache, task.queries, config, model=task.model, dataset=task.dataset, calibrations=task.calibrations
            ),
            1,
        ):
            records.append(record)
            self._maybe_die(n, "after_queries")
        self.scorer_stats = dict(self.cache.stats)
        return ShardResult(
            task.run,
            task.shard,
            records,
            {**self.info, "scorer_stats": self.scorer_stats},
            round(time.perf_counter() - t0, 3),
        )

    def _maybe_die(self, n: int, where: str) -> None:
        """The test hook ``fault`` (see the class docstring) after the n-th query of a shard (``after_queries``) or
        the n-th calibration part of this process (``after_parts``)."""
        if not self.fault:
            return
        at = self.fault.get(where)
        if at is None and where == "after_queries" and "after_parts" not in self.fault:
            at = 1  # the hook's first form: {"marker": PATH} alone dies after a shard's first query
        if at is None or n != int(at):
            return
        marker = Path(self.fault["marker"])
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        os._exit(1)


def _gpu_ids() -> list[str]:
    """The accelerators Ray gave this process (``[]`` outside Ray or without GPUs)."""
    ray = sys.modules.get("ray")  # only inside a Ray process: never imported here
    if ray is None or not ray.is_initialized():
        return []
    try:
        return [str(g) for g in ray.get_gpu_ids()]
    except Exception:  # noqa: BLE001 - the driver, not a worker
        return []
