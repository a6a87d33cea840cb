"""One method's metrics from its rows as codes (:mod:`._codes`): the ``{"overall": ..., "per_query": ...}`` block of
``metrics.json`` (its shape in :mod:`invarirank.evaluation.engine`) and the per-query values the comparisons take.

Queries are taken by K; within a K their rows are stacked in query order, and every sum over rows or queries runs
in that order (the bits of the committed runs' metrics depend on it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _bootstrap as bootstrap
from ._codes import QueryRows, k_groups
from ._comparisons import PerQuery
from ._consistency import gpi_local_search, inverse_permutations, loc_from_wins, pair_statistics, win_matrix
from ._effectiveness import effectiveness_from_ranks
from ._kemeny import kemeny_mass
from ._positional_exposure import deviation_statistics, exposure_summary, position_hits
from ._ratio_intervals import ratio_intervals
from ._settings import CI_LEVEL

_GPI_CHUNK_CELLS = 1 << 20


def _num(x: float) -> float | None:
    return None if x is None or x != x else float(x)


def method_block(
    queries: Mapping[str, QueryRows], st: Mapping[str, Any], presented: dict[str, np.ndarray] | None = None
) -> tuple[dict, PerQuery]:
    """One method's ``{"overall": ..., "per_query": ...}`` block and its per-query values for the comparisons.

    ``presented``, when given, receives for each query not yet in it the presented positions of its rows (M x K,
    items labelled in the order of the query's first row): the random order's input
    (:func:`~invarirank.evaluation._references.random_block`), taken from the codes here rather than made again."""
    ks, E, B, exact_max = st["ks"], st["exposure_k"], st["buckets"], st["exact_kemeny_max_k"]
    qids = list(queries)
    rows = [queries[q] for q in qids]
    Q = len(qids)
    n_rows = np.array([q.inp.shape[0] for q in rows], dtype=np.int64)
    k_of = np.array([q.inp.shape[1] for q in rows], dtype=np.int64)
    max_k = int(k_of.max())
    eff_names = [f"{m}@{k}" for m in ("hr", "ndcg", "recall", "mrr") for k in ks]
    eff_sums = {name: np.zeros(Q) for name in eff_names}
    ppi_q, gpi_q, exact_q, loc_q = (np.full(Q, np.nan) for _ in range(4))
    hits = np.zeros((Q, max_k))

    for K, qi, inp, out, rel, n_rel in k_groups(rows, k_of):
        M = n_rows[qi]
        pos = inverse_permutations(inp)
        rank = inverse_permutations(out)
        starts = np.concatenate([[0], np.cumsum(M)])
        row_group = np.repeat(np.arange(len(qi)), M)
        if presented is not None:  # position of item i of the first row = pos at that item's code-point index
            first = np.take_along_axis(pos, inp[starts[:-1]][row_group], axis=1)
            for g, q in enumerate(qi.tolist()):
                presented.setdefault(qids[q], first[starts[g] : starts[g + 1]])

        for name, per_row in effectiveness_from_ranks(rank, rel[row_group], n_rel[row_group], ks).items():
            eff_sums[name][qi] = np.add.reduceat(per_row, starts[:-1])
        hits[qi, :K] = position_hits(pos, rank, starts, E)

        w_up, ppi_sum, ppi_pairs = pair_statistics(pos, rank, starts, B)
        ppi_q[qi] = np.divide(ppi_sum, ppi_pairs, out=np.full(len(qi), np.nan), where=ppi_pairs > 0)
        ok = np.flatnonzero(M >= 2) if K >= 2 else np.zeros(0, dtype=np.int64)
        if ok.size == 0:
            continue
        pairs = K * (K - 1) // 2
        loc_q[qi[ok]] = loc_from_wins(w_up[ok], M[ok], K)
        step = max(1, _GPI_CHUNK_CELLS // (K * K))
        for c0 in range(0, ok.size, step):
            sel = ok[c0 : c0 + step]
            W = win_matrix(w_up[sel], M[sel], K)
            _, mass = gpi_local_search(W)
            gpi_q[qi[sel]] = mass / (M[sel] * pairs)
            if exact_max is not None and K <= exact_max:
                exact_q[qi[sel]] = kemeny_mass(W) / (M[sel] * pairs)

    # ---- overall
    total_rows = int(n_rows.sum())
    overall: dict[str, Any] = {name: float(v.sum() / total_rows) for name, v in eff_sums.items()}
    has = {name: ~np.isnan(v) for name, v in (("ppi", ppi_q), ("gpi", gpi_q), ("gpi_exact", exact_q), ("loc", loc_q))}
    values = {"ppi": ppi_q, "gpi": gpi_q, "gpi_exact": exact_q, "loc": loc_q}
    exact_complete = bool(np.all(has["gpi_exact"] == has["gpi"])) and has["gpi"].any()
    for name in ("ppi", "gpi", "gpi_exact", "loc"):
        v, h = values[name], has[name]
        overall[name] = float(v[h].mean()) if h.any() and (name != "gpi_exact" or exact_complete) else None
    positions = np.arange(max_k)
    rows_at = (k_of[:, None] > positions) * n_rows[:, None].astype(np.float64)  # Q x maxK
    share = np.minimum(E, k_of) / k_of
    expected_at = (k_of[:, None] > positions) * (n_rows * share)[:, None]
    summary = exposure_summary(hits.sum(axis=0), rows_at.sum(axis=0), expected_at.sum(axis=0))
    overall[f"exposure@{E}"] = summary["exposure"]
    overall[f"expected_exposure@{E}"] = summary["expected"]
    # every list no longer than the cut-off: every item reaches the top-E, so the deviation is not "no bias" but
    # not defined (the protocol's top-k with k >= K is the whole list)
    exposure_defined = bool((k_of > E).any())
    overall[f"exposure_mad@{E}"] = summary["mad"] if exposure_defined else None
    overall[f"exposure_maxdev@{E}"] = summary["maxdev"] if exposure_defined else None
    overall["queries"] = Q
    overall["rows"] = total_rows
    for name in ("ppi", "gpi", "loc"):
        overall[f"{name}_queries"] = int(has[name].sum())
    overall["gpi_suboptimal_queries"] = int((gpi_q[has["gpi"]] > exact_q[has["gpi"]]).sum()) if exact_complete else None

    # ---- bootstrap intervals over queries
    ci: dict[str, list[float]] = {}
    if st["bootstrap"] > 0:
        columns: list[np.ndarray] = [n_rows.astype(np.float64)]
        ratios: dict[str, tuple[int, int]] = {}  # name -> (numerator, denominator) columns
        for name in eff_names:
            columns.append(eff_sums[name])
            ratios[name] = (len(columns) - 1, 0)
        for name in ("ppi", "gpi", "gpi_exact", "loc"):
            if overall[name] is not None:
                columns += [np.where(has[name], values[name], 0.0), has[name].astype(np.float64)]
                ratios[name] = (len(columns) - 2, len(columns) - 1)
        s0 = len(columns)
        V = np.column_stack(columns + [hits, rows_at, expected_at])
        mad, maxdev = deviation_statistics(
            slice(s0, s0 + max_k), slice(s0 + max_k, s0 + 2 * max_k), slice(s0 + 2 * max_k, s0 + 3 * max_k)
        )
        deviations = {f"exposure_mad@{E}": mad, f"exposure_maxdev@{E}": maxdev} if exposure_defined else {}
        intervals, reps = ratio_intervals(
            Q, st["bootstrap"], st["seed"], V, ratios, CI_LEVEL, deviations, range(s0, s0 + 3 * max_k)
        )
        for name in [*ratios, *deviations]:
            interval = (
                bootstrap.basic_interval(reps[name], overall[name], CI_LEVEL) if name in deviations else intervals[name]
            )
            if interval is not None:
                ci[name] = interval
    overall["ci"] = ci

    # ---- per query
    per_query: dict[str, dict[str, Any]] = {}
    keys = [*eff_names, "ppi", "gpi", "gpi_exact", "loc", "rows", "candidates"]
    columns_q = [(eff_sums[name] / n_rows).tolist() for name in eff_names]
    columns_q += [[_num(x) for x in values[name].tolist()] for name in ("ppi", "gpi", "gpi_exact", "loc")]
    columns_q += [n_rows.tolist(), k_of.tolist()]
    for qid, row in zip(qids, zip(*columns_q)):  # one query's values, in the keys' order
        per_query[qid] = dict(zip(keys, row))
    per_query_values = {**{name: v / n_rows for name, v in eff_sums.items()}, **values}
    exposure_sums = (f"exposure_mad@{E}", hits, rows_at, expected_at) if exposure_defined else None
    return {"overall": overall, "per_query": per_query}, PerQuery(tuple(qids), per_query_values, exposure_sums)
