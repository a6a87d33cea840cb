"""``evaluate``: observations → the metrics dictionary written as ``metrics.json`` (the book's metrics chapter).

Shape (``METRICS_SCHEMA_VERSION`` = 5)::

    {"schema_version": 6,
     "settings": {"ks": [1, 5, 10], "exposure_k": 5, "buckets": 3, "exact_kemeny_max_k": 10,
                  "bootstrap": 1000, "permutations": 10000, "seed": 0, "ci_level": 0.95},
     "methods": {METHOD: {
        "overall": {"hr@1": ..., "ndcg@k": ..., "recall@k": ..., "mrr@k": ...,   (each k)
                    "ppi": ..., "gpi": ..., "gpi_exact": ..., "loc": ...,
                    "exposure@5": [E(p) for p = 0..max K - 1], "expected_exposure@5": [...],
                    "exposure_mad@5": ..., "exposure_maxdev@5": ...,
                    "queries": Q, "rows": R, "ppi_queries": ..., "gpi_queries": ..., "loc_queries": ...,
                    "gpi_suboptimal_queries": ...,
                    "ci": {NAME: [low, high], ...}},
        "per_query": {QUERY_ID: {"hr@k": ..., "ndcg@k": ..., "recall@k": ..., "mrr@k": ...,
                                 "ppi": ..., "gpi": ..., "gpi_exact": ..., "loc": ...,
                                 "rows": M, "candidates": K}}}},
     "comparisons": {METRIC: {A: {B: {"n": ..., "mean_diff": ..., "ci": [...], "p": ..., "exact": ...,
                                      "sd": ..., "queries_80": ...}}}},
     "references": {"first_stage" | "random": {"overall": {...}, "per_query": {...},
                                               "comparisons": {METRIC: {METHOD: {... method - reference ...}}}}}}

Methods and queries appear in the order of their first row in the input. ``null`` stands for "undefined": PPI when
no pair of the query was seen in two position cells; GPI and LOC when the query has fewer than 2 rows or K < 2;
``gpi_exact`` when the exact search is off or the query's K is above ``exact_kemeny_max_k`` — overall ``gpi_exact``
(and ``gpi_suboptimal_queries``, the queries where the local search missed the optimum) is null unless **every**
query with a GPI was solved exactly; ``exposure_mad@E`` and ``exposure_maxdev@E`` when no list is longer than E
(every item reaches the top-E: no position can be favoured). ``expected_exposure@E`` is always a list, aligned with
``exposure@E``. ``ci`` holds 95% bootstrap intervals over queries (see :mod:`._bootstrap`) for every scalar metric
that has a value (empty when ``n_bootstrap`` = 0): percentile intervals, except the basic (pivotal) interval,
clipped at 0, for ``exposure_mad@E`` and ``exposure_maxdev@E``, deviations whose percentile interval sits above the
value by about its upward bias. ``comparisons`` compares every two methods paired
over their shared queries on every per-query metric and ``exposure_mad@E`` (A before B in method order, differences
A - B; :mod:`._comparisons`); it is empty with one method or ``n_permutations`` = 0. No claim of the paper is
judged here: the input may be any reranker's observations, and the paper's claims are judged by the one judge,
:func:`._claims.judge_pairs`, where a run is read as the paper's methods (the book, ``invarirank report``). There is
no NaN anywhere, and the same input and settings give the same dictionary (so byte-identical JSON).

``references`` holds the reference rows of :mod:`._references`, so that a method's numbers can be read against what
no reranking and no model would give: the first stage's own order (only when its rankings are given) and a
uniformly random order (exact effectiveness, PPI and LOC; GPI from seeded draws at each K and M, about as precise as
``settings["reference_replicates"]`` draws per query; absent when that is 0), each compared with every method.

A metrics dictionary read back from a file is checked with :func:`check_metrics_version`: another schema version is
one clear error naming the file and the version, because an older shape lacks parts the readers rely on and a newer
one may mean something else by the same key (``CHANGELOG.md`` lists what each version changed; an older file is
re-evaluated from its observations, :func:`invarirank.store.refresh_metrics`).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._io import path_argument
from ..errors import InvariRankError
from . import _bootstrap as bootstrap
from ._comparisons import PERMUTATIONS, PerQuery, compare_methods
from ._consistency import gpi_local_search, inverse_permutations, loc_from_wins, pair_statistics, win_matrix
from ._effectiveness import effectiveness_from_ranks
from ._kemeny import kemeny_mass
from ._positional_exposure import deviation_statistics, exposure_summary, position_hits
from ._references import (
    FIRST_STAGE,
    RANDOM,
    REFERENCE_REPLICATES,
    first_stage_rows,
    random_block,
    read_first_stage,
    reference_comparisons,
    reference_inputs,
)
from ._settings import CI_LEVEL, check_against_lists, check_settings
from .observations import as_rows, gc_paused

__all__ = ["evaluate"]

METRICS_SCHEMA_VERSION = 6
_GPI_CHUNK_CELLS = 1 << 20


def evaluate(
    data: Any,
    ks: Sequence[int] = (1, 5, 10),
    exposure_k: int = 5,
    buckets: int = 3,
    exact_kemeny_max_k: int | None = 10,
    n_bootstrap: int = 1000,
    seed: int = 0,
    n_permutations: int = PERMUTATIONS,
    *,
    first_stage: Any = None,
    reference_replicates: int = REFERENCE_REPLICATES,
) -> dict:
    """Metrics of observations: the ``metrics.json`` dictionary (its shape in :mod:`invarirank.evaluation.engine`'s
    docstring and the book's file formats page; the definitions in the book's metrics chapter).

    Stability: full (observations → the ``metrics.json`` dictionary).

    ``data``: a path to an observations file (.jsonl, .jsonl.gz, .parquet), a pandas DataFrame, or a list of rows:
    dicts, or row objects with ``to_json()`` such as the ``ObservationRow`` objects that
    :func:`invarirank.rerank_query` returns (validated like a file; errors name the 1-based row). ``ks``: the cut-offs
    of HR, nDCG, recall and MRR; ``exposure_k``: the top-k of exposure by presented position; ``buckets``: the
    number of position cells of PPI. ``exact_kemeny_max_k=None`` switches the exact Kemeny search off;
    ``n_bootstrap=0`` switches the intervals off; ``n_permutations=0`` the comparisons (then empty).
    ``seed`` seeds the bootstrap and the permutations, so equal arguments give an equal dictionary.
    ``first_stage`` (query id -> the first stage's ranking, or the path of a ``first_stage.jsonl.gz``) adds the
    first-stage-order reference; ``reference_replicates`` sets the precision of the random order's GPI (its other
    metrics are exact; 0: no random reference). See :mod:`._references`.
    """
    settings = check_settings(
        ks,
        exposure_k,
        buckets,
        exact_kemeny_max_k,
        n_bootstrap,
        seed,
        n_permutations,
        reference_replicates=reference_replicates,
    )
    if first_stage is not None and not isinstance(first_stage, Mapping):
        first_stage = read_first_stage(path_argument(first_stage, "evaluate: first_stage", "first-stage file's path"))
    rows = as_rows(data)
    given = {"exposure_k": exposure_k != 5, "buckets": buckets != 3}
    for note in check_against_lists(rows, settings, "the observations", given=given):
        warnings.warn(note, stacklevel=2)
    return evaluate_rows(rows, settings, first_stage=first_stage)


def evaluate_rows(
    rows: list[dict], settings: dict[str, Any], *, first_stage: Mapping[str, Sequence[str]] | None = None
) -> dict:
    """:func:`evaluate` on already validated rows and settings (from :func:`check_settings`)."""
    with gc_paused():
        grouped: dict[str, dict[str, list[dict]]] = {}
        for r in rows:
            grouped.setdefault(r["method"], {}).setdefault(r["query_id"], []).append(r)
        methods: dict[str, dict] = {}
        values: dict[str, PerQuery] = {}
        presented: dict[str, np.ndarray] = {}  # the random order's input, found while mapping ids (see below)
        for m, queries in grouped.items():
            methods[m], values[m] = _evaluate_method(queries, settings, presented)
        references = _references(grouped, values, settings, first_stage, presented)
    comparisons = (
        compare_methods(
            values,
            seed=settings["seed"],
            n_bootstrap=settings["bootstrap"],
            n_permutations=settings["permutations"],
            ci_level=CI_LEVEL,
        )
        if settings["permutations"] > 0
        else {}
    )
    return {
        "schema_version": METRICS_SCHEMA_VERSION,
        "settings": settings,
        "methods": methods,
        "comparisons": comparisons,
        "references": references,
    }


def _references(
    grouped: Mapping[str, Mapping[str, list[dict]]],
    values: Mapping[str, PerQuery],
    settings: Mapping[str, Any],
    first_stage: Mapping[str, Sequence[str]] | None,
    presented: Mapping[str, np.ndarray] | None = None,
) -> dict:
    """The ``references`` section: the first-stage order (when its rankings are given) and the random order (when
    ``reference_replicates`` > 0), each with its comparisons against every method (:mod:`._references`)."""
    if not grouped:
        return {}
    inputs = reference_inputs(grouped)
    blocks: dict[str, tuple[dict, PerQuery]] = {}
    if first_stage is not None:
        blocks[FIRST_STAGE] = _evaluate_method(first_stage_rows(inputs, first_stage), dict(settings))
    if settings["reference_replicates"] > 0:
        blocks[RANDOM] = random_block(
            inputs, settings, replicates=settings["reference_replicates"], presented=presented
        )
    out = {}
    for name, (block, pq) in blocks.items():
        out[name] = {**block, "comparisons": reference_comparisons(values, name, pq, settings)}
    return out


def _num(x: float) -> float | None:
    return None if x is None or x != x else float(x)


def _evaluate_method(
    queries: dict[str, list[dict]], st: dict[str, Any], presented: dict[str, np.ndarray] | None = None
) -> tuple[dict, PerQuery]:
    """One method's ``{"overall": ..., "per_query": ...}`` block and its per-query values for the comparisons.

    ``presented``, when given, receives for each query not yet in it the presented positions of its rows (M x K,
    items labelled in the order of the query's first row): the random order's input
    (:func:`~invarirank.evaluation._references.random_block`), taken from the ids mapped here rather than mapped
    again."""
    ks, E, B, exact_max = st["ks"], st["exposure_k"], st["buckets"], st["exact_kemeny_max_k"]
    qids = list(queries)
    Q = len(qids)
    n_rows = np.array([len(queries[q]) for q in qids], dtype=np.int64)
    k_of = np.array([len(queries[q][0]["input"]) for q in qids], dtype=np.int64)
    max_k = int(k_of.max())
    eff_names = [f"{m}@{k}" for m in ("hr", "ndcg", "recall", "mrr") for k in ks]
    eff_sums = {name: np.zeros(Q) for name in eff_names}
    ppi_q, gpi_q, exact_q, loc_q = (np.full(Q, np.nan) for _ in range(4))
    hits = np.zeros((Q, max_k))

    for K in sorted(set(k_of.tolist())):  # (np.unique would import numpy.ma: slow start-up)
        qi = np.flatnonzero(k_of == K)
        inp_flat: list[int] = []
        out_flat: list[int] = []
        rel = np.zeros((len(qi), K), dtype=bool)
        n_rel = np.zeros(len(qi), dtype=np.int64)
        for g, q in enumerate(qi.tolist()):
            qrows = queries[qids[q]]
            index = {x: i for i, x in enumerate(sorted(qrows[0]["input"]))}  # code-point id order
            get = index.__getitem__
            for r in qrows:
                inp_flat.extend(map(get, r["input"]))
                out_flat.extend(map(get, r["output"]))
            truth = set(qrows[0]["relevant"])
            n_rel[g] = len(truth)
            rel[g, [index[x] for x in truth if x in index]] = True
        M = n_rows[qi]
        R = int(M.sum())
        inp = np.array(inp_flat, dtype=np.int64).reshape(R, K)
        pos = inverse_permutations(inp)
        rank = inverse_permutations(np.array(out_flat, dtype=np.int64).reshape(R, K))
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
        stats = {}
        for name in eff_names:
            columns.append(eff_sums[name])
            stats[name] = bootstrap.ratio(len(columns) - 1, 0)
        for name in ("ppi", "gpi", "gpi_exact", "loc"):
            if overall[name] is not None:
                columns += [np.where(has[name], values[name], 0.0), has[name].astype(np.float64)]
                stats[name] = bootstrap.ratio(len(columns) - 2, len(columns) - 1)
        s0 = len(columns)
        V = np.column_stack(columns + [hits, rows_at, expected_at])
        mad, maxdev = deviation_statistics(
            slice(s0, s0 + max_k), slice(s0 + max_k, s0 + 2 * max_k), slice(s0 + 2 * max_k, s0 + 3 * max_k)
        )
        if exposure_defined:
            stats[f"exposure_mad@{E}"], stats[f"exposure_maxdev@{E}"] = mad, maxdev
        reps = bootstrap.collect(Q, st["bootstrap"], st["seed"], V, stats)
        deviations = (f"exposure_mad@{E}", f"exposure_maxdev@{E}")
        for name in stats:
            interval = (
                bootstrap.basic_interval(reps[name], overall[name], CI_LEVEL)
                if name in deviations
                else bootstrap.percentile_interval(reps[name], CI_LEVEL)
            )
            if interval is not None:
                ci[name] = interval
    overall["ci"] = ci

    # ---- per query
    per_query: dict[str, dict[str, Any]] = {}
    eff_lists = {name: (v / n_rows).tolist() for name, v in eff_sums.items()}
    cons_lists = {name: [_num(x) for x in values[name].tolist()] for name in ("ppi", "gpi", "gpi_exact", "loc")}
    n_list, k_list = n_rows.tolist(), k_of.tolist()
    for q, qid in enumerate(qids):
        d: dict[str, Any] = {name: eff_lists[name][q] for name in eff_names}
        for name in ("ppi", "gpi", "gpi_exact", "loc"):
            d[name] = cons_lists[name][q]
        d["rows"], d["candidates"] = n_list[q], k_list[q]
        per_query[qid] = d
    per_query_values = {**{name: v / n_rows for name, v in eff_sums.items()}, **values}
    exposure_sums = (f"exposure_mad@{E}", hits, rows_at, expected_at) if exposure_defined else None
    return {"overall": overall, "per_query": per_query}, PerQuery(tuple(qids), per_query_values, exposure_sums)


def check_metrics_version(metrics: Any, where: str) -> dict:
    """``metrics`` (a parsed ``metrics.json``) when it has this version's schema; otherwise raise
    :class:`InvariRankError` naming ``where`` and the version found, and saying how to make a new one."""
    version = metrics.get("schema_version") if isinstance(metrics, dict) else None
    if version != METRICS_SCHEMA_VERSION or isinstance(version, bool):
        found = "not a metrics object" if not isinstance(metrics, dict) else f"schema_version {version!r}"
        raise InvariRankError(
            f"{where}: {found}, expected schema_version {METRICS_SCHEMA_VERSION} (a metrics.json "
            f"of an older invarirank; recompute it with `invarirank evaluate OBSERVATIONS "
            f"--output {where}`)"
        )
    return metrics


def dumps_metrics(metrics: dict) -> str:
    """The metrics dictionary as JSON text: nested objects down to the metric names are indented (2 spaces),
    each per-query object, list and interval stays on one line. Deterministic, UTF-8, no NaN, trailing newline."""
    compact = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
    key = json.JSONEncoder(ensure_ascii=False).encode
    out: list[str] = []

    def emit(obj: Any, depth: int, name: str) -> None:
        if isinstance(obj, dict) and obj and (depth < 4 or name == "ci"):
            pad = "  " * (depth + 1)
            out.append("{\n")
            for n, (k, v) in enumerate(obj.items()):
                out.append(f"{pad}{key(str(k))}: ")
                emit(v, depth + 1, str(k))
                out.append(",\n" if n < len(obj) - 1 else "\n")
            out.append("  " * depth + "}")
        else:
            out.append(compact(obj))

    emit(metrics, 0, "")
    return "".join(out) + "\n"
