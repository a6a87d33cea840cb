"""Helpers of the runner tests: a candidates file of toy queries, a small simulated run's config, and a simulated
kill of the driver after the n-th finished query or shard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from invarirank.candidates import write_candidates
from invarirank.llm._testing import toy_split_queries
from invarirank.runner import RunConfig


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
