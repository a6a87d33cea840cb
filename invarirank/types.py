"""Core value types shared by the stages.

Conventions used everywhere in the package:

* Item ids are strings.
* Positions are **0-based presented positions**: the index of a candidate in the list as it was
  written into the prompt (``presented``), never an output rank, unless a name says ``rank``.
* Scores: higher = preferred. A ranking is a list of item ids, best first.
* Ties between equal scores go to the candidate at the earlier presented position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Query", "Item", "HistoryEntry", "ScoreResult", "Scorer"]


@dataclass(frozen=True)
class Item:
    """A catalogue item as the prompts render it.

    ``year`` is an integer or ``None`` (Amazon items have none); ``genres`` holds MovieLens genres or
    Amazon categories, in their original order.

    Stability: full (your queries, candidates and history; a rating is optional).
    """

    item_id: str
    title: str
    year: int | None = None
    genres: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "title": self.title, "year": self.year, "genres": list(self.genres)}


@dataclass(frozen=True)
class HistoryEntry:
    """One past interaction of the user: the item and the user's own rating (low ratings included), or ``None`` for
    implicit feedback (a click, a purchase, a view: no rating to invent); the prompts then omit the rating.

    Stability: full (your queries, candidates and history; a rating is optional)."""

    item: Item
    rating: float | None = None


@dataclass(frozen=True)
class Query:
    """One reranking query.

    ``history`` is newest first (at most 20 entries by default); ``candidates`` are in first-stage
    retrieval order (best first); ``ground_truth`` holds the relevant item ids (possibly not among the
    candidates). ``split`` is ``"test"`` or ``"validation"``.

    Stability: full (your queries, candidates and history; a rating is optional).
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


class LabelledOrder(tuple):
    """A presented order (a tuple of :class:`Item`, index = 0-based presented position) that says which label a
    labelling scorer writes before each position: ``labels[i]`` labels ``self[i]``. A plain sequence means the
    scorer's own labels in presented order (A, B, C, ... for the choice scorer); this type exists so that a
    design that permutes the labels independently of the positions (the audit's ``label-swap``) can reach the
    scorer through the methods and the pass caches, which pass it along unchanged and key on its labels."""

    labels: tuple[str, ...]

    def __new__(cls, items: Sequence[Item], labels: Sequence[str]) -> LabelledOrder:
        obj = super().__new__(cls, items)
        obj.labels = tuple(str(x) for x in labels)
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (LabelledOrder, (tuple(self), self.labels))


def labels_of(presented: Sequence[Item]) -> tuple[str, ...] | None:
    """The labels a :class:`LabelledOrder` carries, ``None`` for any other sequence (the scorer's own labels)."""
    return presented.labels if isinstance(presented, LabelledOrder) else None


@dataclass(frozen=True)
class ScoreResult:
    """What a scorer returns for one presented order.

    ``scores[i]`` belongs to ``presented[i]`` (float32, higher = preferred); ``tokens`` is the number of
    token positions the scorer actually computed for this call (0 when served from a cache or simulated).

    Stability: full (what a scorer returns).
    """

    scores: np.ndarray
    tokens: int = 0
    cached: bool = False


@runtime_checkable
class Scorer(Protocol):
    """Scores a serialised candidate list: one forward pass per presented order.

    Stability: caller (the scorer protocol a scorer of your own implements)."""

    name: str

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        """Return one score per presented candidate (aligned with ``presented``)."""
        ...

    def identity(self) -> dict[str, Any]:
        """A JSON-able description (model, weights hash, dtype, device, template version...) used in
        manifests and cache keys."""
        ...


@runtime_checkable
class BatchScorer(Scorer, Protocol):
    """A :class:`Scorer` that declares how it batches, what decides its scores and what work it counted: what the
    methods, the pass caches and the runner call. :class:`ScorerBase` gives all of it on top of ``score``.

    * ``score_batch(query, orders)``: one result per presented order of one query, in order;
    * ``score_requests(requests)``: one result per ``(query, presented)`` request of one or several queries, in
      order (a real scorer batches a window of queries together);
    * ``batch_size``: how many passes it computes in one batch (1: one at a time);
    * ``key_identity()``: what decides its scores besides the prompt (no cache locations): the key of caches of
      its results such as STELLA's calibration;
    * ``stats``: its work counters (calls, forward passes, tokens, ...; possibly empty).

    The results equal those of calling ``score`` on each request alone (the contract checks of
    :mod:`invarirank.llm._testing` test it).
    """

    batch_size: int

    @property
    def stats(self) -> Mapping[str, Any]: ...

    def score_batch(self, query: Query, orders: Sequence[Sequence[Item]]) -> list[ScoreResult]: ...

    def score_requests(self, requests: Sequence[tuple[Query, Sequence[Item]]]) -> list[ScoreResult]: ...

    def key_identity(self) -> dict[str, Any]: ...


class ScorerBase:
    """The :class:`BatchScorer` defaults built on ``score`` (a subclass writes ``score`` and ``identity`` and sets
    ``name``): ``score_batch`` and ``score_requests`` call ``score`` once per request (``score_requests`` through
    ``score_batch``, query by query in first-seen order, so a subclass that batches one query's orders only
    overrides ``score_batch``), ``batch_size`` 1, ``key_identity()`` = ``identity()``, ``stats`` empty (a subclass
    that counts work sets its own dict)."""

    name: str = "scorer"
    batch_size: int = 1
    stats: Mapping[str, Any] = MappingProxyType({})

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:  # pragma: no cover - subclasses
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:  # pragma: no cover - subclasses
        raise NotImplementedError

    def key_identity(self) -> dict[str, Any]:
        return dict(self.identity())

    def check_query(self, query: Query) -> None:
        """Raise :class:`~invarirank.errors.InvariRankError` for a query this scorer cannot score — checked for
        every query of a run before its first pass (default: every query can be scored)."""

    def score_batch(self, query: Query, orders: Sequence[Sequence[Item]]) -> list[ScoreResult]:
        return [self.score(query, list(presented)) for presented in orders]

    def score_requests(self, requests: Sequence[tuple[Query, Sequence[Item]]]) -> list[ScoreResult]:
        out: list[ScoreResult | None] = [None] * len(requests)
        by_query: dict[str, list[int]] = {}
        for i, (query, _) in enumerate(requests):
            by_query.setdefault(query.query_id, []).append(i)
        for idxs in by_query.values():
            results = self.score_batch(requests[idxs[0]][0], [list(requests[i][1]) for i in idxs])
            if len(results) != len(idxs):
                raise ValueError(f"scorer {self.name!r} answered {len(results)} of {len(idxs)} requests")
            for i, res in zip(idxs, results):
                out[i] = res
        return out  # type: ignore[return-value]


def rank_by_scores(scores: Sequence[float] | np.ndarray) -> list[int]:
    """Presented positions ordered best first: descending score, ties to the earlier position."""
    arr = np.asarray(scores, dtype=np.float64)
    # stable sort on the negated scores keeps equal scores in presented order
    return [int(i) for i in np.argsort(-arr, kind="stable")]
