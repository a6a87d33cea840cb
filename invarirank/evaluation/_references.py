"""Reference rows beside the methods: the first stage's own order and a uniformly random order.

A method's numbers mean little without a scale: HR@5 on queries that were *sampled* among those whose first stage
already holds a relevant candidate in its top few is high for any ranking, and a PPI of 0.4 is only good or bad
against what a ranker that ignores the candidates would give at the same K, M and buckets. The two references:

* ``first_stage`` — the retriever's own ranking of the same candidates, written as the output of every presented
  order of the query (the rows of the run's first method give the orders). Its consistency is perfect by
  construction (PPI = 0, GPI = 0, LOC = 1: the output never depends on the presented order); its effectiveness is
  what reranking must beat. The orders come from the run's ``first_stage.jsonl.gz`` (one line per query:
  ``{"query_id": ..., "ranking": [item ids, best first]}``, written from the candidates file, no scorer pass).
* ``random`` — a ranker whose output is a uniformly random permutation of the candidates, independent of the
  presented order. HR@k, nDCG@k, recall@k and MRR@k are its **exact** expectations per query (g relevant
  candidates among K, ground truth of n ids, k' = min(k, K)):

  - HR@k = 1 - C(K - g, k') / C(K, k'),
  - nDCG@k = (g / K) * sum_{i=1..k'} 1 / log2(i + 1) / IDCG(n, k),
  - recall@k = g k' / (K n),
  - MRR@k = sum_{r=1..k'} (1 / r) C(K - r, g - 1) / C(K, g);

  PPI (on the query's own presented orders and buckets) and LOC (= 0) are exact expectations too. GPI is the exact
  expectation of a lower bound plus the local search's mean excess over it in max(R, ceil(R Q / 20)) draws of M
  random outputs at each K and M of Q queries (R = ``replicates``), seeded from ``(seed, K, M)``
  (:mod:`._random_reference`): the same observations and settings give the same numbers, and queries of the same K
  and M the same GPI. With the bound as control variate this is about as precise as R independent draws per query
  (the excess's variance is 1/22 to 1/31 of GPI's at M = 20), at the cost of one local search per 20 queries and
  replicate: for R = 20, about one method's evaluation.

Each reference block has the shape of a method's block (``overall`` with ``ci``, ``per_query``) plus
``comparisons``: every method against the reference, paired over queries, differences *method - reference*
(:func:`invarirank.evaluation.compare_methods`; the records of ``metrics.json``'s ``comparisons``).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_text
from ..errors import InvariRankError
from ._codes import QueryRows, codes_of_queries, stacked_positions
from ._comparisons import PerQuery, compare_methods
from ._effectiveness import ideal_dcg
from ._random_reference import expected_gpi, expected_ppi
from ._ratio_intervals import ratio_intervals

FIRST_STAGE = "first_stage"
RANDOM = "random"
#: the random order's replicates (``settings["reference_replicates"]``; 0: no random order)
REFERENCE_REPLICATES = 20
#: the random order's GPI at a (K, M) of Q queries averages max(R, ceil(R Q / 20)) draws of M outputs (R = the
#: replicates): as precise as R draws per query without the bound as control variate (module random_reference)
RANDOM_GPI_QUERIES_PER_DRAW = 20
#: the file of a run folder holding the first stage's rankings
FIRST_STAGE_FILE = "first_stage.jsonl.gz"


def random_expectations(K: int, g: int, n_relevant: int, ks: Sequence[int]) -> dict[str, float]:
    """Exact expected HR@k, nDCG@k, recall@k and MRR@k of a uniformly random ranking of ``K`` candidates of which
    ``g`` are relevant, for a ground truth of ``n_relevant`` ids (the formulas of the module docstring)."""
    return dict(_random_expectations(K, g, n_relevant, tuple(ks)))


@functools.lru_cache(maxsize=4096)
def _random_expectations(K: int, g: int, n_relevant: int, ks: tuple[int, ...]) -> dict[str, float]:
    if not 0 <= g <= K or n_relevant < max(g, 1):
        raise InvariRankError(
            f"random reference: expected 0 <= g <= K and n_relevant >= max(g, 1), got K={K}, "
            f"g={g}, n_relevant={n_relevant}"
        )
    out: dict[str, float] = {}
    for k in ks:
        kk = min(k, K)
        out[f"hr@{k}"] = 1.0 - math.comb(K - g, kk) / math.comb(K, kk) if g else 0.0
    for k in ks:
        kk = min(k, K)
        out[f"ndcg@{k}"] = (g / K) * sum(1.0 / math.log2(i + 1) for i in range(1, kk + 1)) / ideal_dcg(n_relevant, k)
    for k in ks:
        out[f"recall@{k}"] = g * min(k, K) / (K * n_relevant)
    for k in ks:
        kk = min(k, K)
        out[f"mrr@{k}"] = (sum(math.comb(K - r, g - 1) / r for r in range(1, kk + 1)) / math.comb(K, g)) if g else 0.0
    return out


def reference_inputs(grouped: Mapping[str, Mapping[str, list[dict]]]) -> dict[str, list[dict]]:
    """The rows whose presented orders the references take: per query, those of the first method (in method
    order) that holds the query."""
    out: dict[str, list[dict]] = {}
    for queries in grouped.values():
        for qid, rows in queries.items():
            out.setdefault(qid, rows)
    return out


def first_stage_codes(inputs: Mapping[str, QueryRows], rankings: Mapping[str, Sequence[str]]) -> dict[str, QueryRows]:
    """The first-stage order as codes: each presented order of each query (``inputs``, from
    :func:`~invarirank.evaluation._codes.reference_queries`) with the first stage's ranking as its output. A query
    without a ranking, or a ranking that is not a permutation of the query's candidates, is an error naming the
    query."""
    out: dict[str, QueryRows] = {}
    for qid, q in inputs.items():
        if qid not in rankings:
            raise InvariRankError(f"first-stage order: no ranking for query {qid!r}")
        given = rankings[qid]
        # a string is iterable too: "0123" would read as the ids "0", "1", ... (ids are read as the observations'
        # are: strings, or integers as their decimal string)
        if (
            isinstance(given, (str, bytes))
            or not isinstance(given, Sequence)
            or not all(
                (isinstance(x, str) and x) or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))
                for x in given
            )
        ):
            raise InvariRankError(
                f"first-stage order of query {qid!r}: {str(given)[:40]!r}, expected a list of item ids (best first)"
            )
        ranking = [str(x) for x in given]
        if sorted(ranking) != q.items:
            raise InvariRankError(
                f"first-stage order of query {qid!r}: expected a permutation of its "
                f"{len(q.items)} candidates, got {len(ranking)} ids that differ"
            )
        index = {x: i for i, x in enumerate(q.items)}
        order = np.array([index[x] for x in ranking], dtype=q.out.dtype)
        out[qid] = q._replace(out=np.broadcast_to(order, q.out.shape))
    return out


def random_block(
    inputs: Mapping[str, list[dict]],
    settings: Mapping[str, Any],
    *,
    replicates: int,
    presented: Mapping[str, np.ndarray] | None = None,
) -> tuple[dict, PerQuery]:
    """:func:`random_block_of` on validated rows grouped by query (:func:`reference_inputs`)."""
    return random_block_of(codes_of_queries(inputs), settings, replicates=replicates, presented=presented)


def random_block_of(
    inputs: Mapping[str, QueryRows],
    settings: Mapping[str, Any],
    *,
    replicates: int,
    presented: Mapping[str, np.ndarray] | None = None,
) -> tuple[dict, PerQuery]:
    """The random order's block and its per-query values: exact effectiveness, PPI and LOC, and GPI at each (K, M)
    from seeded draws (``settings["seed"]``; the module docstring says how many). ``inputs``: the rows of each
    query the references take, as codes. ``presented``: the queries' presented positions (M x K, items labelled in
    the order of the query's first row) when already known (the engine finds them while evaluating the methods);
    otherwise they are made from ``inputs``."""
    if replicates < 1:
        raise InvariRankError(f"reference replicates: expected an integer >= 1, got {replicates!r}")
    ks = settings["ks"]
    qids = list(inputs)
    consistency = {name: np.full(len(qids), np.nan) for name in ("ppi", "gpi", "loc")}
    shapes = [(inputs[q].inp.shape[1], inputs[q].inp.shape[0]) for q in qids]  # (K, M)
    for K, M in sorted(set(shapes)):
        group = [i for i, s in enumerate(shapes) if s == (K, M)]
        if presented is not None and all(qids[i] in presented for i in group):
            positions = np.stack([presented[qids[i]] for i in group])
        else:
            positions = stacked_positions([inputs[qids[i]] for i in group])
        consistency["ppi"][group] = expected_ppi(positions, settings["buckets"])
        if K >= 2 and M >= 2:
            draws = max(replicates, -(-replicates * len(group) // RANDOM_GPI_QUERIES_PER_DRAW))
            consistency["gpi"][group] = expected_gpi(K, M, draws, settings["seed"])
            consistency["loc"][group] = 0.0
    values: dict[str, np.ndarray] = {}
    kinds: dict[tuple[int, int, int], int] = {}  # (K, g, n_relevant) -> its index among the distinct ones
    keys = [(inputs[q].inp.shape[1], len(inputs[q].relevant), inputs[q].n_relevant) for q in qids]
    kind = np.array([kinds.setdefault(key, len(kinds)) for key in keys])
    eff = [random_expectations(*key, ks) for key in kinds]
    for name in eff[0]:
        values[name] = np.array([e[name] for e in eff])[kind]
    values.update(consistency)
    n_rows = np.array([inputs[q].inp.shape[0] for q in qids], dtype=np.float64)
    names = [*values, "rows", "candidates"]
    columns_q = [[None if x != x else x for x in v.tolist()] for v in values.values()]  # NaN: None
    columns_q += [[M for _, M in shapes], [K for K, _ in shapes]]
    per_query: dict[str, dict[str, Any]] = {q: dict(zip(names, row)) for q, row in zip(qids, zip(*columns_q))}
    overall: dict[str, Any] = {}
    columns: list[np.ndarray] = [n_rows]
    ratios: dict[str, tuple[int, int]] = {}  # name -> (numerator, denominator) columns
    for name, v in values.items():
        has = ~np.isnan(v)
        if name in consistency:
            overall[name] = float(v[has].mean()) if has.any() else None
            columns += [np.where(has, v, 0.0), has.astype(np.float64)]
            ratios[name] = (len(columns) - 2, len(columns) - 1)
        else:
            overall[name] = float((v * n_rows).sum() / n_rows.sum())
            columns.append(v * n_rows)
            ratios[name] = (len(columns) - 1, 0)
    overall["queries"], overall["rows"] = len(qids), int(n_rows.sum())
    ci: dict[str, list[float]] = {}
    if settings["bootstrap"] > 0:
        intervals, _ = ratio_intervals(
            len(qids), settings["bootstrap"], settings["seed"], np.column_stack(columns), ratios, settings["ci_level"]
        )
        for name, interval in intervals.items():
            if interval is not None and overall.get(name) is not None:
                ci[name] = interval
    overall["ci"] = ci
    return {"overall": overall, "per_query": per_query}, PerQuery(tuple(qids), values, None)


def reference_comparisons(
    methods: Mapping[str, PerQuery], reference: str, values: PerQuery, settings: Mapping[str, Any]
) -> dict:
    """Every method against ``reference``, paired over queries: ``{metric: {method: record}}`` with differences
    method - reference (the records of :func:`invarirank.evaluation.compare_methods`)."""
    if settings["permutations"] <= 0 or not methods:
        return {}
    out: dict[str, dict] = {}
    for m, pq in methods.items():
        both = compare_methods(
            {m: pq, reference: values},
            seed=settings["seed"],
            n_bootstrap=settings["bootstrap"],
            n_permutations=settings["permutations"],
            ci_level=settings["ci_level"],
        )
        for metric, table in both.items():
            rec = (table.get(m) or {}).get(reference)
            if rec is not None:
                out.setdefault(metric, {})[m] = rec
    return out


def write_first_stage(path: str | os.PathLike, rankings: Mapping[str, Sequence[str]]) -> None:
    """Write ``first_stage.jsonl.gz`` (query order kept; deterministic gzip, written atomically)."""
    text = "".join(
        json.dumps({"query_id": q, "ranking": list(r)}, ensure_ascii=False) + "\n" for q, r in rankings.items()
    )
    atomic_write_text(path, text, compress=str(path).endswith(".gz"))


def read_first_stage(path: str | os.PathLike) -> dict[str, list[str]]:
    """``first_stage.jsonl(.gz)``: query id -> the first stage's ranking (item ids, best first). Errors name the
    file and line."""
    p = Path(path)
    try:
        raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InvariRankError(f"{p}: unreadable first-stage file ({exc})") from None
    out: dict[str, list[str]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except ValueError as exc:
            raise InvariRankError(f"{p}:{n}: not JSON ({exc})") from None
        if (
            not isinstance(d, dict)
            or set(d) != {"query_id", "ranking"}
            or not isinstance(d["query_id"], str)
            or not isinstance(d["ranking"], list)
            or not all(isinstance(x, str) for x in d["ranking"])
        ):
            raise InvariRankError(f'{p}:{n}: expected {{"query_id": str, "ranking": [str, ...]}}')
        if d["query_id"] in out:
            raise InvariRankError(f"{p}:{n}: query {d['query_id']!r} appears twice")
        out[d["query_id"]] = d["ranking"]
    return out
