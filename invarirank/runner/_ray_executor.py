"""The ``ray`` executor (:class:`RayExecutor`): a run's shards on a Ray cluster, or on a local Ray.

Without ``address`` it starts a local Ray (a laptop, or one machine with several GPUs; it stays on the
loopback interface) and shuts it down at the end — never with more CPUs than the machine has: workers × CPUs per
worker beyond it are dropped with a note (:func:`invarirank._limits.local_ray_cpus`); with ``address`` (``auto``, or
``HOST:PORT`` of a head node started by ``ray start --head``, e.g. inside a Slurm allocation) it joins that cluster,
after checking within ``connect_timeout`` seconds that something answers there. One actor per ``gpus_per_shard``
GPUs (default 1 on a cluster with GPUs, for a real scorer) or per ``cpus_per_worker`` CPUs; ``workers`` caps their
number. Each actor sets ``threads_per_worker`` torch threads (default ``cpus_per_worker``: Ray would otherwise leave
one) and keeps its own pass cache on its machine. An actor that dies (a lost node, ``os._exit``, out of memory) is
restarted and its shard computed again (``max_retries`` times); shards go to whichever actor is free, and so do
STELLA_LW's calibration parts (one probing query each) before them.
"""

from __future__ import annotations

import os
import socket
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from .._limits import local_ray_cpus
from ..errors import InvariRankError, RunFailed
from ..types import Query
from ._config import RunConfig
from ._executor_protocol import ExecutorBase, settings_key
from ._worker import CalibrationResult, CalibrationTask, ShardResult, ShardTask, ShardWorker, scorer_settings

_T = TypeVar("_T")


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


class RayExecutor(ExecutorBase):
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
        key = settings_key(config)
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

    def map_calibration(
        self, config: RunConfig, tasks: Sequence[CalibrationTask], on_result: Callable[[CalibrationResult], None]
    ) -> None:
        """Every calibration part on the first free actor; results handed to ``on_result`` as they finish."""
        self._spread(
            config,
            tasks,
            lambda actor, task: actor.calibration_part.remote(task),
            lambda task: f"STELLA calibration at K={task.k} (probing query {task.query.query_id})",
            on_result,
        )

    def map_shards(
        self, config: RunConfig, tasks: Sequence[ShardTask], on_result: Callable[[ShardResult], None]
    ) -> None:
        """Every task on the first free actor; results handed to ``on_result`` in the driver as they finish."""
        self._spread(
            config,
            tasks,
            lambda actor, task: actor.run_shard.remote(task),
            lambda task: f"shard {task.shard} of {Path(task.run).name}",
            on_result,
        )

    def _spread(
        self,
        config: RunConfig,
        tasks: Sequence[_T],
        submit: Callable[[Any, _T], Any],
        what: Callable[[_T], str],
        on_result: Callable[[Any], None],
    ) -> None:
        """Each task submitted to the first free actor of the pool (``submit(actor, task)`` → a Ray reference);
        each result handed to ``on_result`` in the driver as it finishes (``what(task)`` names it in an error)."""
        idle = list(reversed(self.pool(config)))
        queue = deque(tasks)
        pending: dict[Any, tuple[Any, _T]] = {}
        while queue or pending:
            while idle and queue:
                actor, task = idle.pop(), queue.popleft()
                pending[submit(actor, task)] = (actor, task)
            ready, _ = self._ray.wait(list(pending), num_returns=1)
            actor, task = pending.pop(ready[0])
            result = self._get(ready[0], what(task))
            on_result(result)
            idle.append(actor)
