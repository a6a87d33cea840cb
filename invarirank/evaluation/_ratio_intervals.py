"""Percentile intervals of ratio statistics with the bits of :func:`._bootstrap.collect`, summing query by query only
the replicates that can decide them.

A percentile interval of B replicates reads four of them once sorted: the values at the two ranks on each side of
each end (:func:`._bootstrap.quantile_ranks`). A ratio statistic is Y[b, a] / Y[b, d], totals of a numerator and a
denominator column over replicate b's resample; the query-by-query sum that gives every processor the same bits
(:func:`._bootstrap.totals`) costs Q passes over all B replicates, where a BLAS product takes one, in a summation
order that depends on the processor. Both are within γ_Q sum_q C[b, q] |v_q| of the exact sum (γ_Q = Q u / (1 - Q u),
u = 2^-53: the bound of any summation order of Q products, fused or not), so the product's ratio brackets the loop's
ratio of each replicate. A replicate whose bracket lies wholly below (above) the brackets' k-th smallest lower
(upper) end is below (above) the k-th smallest value of the loop's ratios, so that value is found among the few
replicates whose brackets overlap that range, summed query by query exactly as :func:`._bootstrap.totals` sums them
(the same products, added in the same order): the interval is the one :func:`._bootstrap.percentile_interval` gives
on every replicate, bit for bit.

Only numerators that are not whole numbers are bracketed (whole-number totals are exact in any order); a denominator
must be whole numbers (rows, query counts: exact), and a column that another statistic reads as a whole
(``custom_columns``) is summed for every replicate. Resamples larger than the shared ones
(:data:`._bootstrap._SHARED_CELLS`) take :func:`._bootstrap.collect` on every replicate.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import NamedTuple, TypeVar

import numpy as np

from ._bootstrap import (
    _SHARED_CELLS,
    _Counts,
    _interpolate,
    _shared_counts,
    collect,
    percentile_interval,
    quantile_ranks,
    ratio,
)

_U = 2.0**-53

K = TypeVar("K", bound=Hashable)


def ratio_intervals(
    n_queries: int,
    n_boot: int,
    seed: int,
    columns: np.ndarray,
    ratios: Mapping[K, tuple[int, int]],
    level: float,
    custom: Mapping[str, Callable[[np.ndarray], np.ndarray]] | None = None,
    custom_columns: Iterable[int] = (),
) -> tuple[dict[K, list[float] | None], dict[str, np.ndarray]]:
    """``(intervals, replicates)``: :func:`._bootstrap.percentile_interval` of each ratio statistic
    ``ratios[key] = (numerator column, denominator column)`` of :func:`._bootstrap.collect`'s replicates, and the
    replicates of each ``custom`` statistic (a function of the totals, as in :func:`._bootstrap.collect`, reading only
    the columns ``custom_columns``: the totals it sees hold NaN in the others). The same numbers as
    :func:`._bootstrap.collect` followed by :func:`._bootstrap.percentile_interval`."""
    custom = dict(custom or {})
    V = np.ascontiguousarray(columns, dtype=np.float64)
    blocks = _shared_counts(n_queries, n_boot, seed) if n_queries * n_boot <= _SHARED_CELLS else ()
    if len(blocks) != 1:  # every replicate summed query by query
        keys = list(ratios)
        stats = {f"ratio {i}": ratio(*ratios[key]) for i, key in enumerate(keys)}
        reps = collect(n_queries, n_boot, seed, V, {**stats, **{f"custom {k}": f for k, f in custom.items()}})
        return (
            {key: percentile_interval(reps[f"ratio {i}"], level) for i, key in enumerate(keys)},
            {k: reps[f"custom {k}"] for k in custom},
        )
    counts = blocks[0]
    whole = counts.whole_columns(V)
    near = np.zeros(V.shape[1], dtype=bool)  # numerators bracketed by a BLAS product
    for a, d in ratios.values():
        near[a] |= not whole[a] and bool(whole[d])
    near[list(custom_columns)] = False
    near &= np.isfinite(V).all(axis=0)
    Y = np.full((counts.c.shape[0], V.shape[1]), np.nan)
    exact = np.flatnonzero(~near)
    if exact.size:
        Y[:, exact] = counts.totals(V[:, exact])
    bound = np.zeros_like(Y)
    if near.any():
        Y[:, near] = counts.c @ V[:, near]
        gamma = n_queries * _U / (1.0 - n_queries * _U)
        bound[:, near] = (counts.c @ np.abs(V[:, near])) * (4.0 * gamma)  # twice the gap of two sums, and again
    plans: dict[K, _Plan] = {}
    for key, (a, d) in ratios.items():
        plan = _plan(Y[:, a], Y[:, d], bound[:, a], level) if near[a] else None
        if plan is not None and len(plan.rows) <= _FEW:
            plans[key] = plan
    late = sorted({a for key, (a, _) in ratios.items() if near[a] and key not in plans})
    if late:  # numerators whose intervals need many replicates: every replicate summed query by query
        Y[:, late] = counts.totals(V[:, late])
    intervals: dict[K, list[float] | None] = {}
    if plans:
        sums = _candidate_totals(counts, V, [(ratios[key][0], plan.rows) for key, plan in plans.items()])
        for (key, plan), num in zip(plans.items(), sums):
            intervals[key] = plan.interval(num, Y[:, ratios[key][1]])
    for key, (a, d) in ratios.items():
        if key not in plans:
            den = Y[:, d]
            r = np.divide(Y[:, a], den, out=np.full(len(den), np.nan), where=den > 0)
            intervals[key] = percentile_interval(r, level)
    replicates = {name: fn(Y) for name, fn in custom.items()}
    return {key: intervals[key] for key in ratios}, replicates


#: the most replicates a statistic's interval may need summed query by query (more: every replicate is); many tie
#: when every query has the same value (the random order's GPI at one K and M)
_FEW = 64


class _Plan(NamedTuple):
    """Which replicates decide a ratio's percentile interval: for each rank the interval reads (``ranks``, as
    :func:`._bootstrap.quantile_ranks` gives them), the replicates whose bracket overlaps that rank's range and how
    many lie wholly below it; ``rows`` the union of those replicates, ascending."""

    ranks: list[tuple[int, int, float]]
    decide: dict[int, tuple[np.ndarray, int]]
    rows: np.ndarray

    def interval(self, num: np.ndarray, den: np.ndarray) -> list[float] | None:
        """The interval from the exact numerator totals ``num`` of :attr:`rows` and every replicate's ``den``."""
        value = {}
        for rank, (candidates, below) in self.decide.items():
            exact = np.sort(np.divide(num[np.searchsorted(self.rows, candidates)], den[candidates]))
            value[rank] = float(exact[rank - below])
        return [_interpolate(value[lo], value[hi], t) for lo, hi, t in self.ranks]


def _plan(num: np.ndarray, den: np.ndarray, bound: np.ndarray, level: float) -> _Plan | None:
    """The :class:`_Plan` of the ratio ``num / den`` (``num`` within ``bound`` of the loop's totals, ``den`` exact),
    or ``None`` when a bracket is not finite."""
    finite = np.flatnonzero(den > 0)
    if finite.size == 0:
        return None
    r = num[finite] / den[finite]
    # the loop's ratio differs from this one by at most the numerators' gap over the denominator and each
    # division's rounding (doubled, with the smallest normal double for the subnormal range)
    width = 2.0 * (bound[finite] / den[finite] + 2.0 * _U * np.abs(r)) + np.finfo(np.float64).tiny
    if not (np.isfinite(r).all() and np.isfinite(width).all()):
        return None
    low, high = r - width, r + width
    low_sorted, high_sorted = np.sort(low), np.sort(high)
    ranks = quantile_ranks(len(finite), level)
    decide = {}
    for rank in sorted({k for lo, hi, _ in ranks for k in (lo, hi)}):
        lo_k, hi_k = low_sorted[rank], high_sorted[rank]
        # below: wholly under the rank's least possible value; the rank's value is among the overlapping ones
        decide[rank] = (finite[(high >= lo_k) & (low <= hi_k)], int(np.count_nonzero(high < lo_k)))
    rows = np.sort(np.concatenate([c for c, _ in decide.values()]))
    # their union, ascending (np.unique would import numpy.ma: ~20 ms of start-up)
    return _Plan(ranks, decide, rows[np.concatenate(([True], rows[1:] != rows[:-1]))])


def _candidate_totals(counts: _Counts, V: np.ndarray, wanted: list[tuple[int, np.ndarray]]) -> list[np.ndarray]:
    """For each ``(column, replicates)`` in ``wanted``, that column's totals at those replicates with the bits of
    :func:`._bootstrap.totals`: the same rounded products C[b, q] v_q, added in query order. ``np.cumsum`` adds
    sequentially (numpy documents that its last element may differ from ``np.sum``'s pairwise sum); it starts
    from the first product where the loop starts from +0.0, which differs only in the sign of a zero total, and the
    loop's is +0.0 (+ 0.0 makes it so)."""
    cols = np.concatenate([np.full(len(rows), a) for a, rows in wanted])
    rows = np.concatenate([rows for _, rows in wanted])
    products = V.T[cols] * counts.c[rows]  # (pair, query): v_q C[b, q]
    sums = np.cumsum(products, axis=1)[:, -1] + 0.0
    return np.split(sums, np.cumsum([len(r) for _, r in wanted])[:-1])
