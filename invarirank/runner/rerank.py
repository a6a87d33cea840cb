"""The study's core step: every configured method on every presented order of one query → observation rows.

:func:`rerank_query` is what the protocol chapter describes (PROTOCOL §3-4): the query's M presented orders are
drawn from the seed (:func:`invarirank.orders.presented_orders`), each method turns each presented order into one
complete ranking through the scorer, and every (method, order) becomes one :class:`ObservationRow`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..methods import PassCache, batch_size_of, drive, drive_many, method_steps
from ..orders import PresentedOrder, presented_orders
from ..types import Query
from .config import RunConfig
from .records import ObservationRow

__all__ = ["rerank_query"]


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
    orders = presented_orders(query.query_id, query.k, config.M, config.seed, noise_floor=config.noise_floor)
    by_method: dict[str, list[ObservationRow]] = {name: [] for name in config.methods}

    def steps(o: PresentedOrder, name: str) -> Any:
        opts = {"matrix": calibrations[query.k].matrix} if name == "stella" and calibrations else {}
        return method_steps(name, query, [query.candidates[i] for i in o.positions], seed=config.seed, t=o.key,
                            **opts)

    def record(o: PresentedOrder, name: str, res: Any) -> None:
        by_method[name].append(ObservationRow(
            query_id=query.query_id, method=name, permutation=o.t,
            input=[query.candidates[i].item_id for i in o.positions], output=list(res.output),
            relevant=list(query.ground_truth), model=model, dataset=dataset, k=query.k,
            scores=[float(s) for s in res.scores], passes=res.passes))

    if batch_size_of(scorer) > 1 and not config.noise_floor:
        pairs = [(o, name) for o in orders for name in config.methods]
        for (o, name), res in zip(pairs, drive_many([steps(o, name) for o, name in pairs], scorer, query)):
            record(o, name, res)
        if on_order is not None and orders:
            on_order(orders[-1].t)              # every order finished in the same round
    else:
        for o in orders:
            if config.noise_floor:
                scorer.clear()                  # copies share nothing: each one is scored afresh
            for name in config.methods:
                record(o, name, drive(steps(o, name), scorer, query))
            if on_order is not None:
                on_order(o.t)
    scorer.clear()
    return [row for name in config.methods for row in by_method[name]]
