"""Executors: who computes a run's shards. ``local`` (this process) and ``ray`` (a Ray cluster, or a local Ray).

Both are an :class:`Executor` (the protocol :func:`invarirank.runner.ensure_runs` computes runs with):
``describe(config)`` (the scorer's identity, from a worker that loaded it), ``calibrate(config, validation, k)``
(STELLA_LW's calibration: one unit of work), ``map_shards(config, tasks, on_result)`` (compute
:class:`~invarirank.runner.worker.ShardTask` s, handing each :class:`~invarirank.runner.worker.ShardResult` to
``on_result`` in the driver as it arrives), ``default_shard_queries(config)`` (the shard size of a run that sets
none), ``info()`` and ``worker_facts()`` (for ``run.json``) and ``close()``; each is a context manager. Workers
are :class:`~invarirank.runner.worker.ShardWorker` s: one scorer each, loaded once and kept for every shard of every
run with the same scorer settings.

**ray.** Without ``address`` it starts a local Ray (a laptop, or one machine with several GPUs; it stays on the
loopback interface) and shuts it down at the end — never with more CPUs than the machine has: workers × CPUs per
worker beyond it are dropped with a note (:func:`invarirank.limits.local_ray_cpus`); with ``address`` (``auto``, or
``HOST:PORT`` of a head node started by ``ray start --head``, e.g. inside a Slurm allocation) it joins that cluster,
after checking within ``connect_timeout`` seconds that something answers there. One actor per ``gpus_per_shard``
GPUs (default 1 on a cluster with GPUs, for a real scorer) or per ``cpus_per_worker`` CPUs; ``workers`` caps their
number. Each actor sets ``threads_per_worker`` torch threads (default ``cpus_per_worker``: Ray would otherwise leave
one) and keeps its own pass cache on its machine. An actor that dies (a lost node, ``os._exit``, out of memory) is
restarted and its shard computed again (``max_retries`` times); shards go to whichever actor is free.

Executor, shard size and thread counts are never part of a run's identity (they only reach ``run.json``).
"""

from __future__ import annotations

import json
import os
import socket
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import InvariRankError, RunFailed
from ..limits import local_ray_cpus
from ..types import Query, Scorer
from .config import RunConfig
from .shards import DEFAULT_SHARD_QUERIES
from .worker import ShardResult, ShardTask, ShardWorker, calibration_method, scorer_settings

__all__ = [
    "EXECUTORS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "make_executor",
    "check_executor_options",
    "check_address",
]

#: the executors' names (``--executor``)
EXECUTORS = ("local", "ray")

_E = TypeVar("_E", bound="_Executor")


def _settings_key(config: RunConfig) -> str:
    return json.dumps(scorer_settings(config), sort_keys=True, default=str)


@runtime_checkable
class Executor(Protocol):
    """Who computes a run's shards: what :func:`invarirank.runner.ensure_runs` asks of an executor. The runs
    handed to one ``map_shards`` call share their scorer settings
    (:func:`~invarirank.runner.worker.scorer_settings`), so one pool of workers serves them all."""

    name: str

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: Any) -> None: ...

    def describe(self, config: RunConfig) -> dict[str, Any]:
        """The scorer's facts from a worker that loaded it (:meth:`~invarirank.runner.worker.ShardWorker.describe`)."""
        ...

    def check_queries(self, config: RunConfig, queries: Sequence[Query]) -> None:
        """Raise :class:`~invarirank.errors.InvariRankError` for a query the scorer cannot score
        (:meth:`~invarirank.runner.worker.ShardWorker.check_queries` on one worker), before any pass."""
        ...

    def calibrate(
        self,
        config: RunConfig,
        validation: Sequence[Query],
        k: int,
        progress: bool = False,
        known: Mapping[str, Any] | None = None,
    ) -> Any:
        """STELLA_LW's calibration for lists of ``k`` (a :class:`~invarirank.methods.stella.Calibration`);
        ``progress``: a progress bar over its passes (on standard error; a Ray worker's is forwarded by Ray);
        ``known``: the calibration the run's committed shards were made with (:meth:`Calibration.to_record
        <invarirank.methods.stella.Calibration.to_record>`), taken instead of computing when it matches."""
        ...

    def map_shards(
        self, config: RunConfig, tasks: Sequence[ShardTask], on_result: Callable[[ShardResult], None]
    ) -> None:
        """Compute every task; hand each result to ``on_result`` in the driver's process as it arrives."""
        ...

    def default_shard_queries(self, config: RunConfig) -> int:
        """Queries per shard of a run that sets no ``shard_queries`` (an execution setting: never in its
        results)."""
        ...

    def info(self) -> dict[str, Any]:
        """The executor's settings for the volatile file ``run.json``."""
        ...

    def worker_facts(self) -> list[dict[str, Any]]:
        """What each current worker reported when it started (host, pid, slot, GPU ids, load), for ``run.json``."""
        ...

    def close(self) -> None:
        """Release the workers (and a local Ray started here)."""
        ...


class _Executor:
    """What both executors share: a context manager, nothing to release, no start-up facts of their own."""

    name = "?"

    def __enter__(self: _E) -> _E:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the workers (and a local Ray started here)."""

    def info(self) -> dict[str, Any]:
        """The executor's settings for the volatile file."""
        return {"executor": self.name}

    def worker_facts(self) -> list[dict[str, Any]]:
        """Start-up facts of workers not seen in any shard's result (none here)."""
        return []

    def default_shard_queries(self, config: RunConfig) -> int:
        return DEFAULT_SHARD_QUERIES


class LocalExecutor(_Executor):
    """The driver's own process: one in-process :class:`ShardWorker` (``scorer``: use this scorer instead of
    building one), shards one after the other. A run that sets no shard size is computed one query per shard
    (``query_window`` queries with a window), so a killed run loses at most the query it was computing."""

    name = "local"

    def __init__(self, scorer: Scorer | None = None) -> None:
        self._scorer = scorer
        self._key: str | None = None
        self._worker: ShardWorker | None = None

    def worker(self, config: RunConfig) -> ShardWorker:
        """The worker for ``config``'s scorer settings (built on first use, kept while they stay the same)."""
        key = _settings_key(config)
        if self._worker is None or key != self._key:
            self._worker = ShardWorker(scorer_settings(config), scorer=self._scorer)
            self._key = key
        return self._worker

    def describe(self, config: RunConfig) -> dict[str, Any]:
        return self.worker(config).describe()

    def check_queries(self, config: RunConfig, queries: Sequence[Query]) -> None:
        self.worker(config).check_queries(queries)

    def calibrate(
        self,
        config: RunConfig,
        validation: Sequence[Query],
        k: int,
        progress: bool = False,
        known: Mapping[str, Any] | None = None,
    ) -> Any:
        return self.worker(config).calibrate(
            validation,
            k,
            method=calibration_method(config),
            n_queries=config.calibration_queries,
            repeats=config.calibration_repeats,
            seed=config.seed,
            cache_dir=config.cache_dir,
            progress=progress,
            known=known,
        )

    def map_shards(
        self, config: RunConfig, tasks: Sequence[ShardTask], on_result: Callable[[ShardResult], None]
    ) -> None:
        worker = self.worker(config)
        for task in tasks:
            on_result(worker.run_shard(task))

    def default_shard_queries(self, config: RunConfig) -> int:
        return max(1, int(config.query_window or 1))

    def worker_facts(self) -> list[dict[str, Any]]:
        return [dict(self._worker.info)] if self._worker is not None else []

    def info(self) -> dict[str, Any]:
        return {"executor": "local", "workers": 1}


def check_address(address: str, timeout: float) -> None:
    """Raise :class:`InvariRankError` unless something accepts a TCP connection at ``HOST:PORT`` within
    ``timeout`` seconds (``auto`` is left to Ray, which fails at once when no cluster runs on this machine)."""
    if address == "auto":
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvariRankError(f"--address {address!r}: expected 'auto' or HOST:PORT of a Ray head node")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except OSError as exc:
        raise InvariRankError(
            f"--address {address}: no Ray cluster answers there within {timeout:g} s ({exc}); "
            f"start one with `ray start --head` or leave --address out for a local Ray"
        ) from None


_LOOPBACK = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def _keep_on_loopback(ray: Any) -> None:
    """With ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` a local Ray registers its node as 127.0.0.1; Ray reads the
    variable when it is imported, so apply it also when Ray was imported before the variable was set."""
    if os.environ.get(_LOOPBACK) == "0":
        try:
            ray._private.ray_constants.ENABLE_RAY_CLUSTER = False
        except AttributeError:  # pragma: no cover - another Ray version: the variable alone applies
            pass


class RayExecutor(_Executor):
    """Shards on a Ray cluster (see the module docstring). ``fault`` is a test hook passed to every worker
    (:class:`ShardWorker`)."""

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        gpus_per_shard: float | None = None,
        workers: int | None = None,
        cpus_per_worker: float = 1,
        threads_per_worker: int | None = None,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        fault: Mapping[str, Any] | None = None,
    ) -> None:
        if gpus_per_shard is not None and gpus_per_shard < 0:
            raise InvariRankError(f"--gpus-per-shard {gpus_per_shard}: expected 0 or more")
        if workers is not None and workers < 1:
            raise InvariRankError(f"--workers {workers}: expected at least 1")
        if cpus_per_worker <= 0:
            raise InvariRankError(f"--cpus-per-worker {cpus_per_worker}: expected more than 0")
        self.address = address
        self.gpus_per_shard = gpus_per_shard
        self.workers = workers
        self.cpus_per_worker = cpus_per_worker
        self.threads_per_worker = threads_per_worker or max(1, int(cpus_per_worker))
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        self.fault = dict(fault) if fault else None
        self._ray: Any = None
        self._owns = False
        self._key: str | None = None
        self._actors: list[Any] = []
        self._facts: list[dict[str, Any]] = []
        self._gpus_now = 0.0
        self.start()

    # -- the cluster ---------------------------------------------------------------------------
    def start(self) -> None:
        """Join the cluster at ``address``, or start a local Ray (see the module docstring)."""
        if not self.address:  # a local Ray stays on 127.0.0.1 (Ray reads this when imported)
            os.environ.setdefault(_LOOPBACK, "0")
        try:
            import ray
        except ImportError:
            raise InvariRankError("--executor ray needs Ray: pip install 'invarirank[ray]' (or `make setup`)") from None
        self._ray = ray
        if self.address:
            check_address(self.address, self.connect_timeout)
        if ray.is_initialized():  # a caller (a test, a notebook) already started or joined one
            return
        package_parent = str(Path(__file__).resolve().parents[2])
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if package_parent not in paths:  # workers import this very checkout of invarirank
            os.environ["PYTHONPATH"] = os.pathsep.join([package_parent, *paths])
        try:
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                _keep_on_loopback(ray)
                cpus, self.workers = local_ray_cpus(self.workers, self.cpus_per_worker)
                ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
        except InvariRankError:
            raise
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = self.address or "a local Ray"
            raise InvariRankError(
                f"--executor ray: could not start or join {where}: "
                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
            ) from None
        self._owns = True

    def resources(self) -> dict[str, float]:
        """The cluster's total resources (``CPU``, ``GPU``, ...)."""
        return dict(self._ray.cluster_resources())

    def close(self) -> None:
        self._kill_pool()
        if self._owns and self._ray is not None and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns = False

    def info(self) -> dict[str, Any]:
        return {
            "executor": "ray",
            "address": self.address or "local",
            "workers": len(self._actors),
            "gpus_per_shard": self._gpus_now,
            "cpus_per_worker": self.cpus_per_worker,
            "threads_per_worker": self.threads_per_worker,
        }

    # -- the workers ---------------------------------------------------------------------------
    def _kill_pool(self) -> None:
        for actor in self._actors:
            try:
                self._ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors, self._facts, self._key = [], [], None

    def _gpus_for(self, config: RunConfig, available: float) -> float:
        if self.gpus_per_shard is not None:
            if self.gpus_per_shard > available:
                raise InvariRankError(
                    f"--gpus-per-shard {self.gpus_per_shard:g}: the Ray cluster has {available:g} GPUs"
                )
            return float(self.gpus_per_shard)
        wants_gpu = config.scorer != "simulated" and config.device not in ("cpu",)
        return 1.0 if wants_gpu and available >= 1 else 0.0

    def pool(self, config: RunConfig) -> list[Any]:
        """The actors for ``config``'s scorer settings (started once; another scorer's pool is released first)."""
        key = _settings_key(config)
        if key == self._key and self._actors:
            return self._actors
        self._kill_pool()
        res = self.resources()
        gpus = self._gpus_for(config, float(res.get("GPU", 0.0)))
        room = int(res.get("GPU", 0.0) // gpus) if gpus else int(res.get("CPU", 0.0) // self.cpus_per_worker)
        if room < 1:
            raise InvariRankError(
                f"--executor ray: the cluster ({res.get('CPU', 0):g} CPUs, {res.get('GPU', 0):g} "
                f"GPUs) has no room for one worker of {self.cpus_per_worker:g} CPUs and "
                f"{gpus:g} GPUs"
            )
        n = room if self.workers is None else self.workers
        if n > room:
            raise InvariRankError(
                f"--workers {n}: the Ray cluster has room for {room} workers of "
                f"{self.cpus_per_worker:g} CPUs and {gpus:g} GPUs"
            )
        actor = self._ray.remote(
            num_cpus=self.cpus_per_worker,
            num_gpus=gpus,
            max_restarts=self.max_retries,
            max_task_retries=self.max_retries,
        )(ShardWorker)
        self._actors = [
            actor.remote(
                scorer_settings(config), threads=self.threads_per_worker, slot=i, own_pass_cache=True, fault=self.fault
            )
            for i in range(n)
        ]
        self._facts = self._get([a.describe.remote() for a in self._actors], "starting the workers")
        self._key, self._gpus_now = key, gpus
        return self._actors

    def worker_facts(self) -> list[dict[str, Any]]:
        """What each worker of the current pool reported when it started (host, pid, slot, GPU ids, load)."""
        return [f["worker"] for f in self._facts]

    def _get(self, refs: Any, what: str) -> Any:
        try:
            return self._ray.get(refs)
        except self._ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, InvariRankError):
                raise InvariRankError(str(cause)) from None
            raise RunFailed(f"ray: {what} failed: {str(cause or exc).strip().splitlines()[-1]}") from None
        except self._ray.exceptions.RayError as exc:
            raise RunFailed(
                f"ray: {what} failed: {type(exc).__name__}: "
                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
            ) from None

    def describe(self, config: RunConfig) -> dict[str, Any]:
        self.pool(config)
        return self._facts[0]

    def check_queries(self, config: RunConfig, queries: Sequence[Query]) -> None:
        first = self.pool(config)[0]
        self._get(first.check_queries.remote(list(queries)), "the check of the queries")

    def calibrate(
        self,
        config: RunConfig,
        validation: Sequence[Query],
        k: int,
        progress: bool = False,
        known: Mapping[str, Any] | None = None,
    ) -> Any:
        first = self.pool(config)[0]
        return self._get(
            first.calibrate.remote(
                list(validation),
                k,
                method=calibration_method(config),
                n_queries=config.calibration_queries,
                repeats=config.calibration_repeats,
                seed=config.seed,
                cache_dir=config.cache_dir,
                progress=progress,
                known=None if known is None else dict(known),
            ),
            f"STELLA calibration at K={k}",
        )

    def map_shards(
        self, config: RunConfig, tasks: Sequence[ShardTask], on_result: Callable[[ShardResult], None]
    ) -> None:
        """Every task on the first free actor; results handed to ``on_result`` in the driver as they finish."""
        idle = list(reversed(self.pool(config)))
        queue = deque(tasks)
        pending: dict[Any, tuple[Any, ShardTask]] = {}
        while queue or pending:
            while idle and queue:
                actor, task = idle.pop(), queue.popleft()
                pending[actor.run_shard.remote(task)] = (actor, task)
            ready, _ = self._ray.wait(list(pending), num_returns=1)
            actor, task = pending.pop(ready[0])
            result = self._get(ready[0], f"shard {task.shard} of {Path(task.run).name}")
            on_result(result)
            idle.append(actor)


def check_executor_options(
    name: str,
    *,
    address: str | None = None,
    gpus_per_shard: float | None = None,
    workers: int | None = None,
    cpus_per_worker: float = 1,
    threads_per_worker: int | None = None,
    connect_timeout: float = 10.0,
) -> None:
    """The executor's name and the options that need another one: a Ray option (given, not its default) with the
    local executor, or a connection timeout without an address, would be ignored without a word; each is an error
    naming its flag (the command line checks this before a dry run too, so both refuse the same flags)."""
    if name not in EXECUTORS:
        raise InvariRankError(f"--executor {name!r}: expected one of {', '.join(EXECUTORS)}")
    for flag, value, default, needs, applies in (
        ("--address", address, None, "--executor ray", name == "ray"),
        ("--gpus-per-shard", gpus_per_shard, None, "--executor ray", name == "ray"),
        ("--workers", workers, None, "--executor ray", name == "ray"),
        ("--cpus-per-worker", cpus_per_worker, 1, "--executor ray", name == "ray"),
        ("--threads-per-worker", threads_per_worker, None, "--executor ray", name == "ray"),
        ("--connect-timeout", connect_timeout, 10.0, "--address", bool(address)),
    ):
        if value != default and not applies:
            raise InvariRankError(f"{flag} needs {needs} (it does nothing otherwise)")


def make_executor(
    name: str,
    *,
    address: str | None = None,
    gpus_per_shard: float | None = None,
    workers: int | None = None,
    cpus_per_worker: float = 1,
    threads_per_worker: int | None = None,
    connect_timeout: float = 10.0,
) -> Executor:
    """The executor called ``name`` (:data:`EXECUTORS`); Ray options with ``local`` are an error
    (:func:`check_executor_options`)."""
    check_executor_options(
        name,
        address=address,
        gpus_per_shard=gpus_per_shard,
        workers=workers,
        cpus_per_worker=cpus_per_worker,
        threads_per_worker=threads_per_worker,
        connect_timeout=connect_timeout,
    )
    if name == "local":
        return LocalExecutor()
    return RayExecutor(
        address,
        gpus_per_shard=gpus_per_shard,
        workers=workers,
        cpus_per_worker=cpus_per_worker,
        threads_per_worker=threads_per_worker,
        connect_timeout=connect_timeout,
    )
