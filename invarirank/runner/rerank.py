"""The study's core step: every method on every presented order of one query → observation rows.

:func:`rerank_query` is the one function that reranks a query, for a user at the package top
(``invarirank.rerank_query(scorer, query)``) and for the runner alike: the query's M presented orders are drawn
from the seed (:func:`invarirank._orders.presented_orders`), each method turns each presented order into one
complete ranking through the scorer, and every (method, order) becomes one :class:`ObservationRow`.
:func:`rerank_window` is the same for several queries in lockstep (the runner's ``query_window``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._orders import PresentedOrder, presented_orders
from ..candidates import check_query
from ..errors import InvariRankError
from ..methods import METHODS, QueryPassCache, batch_size_of, drive, drive_many, drive_window, method_steps
from ..methods._common import check_scorer
from ..methods.registry import calibrated_method, method, uncalibrated
from ..types import Query, Scorer
from ._arguments import check_arguments
from .records import ObservationRow

__all__ = ["rerank_query", "rerank_window"]

#: the methods :func:`rerank_query` runs when none are named: every registered method that needs no calibration
#: (STELLA_LW needs one, and joins them when calibrations are given)
DEFAULT_METHODS: tuple[str, ...] = uncalibrated(METHODS)


def _methods(methods: Sequence[str], calibrations: Mapping[int, Any] | None) -> list[str]:
    """The methods to run, in the registry's (the paper's) order; the calibrated method (STELLA_LW) added when
    calibrations are given."""
    if isinstance(methods, str):
        methods = [methods]
    if not isinstance(methods, (list, tuple)) or not all(isinstance(m, str) for m in methods):
        raise InvariRankError(
            f"rerank_query: 'methods' = {methods!r}, expected a list of method names (some of {', '.join(METHODS)})"
        )
    calibrated = calibrated_method(METHODS)
    names = list(methods) + ([calibrated.name] if calibrations and calibrated else [])
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise InvariRankError(
            f"rerank_query: unknown method {unknown[0]!r} in 'methods'; expected some of {', '.join(METHODS)}"
        )
    if not names:
        raise InvariRankError(f"rerank_query: 'methods' is empty; expected some of {', '.join(METHODS)}")
    return [m for m in METHODS if m in names]


def _matrix(name: str, calibrations: Mapping[int, Any] | None, k: int) -> np.ndarray:
    """The K×K calibration matrix of the calibrated method ``name`` for lists of ``k``: ``calibrations[k]`` is a
    calibration (``.matrix``) or the matrix itself."""
    if not calibrations or k not in calibrations:
        label = method(name).label
        raise InvariRankError(
            f"rerank_query: method {name!r} needs calibrations[{k}] ({label}'s calibration for "
            f"lists of K={k}; see invarirank.methods.{name}.calibrate)"
        )
    cal = calibrations[k]
    matrix = np.asarray(getattr(cal, "matrix", cal), dtype=np.float64)
    if matrix.shape != (k, k):
        raise InvariRankError(f"rerank_query: calibrations[{k}] is a {matrix.shape} matrix, expected {k}×{k}")
    return matrix


def _door(
    fn: str,
    scorer: Any,
    queries: Sequence[Any],
    seed: Any,
    noise_floor: Any,
    model: Any = None,
    dataset: Any = "",
    on_order: Any = None,
) -> None:
    """The arguments of :func:`rerank_query` / :func:`rerank_window` checked at the door, with the run schema's
    rules (:func:`invarirank.runner._config.check_arguments`: the checks of ``invarirank rerank``'s flags) and each
    query with the candidates file's (:func:`invarirank.candidates.check_query`), so a wrong object, a float seed,
    a query with repeated candidates or a lone surrogate is one error naming the argument, never an
    ``AttributeError`` inside a method, a truncated seed, silently wrong rows or a ``UnicodeEncodeError`` when the
    rows are written."""
    if model is not None and (not isinstance(model, str) or not model):
        raise InvariRankError(f"{fn}: model = {model!r}, expected a non-empty string (or None: the scorer's)")
    if not isinstance(dataset, str):
        raise InvariRankError(f"{fn}: dataset = {dataset!r}, expected a string")
    if on_order is not None and not callable(on_order):
        raise InvariRankError(f"{fn}: on_order = {on_order!r}, expected a function of the order t (or None)")
    check_scorer(scorer, fn)
    for q in queries:
        if not isinstance(q, Query):
            raise InvariRankError(
                f"{fn}: query = {type(q).__name__} {str(q)[:40]!r}, expected an invarirank.types.Query "
                f"(e.g. from invarirank.read_candidates)"
            )
        check_query(q, f"{fn}: query {q.query_id!r}")
    check_arguments(fn, seed=seed, noise_floor=noise_floor)


def _model_name(scorer: Scorer) -> str:
    identity = scorer.identity()
    return str(identity.get("model") or identity.get("name") or scorer.name)


class _QueryRows:
    """One query's presented orders, each (order, method)'s steps, and the rows as they finish."""

    def __init__(
        self,
        query: Query,
        methods: list[str],
        M: int,
        seed: int,
        noise_floor: bool,
        model: str,
        dataset: str,
        calibrations: Mapping[int, Any] | None,
    ) -> None:
        if not isinstance(M, (int, np.integer)) or isinstance(M, bool) or M < 1:
            raise InvariRankError(f"rerank_query: M = {M!r}, expected an integer >= 1 (presented orders per query)")
        M = int(M)
        self.query, self.methods, self.seed, self.model, self.dataset = query, methods, seed, model, dataset
        calibrated = calibrated_method(methods)
        self.matrix = _matrix(calibrated.name, calibrations, query.k) if calibrated else None
        self.orders = presented_orders(query.query_id, query.k, M, seed, noise_floor=noise_floor)
        self.by_method: dict[str, list[ObservationRow]] = {name: [] for name in methods}
        self.pairs = [(o, name) for o in self.orders for name in methods]

    def steps(self, o: PresentedOrder, name: str) -> Any:
        q = self.query
        m = method(name)
        opts = m.options(self.matrix if m.calibrator else None)
        return method_steps(name, q, [q.candidates[i] for i in o.positions], seed=self.seed, t=o.key, **opts)

    def record(self, o: PresentedOrder, name: str, res: Any) -> None:
        q = self.query
        self.by_method[name].append(
            ObservationRow(
                query_id=q.query_id,
                method=name,
                permutation=o.t,
                input=[q.candidates[i].item_id for i in o.positions],
                output=list(res.output),
                relevant=list(q.ground_truth),
                model=self.model,
                dataset=self.dataset,
                k=q.k,
                scores=[float(s) for s in res.scores],
                passes=res.passes,
            )
        )

    def rows(self) -> list[ObservationRow]:
        return [row for name in self.methods for row in self.by_method[name]]


def rerank_query(
    scorer: Scorer,
    query: Query,
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    M: int = 20,
    seed: int = 42,
    calibrations: Mapping[int, Any] | None = None,
    noise_floor: bool = False,
    model: str | None = None,
    dataset: str = "",
    on_order: Callable[[int], None] | None = None,
) -> list[ObservationRow]:
    """Every method in ``methods`` on ``M`` presented orders of ``query`` → one observation row per
    (method, presented order), by method (the registry's order), then order t = 0..M-1.

    Stability: full (every method on M presented orders of one query → observation rows).

    ``scorer`` is any :class:`~invarirank.types.Scorer` (``invarirank.make_scorer(...)`` or your own object with
    ``name``, ``score`` and ``identity``). Passes are shared between the methods of the query through a pass cache
    (:class:`~invarirank.methods.QueryPassCache`) that is emptied before and after the query; one given as
    ``scorer`` is used as it is (the runner keeps one per run, for its counters), any other scorer is wrapped in a
    new one. The presented orders are drawn from ``seed`` (:func:`invarirank._orders.presented_orders`) and never
    include the retrieval order; every method-internal shuffle is seeded from ``(seed, query, t)``, so equal
    arguments give equal rows.

    ``calibrations[K]`` is STELLA_LW's calibration for lists of K (a
    :class:`~invarirank.methods._stella_calibration.Calibration` or its K×K matrix, e.g. from
    :func:`invarirank.methods.stella.calibrate`); when calibrations are given STELLA_LW runs too. ``noise_floor``
    presents the first order M times, each copy scored afresh (the scorer's own noise). ``model`` and ``dataset``
    are written into every row (``model`` defaults to the scorer's identity). ``on_order(t)`` is called after
    order ``t`` (progress display). Rows are :class:`~invarirank.runner.records.ObservationRow` objects;
    :func:`invarirank.evaluate` and :func:`invarirank.write_observations` take them as they are.

    With a scorer that batches (``batch_size`` > 1: the GPU default), all (order, method) pairs of the query run
    in lockstep and each round's requests go to the scorer as one batch (:func:`invarirank.methods.drive_many`);
    otherwise order by order, method by method. Both request the same passes and, with a deterministic scorer,
    give the same rows; the noise floor always goes order by order, each copy scored afresh.
    """
    _door("rerank_query", scorer, [query], seed, noise_floor, model, dataset, on_order)
    cache = scorer if isinstance(scorer, QueryPassCache) else QueryPassCache(scorer)
    names = _methods(methods, calibrations)
    work = _QueryRows(
        query, names, M, seed, noise_floor, _model_name(scorer) if model is None else model, dataset, calibrations
    )
    cache.clear()
    if batch_size_of(cache) > 1 and not noise_floor:
        results = drive_many([work.steps(o, name) for o, name in work.pairs], cache, query)
        for (o, name), res in zip(work.pairs, results):
            work.record(o, name, res)
        if on_order is not None and work.orders:
            on_order(work.orders[-1].t)  # every order finished in the same round
    else:
        for o in work.orders:
            if noise_floor:
                cache.clear()  # copies share nothing: each one is scored afresh
            for name in names:
                work.record(o, name, drive(work.steps(o, name), cache, query))
            if on_order is not None:
                on_order(o.t)
    cache.clear()
    return work.rows()


def rerank_window(
    scorer: Scorer,
    queries: Sequence[Query],
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    M: int = 20,
    seed: int = 42,
    calibrations: Mapping[int, Any] | None = None,
    model: str | None = None,
    dataset: str = "",
) -> list[list[ObservationRow]]:
    """:func:`rerank_query` for a window of queries in lockstep (same arguments, one list of rows per query):
    every method × order of every query of the window advances one step per round, and each round's pending
    requests of all queries go to the scorer as one call (:func:`invarirank.methods.drive_window`; a real scorer
    packs them by its ``max_batch_tokens``). Each query keeps its own passes (the pass cache is keyed by query), so
    the rows equal :func:`rerank_query`'s. There is no noise floor here (its copies are scored one by one).

    Stability: caller (many queries through one scorer window, rows equal to ``rerank_query``'s: the runner's
    ``query_window``)."""
    _door("rerank_window", scorer, queries, seed, False, model, dataset)
    ids = [q.query_id for q in queries]
    if len(set(ids)) != len(ids):  # the pass cache is keyed by query id: a repeat would reuse another's passes
        repeated = next(x for x in ids if ids.count(x) > 1)
        raise InvariRankError(f"rerank_window: query_id {repeated!r} appears twice; expected distinct queries")
    cache = scorer if isinstance(scorer, QueryPassCache) else QueryPassCache(scorer)
    names = _methods(methods, calibrations)
    name = _model_name(scorer) if model is None else model
    works = [_QueryRows(q, names, M, seed, False, name, dataset, calibrations) for q in queries]
    cache.clear()
    plan = [(w, o, m) for w in works for o, m in w.pairs]
    results = drive_window([(w.query, w.steps(o, m)) for w, o, m in plan], cache)
    for (w, o, m), res in zip(plan, results):
        w.record(o, m, res)
    cache.clear()
    return [w.rows() for w in works]
