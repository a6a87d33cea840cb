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
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .._io import path_argument
from ..errors import InvariRankError
from ._code_reader import read_codes
from ._codes import Codes, codes_of_queries, codes_of_rows, list_lengths, reference_queries
from ._comparisons import PERMUTATIONS, PerQuery, compare_methods
from ._method_metrics import method_block
from ._references import (
    FIRST_STAGE,
    RANDOM,
    REFERENCE_REPLICATES,
    first_stage_codes,
    random_block_of,
    read_first_stage,
    reference_comparisons,
)
from ._settings import CI_LEVEL, check_against_lists, check_list_lengths, check_settings
from .observations import as_rows, gc_paused

__all__ = ["evaluate"]

METRICS_SCHEMA_VERSION = 6


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
    given = {"exposure_k": exposure_k != 5, "buckets": buckets != 3}
    codes = read_codes(data) if isinstance(data, (str, os.PathLike)) else None
    if codes is None:  # rows in memory, or a file the fast reader leaves to the row-by-row one
        rows = as_rows(data)
        for note in check_against_lists(rows, settings, "the observations", given=given):
            warnings.warn(note, stacklevel=2)
        return evaluate_rows(rows, settings, first_stage=first_stage)
    for note in check_list_lengths(*list_lengths(codes), settings, "the observations", given=given):
        warnings.warn(note, stacklevel=2)
    return evaluate_codes(codes, settings, first_stage=first_stage)


def evaluate_rows(
    rows: list[dict], settings: dict[str, Any], *, first_stage: Mapping[str, Sequence[str]] | None = None
) -> dict:
    """:func:`evaluate` on already validated rows and settings (from :func:`check_settings`)."""
    with gc_paused():
        codes = codes_of_rows(rows)
    return evaluate_codes(codes, settings, first_stage=first_stage)


def evaluate_codes(
    codes: Codes, settings: dict[str, Any], *, first_stage: Mapping[str, Sequence[str]] | None = None
) -> dict:
    """:func:`evaluate` on observations as codes (:mod:`._codes`: from validated rows or read by
    :func:`~invarirank.evaluation._code_reader.read_codes`) and settings from :func:`check_settings`."""
    with gc_paused():
        methods: dict[str, dict] = {}
        values: dict[str, PerQuery] = {}
        presented: dict[str, np.ndarray] = {}  # the random order's input, found while evaluating the methods
        for m, queries in codes.items():
            methods[m], values[m] = method_block(queries, settings, presented)
        references = _references(codes, values, settings, first_stage, presented)
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


def _evaluate_method(
    queries: dict[str, list[dict]], st: dict[str, Any], presented: dict[str, np.ndarray] | None = None
) -> tuple[dict, PerQuery]:
    """One method's block and per-query values from its validated rows grouped by query
    (:func:`~invarirank.evaluation._method_metrics.method_block` on their codes)."""
    return method_block(codes_of_queries(queries), st, presented)


def _references(
    codes: Codes,
    values: Mapping[str, PerQuery],
    settings: Mapping[str, Any],
    first_stage: Mapping[str, Sequence[str]] | None,
    presented: Mapping[str, np.ndarray] | None = None,
) -> dict:
    """The ``references`` section: the first-stage order (when its rankings are given) and the random order (when
    ``reference_replicates`` > 0), each with its comparisons against every method (:mod:`._references`)."""
    if not codes:
        return {}
    inputs = reference_queries(codes)
    blocks: dict[str, tuple[dict, PerQuery]] = {}
    if first_stage is not None:
        blocks[FIRST_STAGE] = method_block(first_stage_codes(inputs, first_stage), settings)
    if settings["reference_replicates"] > 0:
        blocks[RANDOM] = random_block_of(
            inputs, settings, replicates=settings["reference_replicates"], presented=presented
        )
    out = {}
    for name, (block, pq) in blocks.items():
        out[name] = {**block, "comparisons": reference_comparisons(values, name, pq, settings)}
    return out


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
    compact = _compact_encoder()
    key = json.encoder.encode_basestring  # (what JSONEncoder(ensure_ascii=False).encode does with a string)
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


def _compact_encoder() -> Callable[[Any], str]:
    """``JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode``, its C encoder made once
    for the thousands of per-query objects of a metrics file rather than once an object (where the interpreter has
    it; the same text either way)."""
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - an interpreter without the C accelerator
        return encoder.encode
    one = make({}, encoder.default, json.encoder.encode_basestring, None, ": ", ", ", False, False, False)
    return lambda obj: "".join(one(obj, 0))
