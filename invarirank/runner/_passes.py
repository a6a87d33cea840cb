"""Scorer passes a run needs, counted before it runs — the one count that the dry run, the cost line and the grid's
estimate share.

Passes *requested* per presented order come from the method registry (:mod:`invarirank.methods.registry`).
*Distinct* passes — what the scorer really computes with the shared pass cache of one query — are a separate
fact: every method's first pass is the presented order itself (computed once for all methods), and the passes a
method shares with another (the registry's ``shares``: bootstrapping's two shuffles are STELLA_LW's updates 1-2)
are computed once when a run has both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..methods.registry import calibrated_method, passes_per_order, shared_passes
from ._config import RunConfig


def passes_per_presented_order(methods: Sequence[str], k: int, stella_updates: int) -> dict[str, Any]:
    """Scorer calls per presented order of ``k`` candidates: ``requested`` per method (the registry's counts),
    their total, and ``unique``: distinct passes with the shared pass cache (see the module docstring)."""
    requested = {m: passes_per_order(m, k, stella_updates) for m in methods}
    unique = 1 + sum(n - 1 for n in requested.values()) - shared_passes(requested)
    return {"requested": requested, "requested_total": sum(requested.values()), "unique": unique}


def rerank_passes(config: RunConfig, queries: Sequence[Any], stella_updates: int) -> int:
    """Distinct scorer passes of reranking ``queries`` (each at its own K) under ``config.M`` orders, with
    STELLA_LW stopping after ``stella_updates`` updates (4 or 10: the range)."""
    return sum(config.M * passes_per_presented_order(config.methods, q.k, stella_updates)["unique"] for q in queries)


def calibration_need(
    config: RunConfig,
    validation: Sequence[Any],
    ks: Sequence[int],
    key_identity: Mapping[str, Any],
    recorded: Mapping[int, Mapping[str, Any]] | None = None,
    parts: Mapping[int, Sequence[Any]] | None = None,
) -> tuple[int, dict[int, bool], int]:
    """The calibration (STELLA_LW's) still to compute for lists of each K in ``ks``: ``(passes, cached, probes)``
    — passes of the K values whose calibration is neither in the cache (keyed by the scorer's ``key_identity``)
    nor recorded with the run's shards in a form this machine takes (``recorded``, by K), less the probing queries
    whose calibration part is among ``parts`` (journaled so far, by K), ``cached`` per K, and the number of probing
    validation queries of those K still to compute, as the calibrated method's
    :class:`~invarirank.methods.registry.Calibrator` counts them (``need``). Nothing is scored; (0, {}, 0) when no
    method of the run needs a calibration."""
    calibrated = calibrated_method(config.methods)
    if calibrated is None or calibrated.calibrator is None:
        return 0, {}, 0
    passes = probes = 0
    cached: dict[int, bool] = {}
    for k in ks:
        n, cached[k], p = calibrated.calibrator.need(
            validation,
            k,
            key_identity,
            n_queries=config.calibration_queries,
            repeats=config.calibration_repeats,
            seed=config.seed,
            cache_dir=config.cache_dir or None,
            known=(recorded or {}).get(k),
            method=calibrated.name,
            parts=(parts or {}).get(k, ()),
        )
        passes += n
        probes = max(probes, p)
    return passes, cached, probes
