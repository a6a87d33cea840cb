"""The one list of reranking methods: name, display label, steps function and scorer passes per order.

Every other place that needs the methods (the run schema's default, the dry run's pass counts, the book's labels
and order, the CLI choices) reads them from :data:`REGISTRY`. ``REGISTRY`` is in the paper's order of
presentation (zero-shot, bootstrapping, STELLA_LW, SGS), which is also the order a run computes them in.

Passes per presented order of K candidates (the protocol chapter), counted as scorer calls *requested* by the method
(before the shared pass cache removes repeats): zero-shot 1, bootstrapping 3 (the presented order and two seeded
shuffles), SGS K (one pass per selection step; the last step's list has one item left and is still requested),
STELLA_LW between 4 and 10 (stops early once the ranking is stable; ``stella_updates`` = the number it made).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._common import Steps
from .bootstrapping import bootstrapping_steps
from .sgs import sgs_steps
from .stella import stella_steps
from .zero_shot import zero_shot_steps

__all__ = [
    "Method",
    "REGISTRY",
    "METHODS",
    "METHOD_LABELS",
    "SWEEP_METHODS",
    "LAB_CONTRAST",
    "method",
    "passes_per_order",
]


@dataclass(frozen=True)
class Method:
    """One reranking method. ``passes(k, stella_updates)`` = scorer calls it requests on one order of ``k``
    candidates; ``passes_text`` says the same for a printed table."""

    name: str
    label: str
    steps: Callable[..., Steps]
    passes: Callable[[int, int], int]
    passes_text: str


REGISTRY: tuple[Method, ...] = (
    Method("zero_shot", "zero-shot", zero_shot_steps, lambda k, u: 1, "1"),
    Method("bootstrapping", "bootstrapping", bootstrapping_steps, lambda k, u: 3, "3"),
    Method("stella", "STELLA_LW", stella_steps, lambda k, u: u, "4-10"),
    Method("sgs", "SGS", sgs_steps, lambda k, u: k, "K"),
)
#: method names, in the registry's (the paper's) order (stability: full, the package's front door)
METHODS: tuple[str, ...] = tuple(m.name for m in REGISTRY)
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
