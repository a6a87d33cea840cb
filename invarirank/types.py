"""Core value types shared by the stages.

Conventions used everywhere in the package:

* Item ids are strings.
* Positions are **0-based presented positions**: the index of a candidate in the list as it was
  written into the prompt (``presented``), never an output rank, unless a name says ``rank``.
* Scores: higher = preferred. A ranking is a list of item ids, best first.
* Ties between equal scores go to the candidate at the earlier presented position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Item", "HistoryEntry", "Query", "ScoreResult", "Scorer", "rank_by_scores"]


@dataclass(frozen=True)
class Item:
    """A catalogue item as the prompts render it.

    ``year`` is an integer or ``None`` (Amazon items have none); ``genres`` holds MovieLens genres or
    Amazon categories, in their original order.
    """

    item_id: str
    title: str
    year: int | None = None
    genres: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "title": self.title, "year": self.year, "genres": list(self.genres)}


@dataclass(frozen=True)
class HistoryEntry:
    """One past interaction of the user: the item and the user's own rating (low ratings included)."""

    item: Item
    rating: float


@dataclass(frozen=True)
class Query:
    """One reranking query.

    ``history`` is newest first (at most 20 entries by default); ``candidates`` are in first-stage
    retrieval order (best first); ``ground_truth`` holds the relevant item ids (possibly not among the
    candidates). ``split`` is ``"test"`` or ``"validation"``.
    """

    query_id: str
    user_id: str
    history: tuple[HistoryEntry, ...]
    candidates: tuple[Item, ...]
    ground_truth: tuple[str, ...]
    split: str = "test"
    candidate_scores: tuple[float, ...] = field(default=())

    @property
    def k(self) -> int:
        return len(self.candidates)


@dataclass(frozen=True)
class ScoreResult:
    """What a scorer returns for one presented order.

    ``scores[i]`` belongs to ``presented[i]`` (float32, higher = preferred); ``tokens`` is the number of
    token positions the scorer actually computed for this call (0 when served from a cache or simulated).
    """

    scores: np.ndarray
    tokens: int = 0
    cached: bool = False


@runtime_checkable
class Scorer(Protocol):
    """Scores a serialised candidate list: one forward pass per presented order."""

    name: str

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        """Return one score per presented candidate (aligned with ``presented``)."""
        ...

    def identity(self) -> dict[str, Any]:
        """A JSON-able description (model, weights hash, dtype, device, template version...) used in
        manifests and cache keys."""
        ...


def rank_by_scores(scores: Sequence[float] | np.ndarray) -> list[int]:
    """Presented positions ordered best first: descending score, ties to the earlier position."""
    arr = np.asarray(scores, dtype=np.float64)
    # stable sort on the negated scores keeps equal scores in presented order
    return [int(i) for i in np.argsort(-arr, kind="stable")]
