"""Executors: who computes a run's shards. ``local`` (this process) and ``ray`` (a Ray cluster, or a local Ray).

Both are an :class:`Executor` (the protocol :func:`invarirank.runner.ensure_runs` computes runs with):
``describe(config)`` (the scorer's identity, from a worker that loaded it), ``map_calibration(config, tasks,
on_result)`` (STELLA_LW's calibration parts, one probing query each), ``map_shards(config, tasks, on_result)`` (compute
:class:`~invarirank.runner._worker.ShardTask` s, handing each :class:`~invarirank.runner._worker.ShardResult` to
``on_result`` in the driver as it arrives), ``default_shard_queries(config)`` (the shard size of a run that sets
none), ``info()`` and ``worker_facts()`` (for ``run.json``) and ``close()``; each is a context manager. Workers
are :class:`~invarirank.runner._worker.ShardWorker` s: one scorer each, loaded once and kept for every shard of every
run with the same scorer settings.

The ``ray`` executor is :mod:`invarirank.runner._ray_executor`; the protocol and the base both share,
:mod:`invarirank.runner._executor_protocol`.

Executor, shard size and thread counts are never part of a run's identity (they only reach ``run.json``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InvariRankError
from ..types import Query, Scorer
from ._config import RunConfig
from ._executor_protocol import Executor, ExecutorBase, settings_key
from ._ray_executor import RayExecutor
from ._worker import CalibrationResult, CalibrationTask, ShardResult, ShardTask, ShardWorker, scorer_settings

#: the executors' names (``--executor``)
EXECUTORS = ("local", "ray")


class LocalExecutor(ExecutorBase):
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
        key = settings_key(config)
        if self._worker is None or key != self._key:
            self._worker = ShardWorker(scorer_settings(config), scorer=self._scorer)
            self._key = key
        return self._worker

    def describe(self, config: RunConfig) -> dict[str, Any]:
        return self.worker(config).describe()

    def check_queries(self, config: RunConfig, queries: Sequence[Query]) -> None:
        self.worker(config).check_queries(queries)

    def map_calibration(
        self, config: RunConfig, tasks: Sequence[CalibrationTask], on_result: Callable[[CalibrationResult], None]
    ) -> None:
        worker = self.worker(config)
        for task in tasks:
            on_result(worker.calibration_part(task))

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
