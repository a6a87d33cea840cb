"""The reranker interface of an audit, and adapters that give it to a Python callable or to the project's scorers.

Stability: full — the interface (:class:`Reranker`, :class:`Presentation`, :class:`Ranking`) and the four adapters
(:func:`from_order`, :func:`from_scores`, :func:`from_scorer`, and :func:`invarirank.audit.served_model.served`)
are what a user builds on.

**The interface.** A reranker answers *requests*: ``rerank(requests) -> list[Ranking]``, one
:class:`Ranking` per ``(query, presented)`` request, in order, where ``presented`` is a :class:`Presentation` — the
candidates (:class:`~invarirank.types.Item`) in the order they are shown, 0-based presented positions, plus the
``labels`` written before them (for label-based prompts), the order's index ``t`` and key and the audit's ``seed``.
Taking many requests at once lets an adapter batch them (a served model sends them concurrently); an adapter that
answers one at a time loops. ``name`` becomes the observations' ``method``; ``identity()`` (JSON-able) goes to the
run's manifest. A served model (:mod:`invarirank.audit.served_model`) is one more :class:`Reranker`: its ``rerank``
sends the requests concurrently, and every request is identified by what it holds (the prompt written from the
query, the presented items and ``presented.labels``; the sampling seed), so its journal of requests and answers lets
an interrupted audit resume with identical rows.

**Order callables** return ranked ids, best first. A ranking that is not a permutation of the presented ids is
handled by ONE stated rule, and every change is counted in the row's ``repairs`` (never silent):

* an id that was not presented (``unknown``) is dropped;
* an id given again (``duplicate``) keeps its first place, the later ones are dropped;
* a presented id never given (``missing``) is appended after the given ones, in presented order.

The appended tail follows the presented order, so a reranker that often omits candidates inherits position bias
from the rule itself: the counts say how much of a run that is. ``on_invalid="error"`` refuses any such ranking
instead (one error line naming the query, the order and what was wrong). Ids are strings; integers are read as
their decimal string (the observations' rule).

**Score callables** return one finite number per presented candidate (aligned with ``presented``); the ranking is
by descending score (``higher_is_better=False``: ascending), ties to the earlier presented position
(:func:`invarirank.types.rank_by_scores`). A wrong length or a non-finite score is an error: no rule could repair
it without inventing a preference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InvariRankError
from ..methods._common import finite_scores
from ..methods.registry import BASELINE_METHOD
from ..types import Item, Query, Scorer, rank_by_scores
from .designs import DEFAULT_LABELS

__all__ = ["Reranker", "Presentation", "Ranking", "from_order", "from_scores", "from_scorer"]

#: the kinds of change the order rule counts, in the order a row's ``repairs`` lists them
REPAIR_KINDS: tuple[str, ...] = ("unknown", "duplicate", "missing")


class Presentation(tuple):
    """One presented order: a tuple of :class:`~invarirank.types.Item` (index = 0-based presented position) with

    * ``labels``: the label written before each position (``labels[i]`` labels ``self[i]``): A, B, C, ... by
      position, except in the ``label-swap`` design, which permutes them (``()`` when K exceeds the alphabet);
    * ``t``: the row's index (the observations' ``permutation``); ``key``: the index the order was drawn with and
      the one method-internal shuffles are seeded from (:class:`invarirank._orders.PresentedOrder`);
    * ``seed``: the audit's seed; ``positions``: indices into ``query.candidates`` (retrieval order).

    It compares and hashes as the plain tuple of items.

    Stability: full (the reranker interface).
    """

    labels: tuple[str, ...]
    t: int
    key: int
    seed: int
    positions: tuple[int, ...]

    def __new__(
        cls,
        items: Sequence[Item],
        *,
        labels: Sequence[str] = (),
        t: int = 0,
        key: int | None = None,
        seed: int = 0,
        positions: Sequence[int] = (),
    ) -> Presentation:
        obj = super().__new__(cls, items)
        obj.labels, obj.t, obj.key, obj.seed = tuple(labels), int(t), int(t if key is None else key), int(seed)
        obj.positions = tuple(int(p) for p in positions) or tuple(range(len(items)))
        return obj

    @property
    def ids(self) -> list[str]:
        """The presented item ids, in presented order."""
        return [item.item_id for item in self]


@dataclass(frozen=True)
class Ranking:
    """A reranker's answer to one request: ``output`` = the complete ranking (ids, best first, a permutation of the
    presented ids); ``scores`` = scores aligned with the presented order when the reranker has them (else
    ``None``); ``repairs`` = how many ids the order rule dropped or appended, by kind (:data:`REPAIR_KINDS`);
    ``parse`` = a generating reranker's parse-quality flags (the row's ``parse``;
    :mod:`invarirank.audit.served_model`).

    Stability: full (the reranker interface)."""

    output: list[str]
    scores: list[float] | None = None
    repairs: Mapping[str, int] = field(default_factory=lambda: dict.fromkeys(REPAIR_KINDS, 0))
    passes: int = 1
    parse: Mapping[str, int] | None = None


@runtime_checkable
class Reranker(Protocol):
    """What :func:`invarirank.audit` drives: ``name`` (the observations' ``method``), ``rerank`` (one
    :class:`Ranking` per ``(query, presented)`` request, in order) and ``identity()`` (JSON-able, for the manifest).
    ``uses_labels`` says whether it reads :attr:`Presentation.labels` (only such a reranker can run the
    ``label-swap`` design).

    Stability: full (the reranker interface)."""

    name: str
    uses_labels: bool

    def rerank(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]: ...

    def identity(self) -> dict[str, Any]: ...


def _where(query: Query, presented: Presentation) -> str:
    return f"query {query.query_id!r}, order t={presented.t}"


def _as_id(x: Any, who: str) -> str:
    if isinstance(x, str):  # numpy and pandas strings are strings
        return str(x)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return str(int(x))
    raise InvariRankError(f"{who}: returned {x!r} ({type(x).__name__}) as an item id; expected a string id")


def complete_ranking(returned: Sequence[Any], presented: Sequence[str], *, who: str = "ranking") -> tuple[list, dict]:
    """The order rule (module docstring): ``returned`` ids → a permutation of ``presented`` and the counts of what
    was dropped or appended (``{"unknown": n, "duplicate": n, "missing": n}``)."""
    if isinstance(returned, (str, bytes)) or not isinstance(returned, (Sequence, np.ndarray)):
        raise InvariRankError(f"{who}: returned {type(returned).__name__}; expected a list of item ids, best first")
    allowed = set(presented)
    counts = dict.fromkeys(REPAIR_KINDS, 0)
    out: list[str] = []
    seen: set[str] = set()
    for x in returned:
        item = _as_id(x, who)
        if item not in allowed:
            counts["unknown"] += 1
        elif item in seen:
            counts["duplicate"] += 1
        else:
            seen.add(item)
            out.append(item)
    tail = [x for x in presented if x not in seen]
    counts["missing"] = len(tail)
    return out + tail, counts


def _check_on_invalid(on_invalid: str) -> str:
    if on_invalid not in ("repair", "error"):
        raise InvariRankError(f"on_invalid = {on_invalid!r}; expected 'repair' (the stated rule, counted) or 'error'")
    return on_invalid


def _scores(values: Any, k: int, who: str, higher_is_better: bool) -> list[float]:
    """The scores of one presented order by the project's one rule for scores (:func:`invarirank.methods.
    _common.finite_scores`: ``k`` finite real numbers; strings, booleans, NaN or a wrong shape are refused)."""

    def bad(what: str) -> InvariRankError:
        return InvariRankError(
            f"{who}: returned {what}; expected {k} finite real numbers (one per presented candidate)"
        )

    arr = finite_scores(values, k, bad)
    return [float(s) if higher_is_better else -float(s) for s in arr]


def _chunks(requests: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [requests[i : i + size] for i in range(0, len(requests), size)] if requests else []


@dataclass
class _Callable:
    """A callable reranker (see :func:`from_order` and :func:`from_scores`)."""

    fn: Callable[..., Any]
    kind: str  # "order" | "scores"
    name: str
    batched: bool
    batch_size: int
    higher_is_better: bool = True
    on_invalid: str = "repair"
    uses_labels: bool = False

    def identity(self) -> dict[str, Any]:
        fn = self.fn
        where = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"
        out: dict[str, Any] = {"adapter": f"callable-{self.kind}", "name": self.name, "callable": where}
        if self.kind == "scores":
            out["higher_is_better"] = self.higher_is_better
        else:
            out["on_invalid"] = self.on_invalid
        return out

    def _answers(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Any]:
        if not self.batched:
            return [self.fn(q, p) for q, p in requests]
        answers: list[Any] = []
        for chunk in _chunks(requests, self.batch_size):
            got = list(self.fn([q for q, _ in chunk], [p for _, p in chunk]))
            if len(got) != len(chunk):
                raise InvariRankError(
                    f"reranker {self.name!r}: the batched callable answered {len(got)} of {len(chunk)} requests"
                )
            answers.extend(got)
        return answers

    def rerank(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]:
        out = []
        for (query, presented), answer in zip(requests, self._answers(requests)):
            who = f"reranker {self.name!r} ({_where(query, presented)})"
            ids = presented.ids
            if self.kind == "scores":
                scores = _scores(answer, len(ids), who, self.higher_is_better)
                out.append(Ranking([ids[i] for i in rank_by_scores(scores)], scores))
                continue
            output, counts = complete_ranking(answer, ids, who=who)
            if self.on_invalid == "error" and any(counts.values()):
                what = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
                raise InvariRankError(f"{who}: the ranking is not a permutation of the presented ids ({what})")
            out.append(Ranking(output, None, counts))
        return out


def _check_callable(fn: Any, name: str, batch_size: int) -> None:
    if not callable(fn):
        raise InvariRankError(f"reranker: expected a callable, got {type(fn).__name__}")
    if not isinstance(name, str) or not name:
        raise InvariRankError(f"reranker: name = {name!r}; expected a non-empty string (the observations' method)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvariRankError(f"reranker {name!r}: batch_size = {batch_size!r}; expected an integer >= 1")


def from_order(
    fn: Callable[..., Any],
    *,
    name: str = "callable",
    batched: bool = False,
    batch_size: int = 32,
    on_invalid: str = "repair",
    uses_labels: bool = False,
) -> Reranker:
    """An order callable as a :class:`Reranker`: ``fn(query, presented) -> ranked ids`` (best first), or with
    ``batched=True`` ``fn(queries, presented_lists) -> list of ranked ids`` called on up to ``batch_size``
    requests at a time. Invalid rankings follow the order rule (module docstring), counted; ``on_invalid="error"``
    refuses them. ``uses_labels=True`` declares that ``fn`` reads ``presented.labels`` (the label-swap design).

    Stability: full (a reranker from a callable that returns ids, best first)."""
    _check_callable(fn, name, batch_size)
    return _Callable(
        fn, "order", name, batched, batch_size, on_invalid=_check_on_invalid(on_invalid), uses_labels=uses_labels
    )


def from_scores(
    fn: Callable[..., Any],
    *,
    name: str = "callable",
    batched: bool = False,
    batch_size: int = 32,
    higher_is_better: bool = True,
    uses_labels: bool = False,
) -> Reranker:
    """A score callable as a :class:`Reranker`: ``fn(query, presented) -> one score per presented candidate``, or
    with ``batched=True`` ``fn(queries, presented_lists) -> list of score lists``. The ranking is by descending
    score (ascending with ``higher_is_better=False``), ties to the earlier presented position; rows keep the scores
    (aligned with ``input``, higher = preferred).

    Stability: full (a reranker from a callable that returns scores, single or batched)."""
    _check_callable(fn, name, batch_size)
    return _Callable(
        fn, "scores", name, batched, batch_size, higher_is_better=bool(higher_is_better), uses_labels=uses_labels
    )


@dataclass
class _ScorerMethod:
    """A project scorer with one registered method (see :func:`from_scorer`)."""

    scorer: Scorer
    method: str
    options: dict[str, Any]
    name: str
    uses_labels: bool = False

    def identity(self) -> dict[str, Any]:
        return {"adapter": "scorer", "method": self.method, "scorer": self.scorer.identity()}

    def rerank(self, requests: Sequence[tuple[Query, Presentation]]) -> list[Ranking]:
        from ..methods import QueryPassCache, drive_window, method_steps

        cache = self.scorer if isinstance(self.scorer, QueryPassCache) else QueryPassCache(self.scorer)
        cache.clear()
        plan = [(q, method_steps(self.method, q, list(p), seed=p.seed, t=p.key, **self.options)) for q, p in requests]
        # a labelling scorer gets the presentation's labels where they are not its own (A, B, C, ... by position)
        labels = [
            p.labels if self.uses_labels and p.labels and p.labels != DEFAULT_LABELS[: len(p)] else None
            for _, p in requests
        ]
        results = drive_window(plan, cache, labels if any(x is not None for x in labels) else None) if plan else []
        cache.clear()
        return [Ranking(list(r.output), [float(s) for s in r.scores], passes=r.passes) for r in results]


def from_scorer(scorer: Scorer, method: str = BASELINE_METHOD, *, name: str | None = None, **options: Any) -> Reranker:
    """A project scorer (``invarirank.make_scorer(...)`` or any :class:`~invarirank.types.Scorer`) with a registered
    method (:data:`invarirank.METHODS`; STELLA_LW needs ``matrix=``) as a :class:`Reranker`: each presented order is
    reranked exactly as :func:`invarirank.rerank_query` does (method-internal shuffles seeded from the audit's seed
    and the order's key), so an audit with the ``random`` design gives that function's rows for the method.

    A scorer that writes labels before the candidates (the choice scorer: its class says ``uses_labels = True``)
    makes a reranker that reads :attr:`Presentation.labels`, so it can run the ``label-swap`` design: every pass
    the method makes writes ``labels[i]`` before presented position ``i`` (a method that reorders the candidates
    keeps the position's label, as the fixed A, B, C, ... do). Other scorers (span, simulated) are label-blind
    and the design refuses them.

    Stability: full (a reranker from a project scorer and a registered method)."""
    from ..methods import METHODS
    from ..methods import method as registered

    if method not in METHODS:
        raise InvariRankError(f"from_scorer: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    if not isinstance(scorer, Scorer):
        raise InvariRankError(f"from_scorer: {type(scorer).__name__} is not a scorer (name, score, identity)")
    needed = registered(method)  # a calibrated method takes its calibration as options (STELLA_LW: matrix=)
    missing = [key for key in needed.options(None) if key not in options]
    if missing:
        wanted = ", ".join(f"{key}=" for key in missing)
        raise InvariRankError(f"from_scorer: method {method!r} needs {wanted} ({needed.label}'s K×K calibration)")
    inner = getattr(scorer, "scorer", scorer)  # a QueryPassCache wraps the scorer it caches
    reads_labels = bool(getattr(scorer, "uses_labels", False) or getattr(inner, "uses_labels", False))
    return _ScorerMethod(scorer, method, dict(options), name or method, reads_labels)


def as_reranker(obj: Any, who: str = "audit") -> Reranker:
    """``obj`` as a :class:`Reranker`: a reranker as it is, a project scorer with zero-shot; a bare callable is
    refused (whether it returns ids or scores cannot be told before calling it)."""
    if isinstance(obj, Reranker):
        return obj
    if isinstance(obj, Scorer):
        return from_scorer(obj)
    if callable(obj):
        raise InvariRankError(
            f"{who}: got a bare callable; wrap it as invarirank.audit.from_order(f) (it returns ranked ids) or "
            f"invarirank.audit.from_scores(f) (it returns one score per presented candidate)"
        )
    raise InvariRankError(
        f"{who}: {type(obj).__name__} is not a reranker; expected from_order, from_scores or from_scorer"
    )
