"""The :class:`Executor` protocol (what :func:`invarirank.runner.ensure_runs` computes runs with) and the base the
``local`` and ``ray`` executors share: a context manager that closes, with no facts about workers by default.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..types import Query
from ._config import RunConfig
from ._shards import DEFAULT_SHARD_QUERIES
from ._worker import CalibrationResult, CalibrationTask, ShardResult, ShardTask, scorer_settings

_E = TypeVar("_E", bound="ExecutorBase")


def settings_key(config: RunConfig) -> str:
    return json.dumps(scorer_settings(config), sort_keys=True, default=str)


@runtime_checkable
class Executor(Protocol):
    """Who computes a run's shards: what :func:`invarirank.runner.ensure_runs` asks of an executor. The runs
    handed to one ``map_shards`` call share their scorer settings
    (:func:`~invarirank.runner._worker.scorer_settings`), so one pool of workers serves them all."""

    name: str

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: Any) -> None: ...

    def describe(self, config: RunConfig) -> dict[str, Any]:
        """The scorer's facts from a worker that loaded it (:meth:`~invarirank.runner._worker.ShardWorker.describe`)."""
        ...

    def check_queries(self, config: RunConfig, queries: Sequence[Query]) -> None:
        """Raise :class:`~invarirank.errors.InvariRankError` for a query the scorer cannot score
        (:meth:`~invarirank.runner._worker.ShardWorker.check_queries` on one worker), before any pass."""
        ...

    def map_calibration(
        self, config: RunConfig, tasks: Sequence[CalibrationTask], on_result: Callable[[CalibrationResult], None]
    ) -> None:
        """Compute every calibration part (:class:`~invarirank.runner._worker.CalibrationTask`, one probing query
        each) on the workers; hand each result to ``on_result`` in the driver's process as it arrives (it journals
        the part, :mod:`invarirank.runner._calibration`)."""
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


class ExecutorBase:
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
