"""The value every method returns for one presented order."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MethodResult:
    """``output``: the complete ranking (item ids, best first); ``scores``: the first pass's scores,
    aligned with the presented order (the first pass of every method is the presented order itself, so
    these equal the zero-shot scores of that order); ``passes``: scorer calls the method made for this
    order (before any de-duplication by a pass cache)."""

    output: list[str]
    scores: list[float]
    passes: int
