"""Paired comparisons of the methods of one run (the ``comparisons`` section of ``metrics.json``).

The methods of a run see the same queries under the same presented orders, so two methods are compared **paired**,
query by query. For one metric and two methods ``a`` and ``b`` (``a`` before ``b`` in the run's method order):

- **paired queries**: the queries both methods have and where both have a value (PPI, GPI, ``gpi_exact`` and LOC
  can be undefined for a query, see :mod:`.engine`); ``n`` is their number.
- ``mean_diff`` = the mean over the paired queries of value_a(q) - value_b(q): **a minus b**, in the metric's own
  units, whichever direction is better. (For the row-averaged effectiveness metrics this equals the difference of
  the two overall values when every query has the same number of rows in both methods, as in a run with M orders
  per query; otherwise queries weigh equally here.)
- ``ci``: the paired percentile bootstrap interval (``ci_level``, 0.95) of ``mean_diff`` (the basic interval for the
  exposure MAD, below): a replicate draws the queries with replacement and both methods use the drawn queries
  (:mod:`._bootstrap`, seeded with the evaluate seed: the same resamples as the per-method intervals); replicates
  without a paired query are dropped. ``None`` when the bootstrap is off.
- ``p``: the two-sided paired sign-flip permutation p-value of "within a query the two methods' values are
  exchangeable": T(s) = |sum_q s_q d_q| over sign vectors s in {-1, +1}^n. With n <= 16 (``EXACT_MAX_QUERIES``)
  all 2^n sign vectors are enumerated and p = #{s: T(s) >= T(1)} / 2^n, exact (``"exact": true``; the identity and
  its negation count, so p >= 2 / 2^n); otherwise R = ``permutations`` (10,000) sign vectors are drawn from
  :func:`invarirank._orders.rng_for` (seed, "sign flips") and p = (1 + #{s: T(s) >= T(1)}) / (1 + R). Ties count
  (up to a relative 1e-9, so float round-off cannot turn a tie into a strict inequality): identical methods get 1.
- ``sd``: the standard deviation (ddof = 1) of the n per-query differences (``None`` when n < 2).
- ``queries_80``: the queries that would resolve the observed difference with 80 % power in a two-sided test at
  alpha = 0.05, **normal approximation**: ((z_0.975 + z_0.8) · sd / |mean_diff|)², rounded up, at least 1 (it does
  not know that a sign-flip test needs n >= 6 to reach p < 0.05 at all); ``None`` when mean_diff is 0 or sd is None.

**Exposure.** ``exposure_mad@E`` has no per-query value: it is a deviation of the exposure curve pooled over all
rows. It is compared through each query's contributions to the pool (per-position top-E hits, rows and expected
hits, see :mod:`._positional_exposure`): ``mean_diff`` = MAD_a - MAD_b pooled over the paired queries (those both
methods have); the bootstrap resamples the contributions, and ``ci`` is the **basic** interval of the difference
(:func:`invarirank.evaluation._bootstrap.basic_interval`, not clipped: a difference can be negative), since each MAD
is biased upward by an amount that depends on its own curve, so their difference's percentile interval is shifted
too; the permutation test *swaps* the two methods' contributions of the queries where s_q = -1 (for a per-query
value that swap is exactly the sign flip of d_q), same sign vectors, same p rule; ``sd`` is the *effective*
per-query spread, bootstrap standard error × √n, which is what ``queries_80`` needs (``None`` when the bootstrap
is off). ``exposure_maxdev@E`` (a maximum, not smooth under resampling) is not compared.

Shape (a, b in the run's method order, only a before b; :func:`comparison` reads either orientation)::

    {METRIC: {A: {B: {"n": 500, "mean_diff": -0.012, "ci": [-0.03, 0.006], "p": 0.2041, "exact": false,
                      "sd": 0.21, "queries_80": 2400}}}}

Deterministic: the same per-query values and settings give the same dictionary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import InvariRankError
from . import _bootstrap as bootstrap
from ._positional_exposure import deviation_statistics
from ._ratio_intervals import ratio_intervals
from ._sign_flips import EXACT_MAX_QUERIES, Pooled, permutation_p

PERMUTATIONS = 10_000
ALPHA = 0.05
POWER = 0.8


class PerQuery(NamedTuple):
    """One method's per-query values: what the paired comparisons take.

    ``query_ids``: Q ids. ``values``: metric name → Q floats aligned with ``query_ids`` (NaN where the metric is
    undefined for that query). ``exposure``: ``None``, or ``(name, hits, rows, expected)`` with three Q × P arrays of
    each query's contributions to the pooled exposure at 0-based presented positions p (rows whose item at p reached
    the top-E, rows with K > p, the sum of min(E, K)/K over those rows); ``name`` is the metric, ``exposure_mad@E``.
    """

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    exposure: tuple[str, np.ndarray, np.ndarray, np.ndarray] | None = None


def per_query_from_block(block: Mapping[str, Any]) -> PerQuery:
    """:class:`PerQuery` of one method's block of a ``metrics.json`` (any schema version): every per-query metric
    with a numeric or null value (``rows`` and ``candidates`` are counts, not metrics); no exposure (the file holds
    no per-query exposure contributions)."""
    per_query = block.get("per_query") or {}
    qids = tuple(per_query)
    names: dict[str, None] = {}
    for d in per_query.values():
        names.update(
            (k, None)
            for k, v in d.items()
            if k not in ("rows", "candidates")
            and (v is None or isinstance(v, (int, float)))
            and not isinstance(v, bool)
        )
    values = {
        name: np.array(
            [np.nan if per_query[q].get(name) is None else float(per_query[q][name]) for q in qids], dtype=np.float64
        )
        for name in names
    }
    return PerQuery(qids, values)


# ----------------------------------------------------------------------------------------------- small helpers


def queries_for_power(mean_diff: float, sd: float | None, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """((z_{1-alpha/2} + z_power) · sd / |mean_diff|)², rounded up, at least 1 (normal approximation, two-sided);
    ``None`` when ``mean_diff`` is 0 or not finite, or ``sd`` is None."""
    if sd is None or not math.isfinite(mean_diff) or mean_diff == 0 or not math.isfinite(sd):
        return None
    z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
    return max(1, math.ceil((z * sd / abs(mean_diff)) ** 2))


def normal_quantile(p: float) -> float:
    """``statistics.NormalDist().inv_cdf(p)``, to the bit: the function it calls, from CPython's C accelerator
    ``_statistics`` when the interpreter has one (importing ``statistics`` itself imports ``fractions`` and
    ``decimal``: about 40 ms of ``invarirank evaluate``'s start-up), else through ``statistics``."""
    if 0.0 < p < 1.0:
        try:
            from _statistics import _normal_dist_inv_cdf  # noqa: PLC2701 - what NormalDist.inv_cdf calls
        except ImportError:  # pragma: no cover - an interpreter without the accelerator
            pass
        else:
            return _normal_dist_inv_cdf(p, 0.0, 1.0)
    from statistics import NormalDist  # (its error for p outside (0, 1))

    return NormalDist().inv_cdf(p)


def sign_flip_p(differences: Sequence[float], n_permutations: int = PERMUTATIONS, seed: int = 0) -> tuple[float, bool]:
    """``(p, exact)``: the two-sided paired sign-flip p-value of one vector of per-query differences (NaN entries
    are left out), by the rule of the module docstring."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d)]
    p, _, exact = permutation_p(len(d), d[:, None], [], n_permutations, seed)
    return float(p[0]), exact


def comparison(comparisons: Mapping[str, Any], metric: str, a: str, b: str) -> dict | None:
    """The record of ``metric`` for a - b, whichever orientation is stored (``mean_diff`` and ``ci`` are negated
    and the interval's ends swapped when only b - a is); ``None`` when the pair was not compared."""
    by_a = comparisons.get(metric) or {}
    if b in (by_a.get(a) or {}):
        return dict(by_a[a][b])
    if a in (by_a.get(b) or {}):
        rec = dict(by_a[b][a])
        rec["mean_diff"] = -rec["mean_diff"]
        if rec.get("ci") is not None:
            rec["ci"] = [-rec["ci"][1], -rec["ci"][0]]
        return rec
    return None


# ----------------------------------------------------------------------------------------------- the comparisons


def compare_methods(
    methods: Mapping[str, PerQuery],
    *,
    seed: int = 0,
    n_bootstrap: int = 1000,
    n_permutations: int = PERMUTATIONS,
    ci_level: float = 0.95,
) -> dict:
    """Every metric, every pair of ``methods`` (in their order): the dictionary of the module docstring.

    Queries are matched by id (the union of all methods' ids, in order of first appearance, is what the bootstrap
    resamples and the sign vectors flip). Metrics come in order of first appearance over the methods' ``values``,
    then the exposure metric; a pair without a paired query for a metric is left out. Fewer than two methods: ``{}``.
    """
    if isinstance(n_permutations, bool) or not isinstance(n_permutations, (int, np.integer)) or n_permutations < 1:
        raise InvariRankError(f"n_permutations: expected an integer >= 1, got {n_permutations!r}")
    names = list(methods)
    if len(names) < 2:
        return {}
    union: dict[str, int] = {}
    for pq in methods.values():
        for q in pq.query_ids:
            union.setdefault(q, len(union))
    Q = len(union)
    aligned = {m: _align(pq, union) for m, pq in methods.items()}
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    metrics: dict[str, None] = {}
    for pq in methods.values():
        metrics.update((k, None) for k in pq.values)

    # linear columns: one per (metric, pair) with a paired query
    lin_keys: list[tuple[str, str, str]] = []
    diffs: list[np.ndarray] = []
    for metric in metrics:
        for a, b in pairs:
            va, vb = aligned[a][0].get(metric), aligned[b][0].get(metric)
            if va is None or vb is None:
                continue
            ok = np.isfinite(va) & np.isfinite(vb)
            if ok.any():
                lin_keys.append((metric, a, b))
                diffs.append(np.where(ok, va - vb, np.nan))
    D = np.column_stack(diffs) if diffs else np.zeros((Q, 0))
    valid = np.isfinite(D)
    D0 = np.where(valid, D, 0.0)

    # pooled exposure: one per pair where both methods carry the same exposure metric and share a query
    pool_keys: list[tuple[str, str, str]] = []
    pooled: list[Pooled] = []
    for a, b in pairs:
        ea, eb = aligned[a][1], aligned[b][1]
        if ea is None or eb is None or ea[0] != eb[0]:
            continue
        shared = ea[1] & eb[1]
        if shared.any():
            width = max(ea[2].shape[1], eb[2].shape[1]) // 3
            Ua, Ub = (_pad_thirds(e[2], width) * shared[:, None] for e in (ea, eb))
            mad, _ = deviation_statistics(slice(0, width), slice(width, 2 * width), slice(2 * width, 3 * width))
            pool_keys.append((ea[0], a, b))
            pooled.append(Pooled(Ua, Ub, mad, int(shared.sum())))

    p_lin, p_pool, exact = permutation_p(Q, D0, pooled, n_permutations, seed)
    n_valid = valid.sum(axis=0)
    exact_lin = np.full(len(lin_keys), exact)
    if not exact:  # columns with few paired queries: enumerate their own sign vectors
        for few in np.flatnonzero(n_valid <= EXACT_MAX_QUERIES):
            p_lin[few] = permutation_p(int(n_valid[few]), D[valid[:, few], few][:, None], [], n_permutations, seed)[0][
                0
            ]
            exact_lin[few] = True
    ci_lin, ci_pool, se_pool = _bootstrap_intervals(Q, D0, valid, pooled, n_bootstrap, seed, ci_level)

    out: dict[str, dict] = {}
    for j, (metric, a, b) in enumerate(lin_keys):
        d = D[valid[:, j], j]
        mean = float(d.mean())
        sd = float(d.std(ddof=1)) if len(d) >= 2 else None
        out.setdefault(metric, {}).setdefault(a, {})[b] = _record(
            len(d), mean, ci_lin[j], p_lin[j], bool(exact_lin[j]), sd
        )
    for i, (metric, a, b) in enumerate(pool_keys):
        pl = pooled[i]
        mean = pl.observed()
        sd = None if se_pool[i] is None else se_pool[i] * math.sqrt(pl.n)
        out.setdefault(metric, {}).setdefault(a, {})[b] = _record(pl.n, mean, ci_pool[i], p_pool[i], exact, sd)
    return out


def _record(n: int, mean: float, ci: list[float] | None, p: float, exact: bool, sd: float | None) -> dict:
    return {
        "n": int(n),
        "mean_diff": mean,
        "ci": ci,
        "p": float(p),
        "exact": exact,
        "sd": sd,
        "queries_80": queries_for_power(mean, sd),
    }


def _align(
    pq: PerQuery, union: Mapping[str, int]
) -> tuple[dict[str, np.ndarray], tuple[str, np.ndarray, np.ndarray] | None]:
    """A method's values on the union of queries (NaN where it lacks the query) and its exposure contributions as
    ``(name, has_query, [hits | rows | expected])`` (zeros where it lacks the query)."""
    Q = len(union)
    idx = np.array([union[q] for q in pq.query_ids], dtype=np.int64)
    values = {}
    for name, v in pq.values.items():
        full = np.full(Q, np.nan)
        full[idx] = np.asarray(v, dtype=np.float64)
        values[name] = full
    if pq.exposure is None:
        return values, None
    name, *parts = pq.exposure
    has = np.zeros(Q, dtype=bool)
    has[idx] = True
    contrib = np.zeros((Q, 3 * parts[0].shape[1]))
    contrib[idx] = np.hstack([np.asarray(x, dtype=np.float64) for x in parts])
    return values, (name, has, contrib)


def _pad_thirds(U: np.ndarray, width: int) -> np.ndarray:
    """[h | n | x] (Q × 3P) → the same with each third padded with zero columns to ``width``."""
    P = U.shape[1] // 3
    out = np.zeros((U.shape[0], 3 * width))
    for t in range(3):
        out[:, t * width : t * width + P] = U[:, t * P : (t + 1) * P]
    return out


# ----------------------------------------------------------------------------------------------- bootstrap


def _bootstrap_intervals(
    Q: int, D0: np.ndarray, valid: np.ndarray, pooled: Sequence[Pooled], n_bootstrap: int, seed: int, level: float
) -> tuple[list, list, list]:
    """Paired bootstrap: (percentile interval of each column's mean difference, basic interval of each pooled
    difference, standard error of each pooled difference), all ``None`` when ``n_bootstrap`` is 0."""
    c, k = D0.shape[1], len(pooled)
    if n_bootstrap == 0 or Q == 0:
        return [None] * c, [None] * k, [None] * k
    blocks = [D0, valid.astype(np.float64)] + [x for pl in pooled for x in (pl.a, pl.b)]
    edges = np.cumsum([0] + [x.shape[1] for x in blocks])

    def pooled_diffs(Y: np.ndarray) -> np.ndarray:
        cols = [
            pl.stat(Y[:, edges[2 + 2 * i] : edges[3 + 2 * i]]) - pl.stat(Y[:, edges[3 + 2 * i] : edges[4 + 2 * i]])
            for i, pl in enumerate(pooled)
        ]
        return np.column_stack(cols) if cols else np.zeros((len(Y), 0))

    means = {j: (j, c + j) for j in range(c)}  # column j's paired queries' total over their number
    custom = {"pooled": pooled_diffs} if pooled else {}
    intervals, reps = ratio_intervals(
        Q, n_bootstrap, seed, np.hstack(blocks), means, level, custom, range(edges[2], edges[-1])
    )
    ci_lin = [intervals[j] for j in range(c)]
    ci_pool, se_pool = [], []
    for i, pl in enumerate(pooled):
        r = reps["pooled"][:, i]
        r = r[np.isfinite(r)]
        ci_pool.append(bootstrap.basic_interval(r, pl.observed(), level, lower=None))
        se_pool.append(float(r.std(ddof=1)) if len(r) >= 2 else None)
    return ci_lin, ci_pool, se_pool
