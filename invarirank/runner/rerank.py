"""The study's core step: every configured method on every presented order of one query → observation rows.

:func:`rerank_query` is what the protocol chapter describes (PROTOCOL §3-4): the query's M presented orders are
drawn from the seed (:func:`invarirank.orders.presented_orders`), each method turns each presented order into one
complete ranking through the scorer, and every (method, order) becomes one :class:`ObservationRow`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..methods import PassCache, batch_size_of, drive, drive_many, drive_window, method_steps
from ..orders import PresentedOrder, presented_orders
from ..types import Query
from .config import RunConfig
from .records import ObservationRow

__all__ = ["rerank_query", "rerank_window"]


class _QueryRows:
    """One query's presented orders, each (order, method)'s steps, and the rows as they finish."""

    def __init__(self, query: Query, config: RunConfig, model: str, dataset: str,
                 calibrations: Mapping[int, Any] | None) -> None:
        self.query, self.config, self.model, self.dataset = query, config, model, dataset
        self.calibrations = calibrations
        self.orders = presented_orders(query.query_id, query.k, config.M, config.seed, noise_floor=config.noise_floor)
        self.by_method: dict[str, list[ObservationRow]] = {name: [] for name in config.methods}
        self.pairs = [(o, name) for o in self.orders for name in config.methods]

    def steps(self, o: PresentedOrder, name: str) -> Any:
        q = self.query
        opts = {"matrix": self.calibrations[q.k].matrix} if name == "stella" and self.calibrations else {}
        return method_steps(name, q, [q.candidates[i] for i in o.positions], seed=self.config.seed, t=o.key, **opts)

    def record(self, o: PresentedOrder, name: str, res: Any) -> None:
        q = self.query
        self.by_method[name].append(ObservationRow(
            query_id=q.query_id, method=name, permutation=o.t, input=[q.candidates[i].item_id for i in o.positions],
            output=list(res.output), relevant=list(q.ground_truth), model=self.model, dataset=self.dataset, k=q.k,
            scores=[float(s) for s in res.scores], passes=res.passes))

    def rows(self) -> list[ObservationRow]:
        return [row for name in self.config.methods for row in self.by_method[name]]


def rerank_query(scorer: PassCache, query: Query, config: RunConfig, *, model: str, dataset: str,
                 calibrations: Mapping[int, Any] | None = None,
                 on_order: Callable[[int], None] | None = None) -> list[ObservationRow]:
    """All ``config.methods`` on all ``config.M`` presented orders of ``query`` → rows, by method (registry
    order), then order t = 0..M-1.

    ``scorer`` is the run's shared pass cache (:class:`invarirank.methods.PassCache` around the scorer): it is
    cleared before and after the query, so passes are shared between the methods of one query only. ``model`` and
    ``dataset`` are written into every row; ``calibrations[K]`` is STELLA_LW's calibration for lists of K (needed
    when the run has STELLA_LW). ``on_order(t)`` is called after order ``t`` (progress display).

    With a scorer that batches (``batch_size`` > 1: the GPU default), all (order, method) pairs of the query run
    in lockstep and each round's requests go to the scorer as one batch (:func:`invarirank.methods.drive_many`);
    otherwise order by order, method by method. Both request the same passes and, with a deterministic scorer,
    give the same rows; the noise floor (M copies of one order) always goes order by order, each copy scored
    afresh.
    """
    scorer.clear()
    work = _QueryRows(query, config, model, dataset, calibrations)
    if batch_size_of(scorer) > 1 and not config.noise_floor:
        results = drive_many([work.steps(o, name) for o, name in work.pairs], scorer, query)
        for (o, name), res in zip(work.pairs, results):
            work.record(o, name, res)
        if on_order is not None and work.orders:
            on_order(work.orders[-1].t)          # every order finished in the same round
    else:
        for o in work.orders:
            if config.noise_floor:
                scorer.clear()                  # copies share nothing: each one is scored afresh
            for name in config.methods:
                work.record(o, name, drive(work.steps(o, name), scorer, query))
            if on_order is not None:
                on_order(o.t)
    scorer.clear()
    return work.rows()


def rerank_window(scorer: PassCache, queries: Sequence[Query], config: RunConfig, *, model: str, dataset: str,
                  calibrations: Mapping[int, Any] | None = None) -> list[list[ObservationRow]]:
    """:func:`rerank_query` for a window of queries in lockstep: every method × order of every query of the window
    advances one step per round, and each round's pending requests of all queries go to the scorer as one call
    (:func:`invarirank.methods.drive_window`; a real scorer packs them by its ``max_batch_tokens``). Each query
    keeps its own passes (the pass cache is keyed by query), so the rows equal :func:`rerank_query`'s; the noise
    floor is refused (its copies must be scored afresh, one by one)."""
    if config.noise_floor:
        raise ValueError("rerank_window: the noise floor is computed query by query")
    scorer.clear()
    works = [_QueryRows(q, config, model, dataset, calibrations) for q in queries]
    plan = [(w, o, name) for w in works for o, name in w.pairs]
    results = drive_window([(w.query, w.steps(o, name)) for w, o, name in plan], scorer)
    for (w, o, name), res in zip(plan, results):
        w.record(o, name, res)
    scorer.clear()
    return [w.rows() for w in works]
