"""The one list of reranking methods: name, display label, steps function, scorer passes per order, and what a
method needs from a run besides the scorer (a calibration, keyword options, passes it shares with another method).

Every other place that needs the methods (the run schema's default, the dry run's pass counts, the runner's
calibration phase, the book's labels and order, the CLI choices) reads them from :data:`REGISTRY`, so that no
method is special-cased by name outside this package. ``REGISTRY`` is in the paper's order of
presentation (zero-shot, bootstrapping, STELLA_LW, SGS), which is also the order a run computes them in.

Passes per presented order of K candidates (the protocol chapter), counted as scorer calls *requested* by the method
(before the shared pass cache removes repeats): zero-shot 1, bootstrapping 3 (the presented order and two seeded
shuffles), SGS K (one pass per selection step; the last step's list has one item left and is still requested),
STELLA_LW between 4 and 10 (stops early once the ranking is stable; ``stella_updates`` = the number it made).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import _calibration_parts as calibration_parts
from . import _stella_calibration as stella_calibration
from . import stella
from ._bootstrapping import bootstrapping_steps
from ._common import Steps
from ._sgs import sgs_steps
from ._zero_shot import zero_shot_steps

__all__ = ["METHODS"]


@dataclass(frozen=True)
class Calibrator:
    """A calibration a method needs before it reranks: one per list length K, computed on the run's validation
    queries with the run's scorer (the runner computes it once per K, records it beside the shards and writes it
    to the run's ``calibration.json``).

    ``compute(scorer, validation, k, *, n_queries, repeats, seed, cache_dir, progress, known)`` returns the
    calibration in one piece (an object with ``.matrix``, ``.counts``, ``.query_ids``, ``to_json()``,
    ``to_record()``), taken from the cache or from ``known`` (a recorded one) when they match.

    The runner computes it in parts instead, one per probing query, spread over its workers and journaled
    (:mod:`invarirank.methods._calibration_parts`): ``plan(validation, k, key_identity, *, method, n_queries,
    repeats, seed, cache_dir, known)`` gives the probing queries, each part's head and the rule a part read back
    is matched by, and ``done`` (the calibration, when the cache or ``known`` has it); ``part(scorer, query, k,
    *, repeats, seed)`` computes one part on a worker; the plan's ``finish(parts)`` sums them into the very
    calibration ``compute`` gives. ``need(validation, k, key_identity, *, method, n_queries, repeats, seed,
    cache_dir, known, parts)`` says what is still to compute, without scoring: ``(passes, cached, probing
    queries)``, the queries whose part is among ``parts`` not counted."""

    compute: Callable[..., Any]
    need: Callable[..., tuple[int, bool, int]]
    plan: Callable[..., Any]
    part: Callable[..., list[int]]


def _no_options(matrix: Any) -> dict[str, Any]:
    return {}


@dataclass(frozen=True)
class Method:
    """One reranking method. ``passes(k, stella_updates)`` = scorer calls it requests on one order of ``k``
    candidates; ``passes_text`` says the same for a printed table.

    ``calibrator``: the calibration it needs per K before it runs (``None``: none; a method with one runs only when
    its calibrations are given). ``options(matrix)``: the keyword options of its steps function, from the
    calibration matrix of the query's K (``None`` for a method without a calibrator). ``shares``: pairs
    ``(other method, n)``: up to ``n`` of its passes after the first are passes ``other`` also requests with the
    same presented lists, so a run with both computes them once (the shared pass cache)."""

    name: str
    label: str
    steps: Callable[..., Steps]
    passes: Callable[[int, int], int]
    passes_text: str
    calibrator: Calibrator | None = None
    options: Callable[[Any], dict[str, Any]] = _no_options
    shares: tuple[tuple[str, int], ...] = ()


REGISTRY: tuple[Method, ...] = (
    Method("zero_shot", "zero-shot", zero_shot_steps, lambda k, u: 1, "1"),
    Method("bootstrapping", "bootstrapping", bootstrapping_steps, lambda k, u: 3, "3"),
    Method(
        "stella",
        "STELLA_LW",
        stella.stella_steps,
        lambda k, u: u,
        "4-10",
        calibrator=Calibrator(
            stella_calibration.load_or_calibrate,
            calibration_parts.calibration_need,
            calibration_parts.plan_calibration,
            calibration_parts.compute_part,
        ),
        options=lambda matrix: {"matrix": matrix},
        # its updates 1-2 present bootstrapping's two seeded shuffles (see invarirank.methods._common)
        shares=(("bootstrapping", 2),),
    ),
    Method("sgs", "SGS", sgs_steps, lambda k, u: k, "K"),
)
#: method names, in the registry's (the paper's) order
#: Stability: full (the reranking methods, in the paper's order).
METHODS: tuple[str, ...] = tuple(m.name for m in REGISTRY)
#: the plain method (the scorer asked once, on the presented order itself): where one method stands for a scorer
BASELINE_METHOD: str = "zero_shot"
#: the methods of the paper's K sweep (its Figures 1 and 2 show zero-shot and bootstrapping at every K)
SWEEP_METHODS: tuple[str, ...] = ("zero_shot", "bootstrapping")
#: the pair the teaching lab contrasts (bootstrapping against SGS, whose ordering the simulation inverts)
LAB_CONTRAST: tuple[str, ...] = ("bootstrapping", "sgs")
#: display labels by name
METHOD_LABELS: dict[str, str] = {m.name: m.label for m in REGISTRY}
_BY_NAME = {m.name: m for m in REGISTRY}


def method(name: str) -> Method:
    """The registered method ``name``; an unknown name raises ``KeyError`` (callers turn it into a clear error)."""
    return _BY_NAME[name]


def passes_per_order(name: str, k: int, stella_updates: int = 10) -> int:
    """Scorer calls method ``name`` requests on one order of ``k`` candidates (STELLA: ``stella_updates``,
    between 4 and 10 with the defaults)."""
    return _BY_NAME[name].passes(k, stella_updates)


def calibrated_method(methods: Iterable[str]) -> Method | None:
    """The method among ``methods`` that needs a calibration, or ``None``. At most one registered method has a
    calibrator (a run's ``calibration.json`` and ``calibrations[K]`` hold one method's), which a test checks."""
    names = set(methods)
    return next((m for m in REGISTRY if m.calibrator is not None and m.name in names), None)


def uncalibrated(methods: Iterable[str] = METHODS) -> tuple[str, ...]:
    """The names among ``methods`` that need no calibration, in the registry's order."""
    names = set(methods)
    return tuple(m.name for m in REGISTRY if m.calibrator is None and m.name in names)


def shared_passes(requested: Mapping[str, int]) -> int:
    """Passes that the methods of ``requested`` (name → passes it requests on one order) request twice with the
    same presented list, so that the shared pass cache computes them once (each method's ``shares``). A method's
    first pass (the presented order itself) is shared by all and counted by the caller, so at most ``passes - 1``
    of a method's passes are shared this way."""
    return sum(
        min(requested[m.name] - 1, n)
        for m in REGISTRY
        if m.name in requested
        for other, n in m.shares
        if other in requested
    )
