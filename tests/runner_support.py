"""Helpers of the runner tests: a simulated kill of the driver after the n-th finished query or shard."""

from __future__ import annotations

from typing import Callable


class Killed(Exception):
    """Raised by :func:`kill_after`: the driver "dies" right after a unit of work was made durable."""


def kill_after(n: int) -> Callable[[int], None]:
    """A callback for ``on_query_done`` / ``on_shard_done`` that raises :class:`Killed` at its n-th call."""
    def callback(done: int) -> None:
        if done == n:
            raise Killed
    return callback
