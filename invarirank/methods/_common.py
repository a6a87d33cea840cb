"""Helpers shared by the methods: seeded shuffles, scorer calls and the drivers of method steps.

Every method-internal random choice is seeded from ``(seed, query_id, t)`` (``t`` = the presented
order's key, see :mod:`invarirank._orders`) plus a purpose string, through stable hashes. Shuffle ``j``
of a presented order (``j >= 1``) is one shared stream: bootstrapping's shuffles 1 and 2 are STELLA's
updates 1 and 2, so a shared pass cache serves them once (methods remain independent: each one is a
deterministic function of its own input and the seed).

Steps and drivers: every method is written once, as a generator of *steps* (``*_steps``) that yields
the list of items it wants scored next and receives their scores (float64, aligned with that list);
its return value is the :class:`MethodResult`. :func:`drive` runs one generator against a scorer, one
call per step (what the plain method functions do); :func:`drive_many` runs many generators in
lockstep and sends each round's requests to the scorer as one batch (``score_batch``, see
:func:`as_batch_scorer`), so a GPU scorer can batch the M presented orders of a query; :func:`drive_window` does
the same for a *window* of queries (every method × order of several queries in lockstep, each round one
``score_requests`` call), so that the sequential tails of SGS and STELLA_LW of many queries fill one
batch. All give the same results with a deterministic scorer: each generator sees exactly the scores it
would have seen alone.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import numpy as np

from .._orders import rng_for
from ..errors import InvariRankError
from ..types import BatchScorer, Item, LabelledOrder, Query, Scorer, ScorerBase, ScoreResult
from ._result import MethodResult

#: A method's steps: yields the items to score next, receives their scores, returns the result.
Steps = Generator[list[Item], np.ndarray, MethodResult]


def shuffle_positions(k: int, seed: int, query_id: str, t: int, j: int) -> list[int]:
    """Shuffle ``j`` of a presented order with ``k`` candidates, as indices into the presented list.

    ``j = 0`` is the presented order itself (the identity); ``j >= 1`` is a seeded permutation (it may
    coincide with the identity for tiny ``k``).
    """
    if j == 0:
        return list(range(k))
    return [int(i) for i in rng_for(seed, query_id, t, "shuffle", j).permutation(k)]


def score_items(scorer: Scorer, query: Query, items: Sequence[Item]) -> np.ndarray:
    """One scorer call; float64 copy of the scores aligned with ``items``."""
    return checked_scores(scorer, query, _scores_of(scorer, query, scorer.score(query, list(items))), len(items))


def check_scorer(scorer: Any, where: str = "scorer") -> None:
    """Raise :class:`~invarirank.errors.InvariRankError` unless ``scorer`` has what the
    :class:`~invarirank.types.Scorer` protocol asks for: a non-empty string ``name``, a callable ``score`` and an
    ``identity()`` that returns a mapping. Checked once at the door, so that a wrong object (a string, a query, a
    function) is named there rather than failing as an ``AttributeError`` inside a method."""
    name = getattr(scorer, "name", None)
    if not isinstance(name, str) or not name:
        raise InvariRankError(
            f"{where}: {type(scorer).__name__} object has no non-empty string 'name'; expected a Scorer "
            f"(name, score(query, presented) and identity(); e.g. invarirank.make_scorer('simulated'))"
        )
    for member in ("score", "identity"):
        if not callable(getattr(scorer, member, None)):
            raise InvariRankError(
                f"{where}: scorer {name!r} ({type(scorer).__name__}) has no method {member}(); expected a Scorer "
                f"(name, score(query, presented) and identity())"
            )
    identity = scorer.identity()
    if not isinstance(identity, Mapping):
        raise InvariRankError(
            f"{where}: scorer {name!r}: identity() returned {type(identity).__name__}, expected a dict"
        )


def _shown(value: Any) -> str:
    """A short description of what a scorer returned, for the error line."""
    text = repr(value)
    return f"{type(value).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _scores_of(scorer: Scorer, query: Query, result: Any) -> Any:
    """``result.scores``, or an error naming the scorer and query when ``result`` is not a score result."""
    if not hasattr(result, "scores"):
        raise InvariRankError(
            f"scorer {scorer.name!r} on query {query.query_id!r}: returned {_shown(result)}; expected a ScoreResult "
            f"(invarirank.types.ScoreResult(scores=...))"
        )
    return result.scores


def checked_scores(scorer: Scorer, query: Query, raw: Any, n: int) -> np.ndarray:
    """THE check of a scorer's scores (every scorer call of every method and of STELLA_LW's calibration passes
    here): ``raw`` must be a list or array of ``n`` finite real numbers, one per presented candidate; returns their
    float64 copy. Anything else (NaN or infinity, strings that would parse as numbers, complex or boolean values,
    an object array, a generator, a wrong length) raises :class:`~invarirank.errors.InvariRankError` naming the
    scorer, the query and what was returned, because a silently coerced score is a silently wrong ranking (a NaN
    sorts last)."""

    def bad(what: str) -> InvariRankError:
        return InvariRankError(
            f"scorer {scorer.name!r} on query {query.query_id!r}: returned {what}; expected {n} finite real "
            f"numbers (one per candidate)"
        )

    return finite_scores(raw, n, bad)


def finite_scores(raw: Any, n: int, bad: Callable[[str], Exception]) -> np.ndarray:
    """The rule of :func:`checked_scores` for any caller (the audit's score adapters too): ``raw`` as float64 when
    it is a list or array of ``n`` finite real numbers, else ``bad(what was returned)`` raised."""
    if not isinstance(raw, (np.ndarray, list, tuple)):
        raise bad(_shown(raw))
    try:
        arr = np.asarray(raw)
    except (TypeError, ValueError):
        raise bad(_shown(raw)) from None
    if arr.dtype.kind not in "iuf":
        kinds = {"b": "booleans", "c": "complex numbers", "O": "objects", "U": "strings", "S": "bytes"}
        raise bad(f"{kinds.get(arr.dtype.kind, str(arr.dtype))} {_shown(raw)}")
    if arr.shape != (n,):
        raise bad(f"{arr.size} scores of shape {arr.shape}")
    scores = arr.astype(np.float64, copy=True)
    if not np.isfinite(scores).all():
        where = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise bad(f"{scores[where]} for candidate {where} (0-based position in the presented list)")
    return scores


class ScoreOnly(ScorerBase):
    """A plain :class:`~invarirank.types.Scorer` (``score``, ``identity``, ``name`` only) as a
    :class:`~invarirank.types.BatchScorer`: the defaults of :class:`~invarirank.types.ScorerBase`."""

    def __init__(self, scorer: Scorer) -> None:
        self.scorer = scorer
        self.name = scorer.name

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        return self.scorer.score(query, presented)

    def identity(self) -> dict[str, Any]:
        return self.scorer.identity()


def as_batch_scorer(scorer: Scorer) -> BatchScorer:
    """``scorer`` itself when it is a :class:`~invarirank.types.BatchScorer` (a :class:`ScorerBase` or any class
    with the protocol's members), else :class:`ScoreOnly` around it."""
    if isinstance(scorer, (ScorerBase, BatchScorer)):
        return scorer
    return ScoreOnly(scorer)


def batch_size_of(scorer: Scorer) -> int:
    """How many passes ``scorer`` computes in one batch (:attr:`BatchScorer.batch_size`; 1 for a plain scorer)."""
    size = as_batch_scorer(scorer).batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"scorer {scorer.name!r}: batch_size {size!r}, expected an integer >= 1")
    return size


def _answered(
    scorer: Scorer, results: Sequence[ScoreResult], requests: Sequence[tuple[Query, Sequence[Item]]]
) -> list[ScoreResult]:
    """``results`` checked against ``requests``: one result per request, each with valid scores
    (:func:`checked_scores`); the scores come back as float64 copies."""
    if not isinstance(results, (list, tuple)) or len(results) != len(requests):
        got = len(results) if isinstance(results, (list, tuple)) else _shown(results)
        raise InvariRankError(
            f"scorer {scorer.name!r} on query {requests[0][0].query_id!r}: answered {got} for "
            f"{len(requests)} requests; expected one ScoreResult per request"
        )
    out = []
    for res, (query, items) in zip(results, requests):
        scores = checked_scores(scorer, query, _scores_of(scorer, query, res), len(items))
        out.append(ScoreResult(scores=scores, tokens=getattr(res, "tokens", 0), cached=getattr(res, "cached", False)))
    return out


def score_results(scorer: Scorer, query: Query, requests: Sequence[Sequence[Item]]) -> list[ScoreResult]:
    """Several scorer calls of one query, as one :meth:`BatchScorer.score_batch` call, in order."""
    results = as_batch_scorer(scorer).score_batch(query, [list(items) for items in requests])
    return _answered(scorer, results, [(query, items) for items in requests])


def score_request_results(scorer: Scorer, requests: Sequence[tuple[Query, Sequence[Item]]]) -> list[ScoreResult]:
    """Scorer calls for (query, presented order) requests of several queries, as one
    :meth:`BatchScorer.score_requests` call; results in order."""
    results = as_batch_scorer(scorer).score_requests(
        [(q, items if isinstance(items, LabelledOrder) else list(items)) for q, items in requests]
    )
    return _answered(scorer, results, requests)


def score_items_batch(scorer: Scorer, query: Query, requests: Sequence[Sequence[Item]]) -> list[np.ndarray]:
    """:func:`score_results` as float64 copies of the scores aligned with each request."""
    return [np.asarray(res.scores, dtype=np.float64) for res in score_results(scorer, query, requests)]


def drive(steps: Steps, scorer: Scorer, query: Query) -> MethodResult:
    """Run one method's steps, one scorer call per step."""
    try:
        items = next(steps)
        while True:
            items = steps.send(score_items(scorer, query, items))
    except StopIteration as stop:
        return stop.value


def drive_many(all_steps: Sequence[Steps], scorer: Scorer, query: Query) -> list[MethodResult]:
    """Run the steps of several methods/orders of one query in lockstep: each round sends every pending
    request as one batch (:func:`score_items_batch`), in the order of ``all_steps``. Returns the results
    in that order."""
    return _lockstep(all_steps, lambda requests, _idx: score_items_batch(scorer, query, requests))


def drive_window(
    work: Sequence[tuple[Query, Steps]], scorer: Scorer, labels: Sequence[Sequence[str] | None] | None = None
) -> list[MethodResult]:
    """Run the steps of several queries' methods/orders in lockstep (``work``: (query, steps) pairs): each round
    sends every pending request of every query as one :func:`score_request_results` call. Returns the results
    in the order of ``work``. ``labels`` (one entry per work item, ``None`` = the scorer's own): every pass of
    that item writes ``labels[i]`` before presented position ``i`` (a :class:`~invarirank.types.LabelledOrder`)."""
    queries = [q for q, _ in work]

    def labelled(i: int, items: list[Item]) -> Sequence[Item]:
        given = None if labels is None else labels[i]
        return items if given is None else LabelledOrder(items, given)

    def answer(requests: list[list[Item]], idx: list[int]) -> list[np.ndarray]:
        results = score_request_results(scorer, [(queries[i], labelled(i, items)) for i, items in zip(idx, requests)])
        return [np.asarray(res.scores, dtype=np.float64) for res in results]

    return _lockstep([s for _, s in work], answer)


def _lockstep(
    all_steps: Sequence[Steps], answer: Callable[[list[list[Item]], list[int]], Sequence[np.ndarray]]
) -> list[MethodResult]:
    """Drive generators in rounds: ``answer(requests, indices)`` scores one round's pending requests."""
    results: list[MethodResult | None] = [None] * len(all_steps)
    pending: dict[int, list[Item]] = {}
    for i, steps in enumerate(all_steps):
        try:
            pending[i] = next(steps)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        idx = list(pending)
        requests = [pending[i] for i in idx]
        answers = answer(requests, idx)
        for i, scores in zip(idx, answers):
            try:
                pending[i] = all_steps[i].send(scores)
            except StopIteration as stop:
                results[i] = stop.value
                del pending[i]
    return results  # type: ignore[return-value]
