"""Helpers of the runner tests: a candidates file of toy queries, a small simulated run's config, and a simulated
kill of the driver after the n-th finished query or shard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from invarirank.candidates import write_candidates
from invarirank.llm._testing import toy_split_queries
from invarirank.runner import LocalExecutor, RunConfig


def toy_candidates(folder: Path) -> Path:
    """``folder/cands.jsonl``: the toy test and validation queries of :func:`toy_split_queries` (K = 6)."""
    path = folder / "cands.jsonl"
    write_candidates(path, toy_split_queries())
    return path


def simulated_config(cands: Path, out: Path, **kw: Any) -> RunConfig:
    """A small simulated run of ``cands`` into ``out`` (K = 6, M = 4, a 3 x 2 STELLA_LW calibration); ``kw``
    override any setting."""
    base = dict(
        candidates=str(cands),
        scorer="simulated",
        K=6,
        M=4,
        calibration_queries=3,
        calibration_repeats=2,
        n_bootstrap=20,
        out=str(out),
        seed=7,
    )
    base.update(kw)
    return RunConfig.from_mapping(base)


class Killed(Exception):
    """Raised by :func:`kill_after`: the driver "dies" right after a unit of work was made durable."""


def kill_after(n: int) -> Callable[[int], None]:
    """A callback for ``on_shard_done`` that raises :class:`Killed` at its n-th call."""

    def callback(done: int) -> None:
        if done == n:
            raise Killed

    return callback


def calibration_candidates(folder: Path) -> Path:
    """``folder/cands.jsonl``: 6 toy test and 8 validation queries of 8 candidates (:func:`toy_split_queries`), four
    of the validation queries with 2 to 4 relevant candidates among their first 8: a calibration of several parts
    of unequal size (with :func:`simulated_config`'s K = 6 and ``calibration_queries=5``: 5 parts)."""
    from dataclasses import replace

    extra = {"v1": 2, "v3": 1, "v4": 3, "v6": 2}
    queries = []
    for q in toy_split_queries(n_test=6, n_validation=8, k=8):
        if q.query_id in extra:
            more = [c.item_id for c in q.candidates[:6] if c.item_id not in q.ground_truth][: extra[q.query_id]]
            q = replace(q, ground_truth=(*q.ground_truth, *more))
        queries.append(q)
    path = folder / "cands.jsonl"
    write_candidates(path, queries)
    return path


class CountingExecutor(LocalExecutor):
    """The local executor, recording the probing query of every calibration part it is asked to compute
    (``parts``): what a resumed calibration really computed."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def map_calibration(self, config: Any, tasks: Any, on_result: Any) -> None:
        self.parts += [t.query.query_id for t in tasks]
        super().map_calibration(config, tasks, on_result)
