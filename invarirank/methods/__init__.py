"""Reranking methods (the protocol chapter's "Methods"): each turns one presented order into one complete ranking
through the :class:`~invarirank.types.Scorer` interface.

``run_method(name, scorer, query, presented, *, seed, t, **options) -> MethodResult`` with ``name`` in
:data:`METHODS`; ``method_steps(name, query, presented, *, seed, t, **options)`` is the same method as a
generator of scorer requests, for :func:`drive_many` (many orders in lockstep, batched scorer calls;
see :mod:`._common`). ``t`` is the presented order's key (:class:`invarirank._orders.PresentedOrder.key`);
every method-internal shuffle is seeded from ``(seed, query_id, t)``. Passes per order: zero-shot 1,
bootstrapping 3, SGS K, STELLA 4–10. The first pass of every method is the presented order itself, so
:class:`QueryPassCache` (the per-query pass cache) serves it once for all methods. STELLA needs ``matrix=`` (from
:func:`invarirank.methods.stella.calibrate` or :func:`~invarirank.methods._stella_calibration.load_or_calibrate`).

Each method's own function lives in its module (``invarirank.methods._sgs.sgs``, ...): the package re-exports no
name that would hide a module of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InvariRankError
from ..types import Item, Query, Scorer
from ._common import ScoreOnly, Steps, as_batch_scorer, batch_size_of, drive, drive_many, drive_window
from ._query_cache import QueryPassCache
from ._result import MethodResult
from ._stella_calibration import load_or_calibrate
from .registry import METHOD_LABELS, METHODS, REGISTRY, Method, method, passes_per_order
from .stella import calibrate

__all__ = ["METHODS"]


def run_method(
    name: str, scorer: Scorer, query: Query, presented: Sequence[Item], *, seed: int, t: int, **options: Any
) -> MethodResult:
    """Run method ``name`` on one presented order (see the module docstring), one scorer call per step."""
    return drive(method_steps(name, query, presented, seed=seed, t=t, **options), scorer, query)


def method_steps(name: str, query: Query, presented: Sequence[Item], *, seed: int, t: int, **options: Any) -> Steps:
    """Method ``name`` on one presented order as a generator of scorer requests (see :mod:`._common`);
    :func:`run_method` drives it one call at a time, :func:`drive_many` many in lockstep."""
    if name not in METHODS:
        raise InvariRankError(f"unknown method {name!r}; expected one of {', '.join(METHODS)}")
    if not presented:
        raise InvariRankError(f"query {query.query_id!r}: empty presented order")
    return method(name).steps(query, presented, seed=seed, t=t, **options)
