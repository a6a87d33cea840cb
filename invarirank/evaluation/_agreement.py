"""Agreement between two orderings of the same labels (e.g. methods best first under two metrics).

An ordering is a sequence of distinct labels, best first. :func:`kendall_tau` compares two orderings on the
labels both hold: +1 the same order, -1 reversed (tau-a: no ties within an ordering).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import combinations


def kendall_tau(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Kendall's tau between orderings ``a`` and ``b`` (best first) over their common labels; ``None`` when
    they share fewer than two."""
    common = [x for x in a if x in b]
    if len(common) < 2:
        return None
    ra = {x: i for i, x in enumerate(x for x in a if x in common)}
    rb = {x: i for i, x in enumerate(x for x in b if x in common)}
    pairs = list(combinations(common, 2))
    concordant = sum(1 if (ra[x] - ra[y]) * (rb[x] - rb[y]) > 0 else -1 for x, y in pairs)
    return concordant / len(pairs)
