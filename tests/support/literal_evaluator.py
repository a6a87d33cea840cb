"""A literal implementation of the metrics chapter — short, slow, obviously right, written straight from the text.

It is the oracle of ``tests/evaluation/test_*.py`` and the same-run baseline of ``benchmarks/evaluation.py``
(which imports it as ``tests.support.literal_evaluator``; both run from the repository root). It shares no code with
``invarirank.evaluation``: plain Python, no numpy, rows assumed valid (validation is the fast path's job).

``literal_evaluate(rows, ks, exposure_k, buckets)`` returns ``{"methods": {METHOD: {"overall": {...},
"per_query": {QUERY_ID: {...}}}}}`` with the same metric names as ``invarirank.evaluation.evaluate`` (no
``gpi_exact``, no intervals), plus per query ``gpi_mass`` (M·D of the final order, an integer) and ``gpi_order``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from itertools import combinations


def read_rows(path: str) -> list[dict]:
    """JSON Lines → rows (blank lines skipped; no validation)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ------------------------------------------------------------------------------------ effectiveness (per row)


def row_effectiveness(output, relevant, k):
    truth = set(relevant)
    top = output[:k]
    hr = 1.0 if any(x in truth for x in top) else 0.0
    dcg = 0.0
    for r, x in enumerate(output, start=1):
        if r <= k and x in truth:
            dcg += 1.0 / math.log2(r + 1)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(truth), k) + 1))
    rec = len(truth & set(top)) / len(truth)
    mrr = 0.0
    for r, x in enumerate(output, start=1):
        if x in truth:
            mrr = 1.0 / r if r <= k else 0.0
            break
    return {"hr": hr, "ndcg": dcg / idcg, "recall": rec, "mrr": mrr}


# ------------------------------------------------------------------------------------ consistency (per query)


def above(output, i, j):
    return output.index(i) < output.index(j)


def win_counts(rows, items):
    """W[i][j] = number of rows whose output puts i above j (integers)."""
    return {i: {j: sum(1 for r in rows if above(r["output"], i, j)) for j in items if j != i} for i in items}


def literal_ppi(rows, B):
    items = list(rows[0]["input"])
    K = len(items)

    def bucket(p):
        return min(math.floor(p * B / K), B - 1)

    values = []
    for i, j in combinations(items, 2):
        cells = {}
        for r in rows:
            cell = (bucket(r["input"].index(i)), bucket(r["input"].index(j)))
            n, w = cells.get(cell, (0, 0))
            cells[cell] = (n + 1, w + (1 if above(r["output"], i, j) else 0))
        if len(cells) < 2:
            continue
        rates = [w / n for n, w in cells.values()]
        values.append(max(rates) - min(rates))
    return sum(values) / len(values) if values else None


def contradiction(order, W):
    """M·D(σ): for every pair placed a above b, the rows that put b above a."""
    return sum(W[order[b]][order[a]] for a in range(len(order)) for b in range(a + 1, len(order)))


def literal_local_search(items, W):
    """GPI's search on integer win counts ``W[i][j]``: returns (M·D of the final order, the final order)."""
    K = len(items)
    score = {i: sum(W[i][j] for j in items if j != i) for i in items}
    order = sorted(items, key=lambda i: (-score[i], i))  # descending win score, ties by code-point id
    current = contradiction(order, W)
    while True:
        best, best_swap = current, None
        for a in range(K):
            for b in range(a + 1, K):
                cand = list(order)
                cand[a], cand[b] = cand[b], cand[a]
                d = contradiction(cand, W)
                if d < best:  # strictly lower: the first best in scan order wins
                    best, best_swap = d, (a, b)
        if best_swap is None:
            return current, order
        a, b = best_swap
        order[a], order[b] = order[b], order[a]
        current = best


def literal_gpi(rows):
    items = list(rows[0]["input"])
    K, M = len(items), len(rows)
    if M < 2 or K < 2:
        return None, None, None
    mass, order = literal_local_search(items, win_counts(rows, items))
    return mass / (M * (K * (K - 1) // 2)), mass, order


def kendall_tau(x, y):
    items = list(x)
    disc = sum(1 for i, j in combinations(items, 2) if above(x, i, j) != above(y, i, j))
    pairs = len(items) * (len(items) - 1) // 2
    return 1 - 2 * disc / pairs


def literal_loc(rows):
    K, M = len(rows[0]["input"]), len(rows)
    if M < 2 or K < 2:
        return None
    taus = [kendall_tau(rows[t]["output"], rows[u]["output"]) for t, u in combinations(range(M), 2)]
    return sum(taus) / len(taus)


def loc_identity(rows):
    """(M · mean_{i<j} (2 q(i, j) - 1)^2 - 1) / (M - 1), exact (Fractions)."""
    items, M = list(rows[0]["input"]), len(rows)
    W = win_counts(rows, items)
    terms = [(2 * Fraction(W[i][j], M) - 1) ** 2 for i, j in combinations(items, 2)]
    return (M * sum(terms) / len(terms) - 1) / (M - 1)


# ------------------------------------------------------------------------------------ the whole evaluation


def literal_evaluate(rows, ks=(1, 5, 10), exposure_k=5, buckets=3):
    methods = {}
    for row in rows:
        methods.setdefault(row["method"], {}).setdefault(str(row["query_id"]), []).append(row)
    result = {}
    for method, queries in methods.items():
        per_query = {}
        all_rows_eff = {f"{m}@{k}": [] for m in ("hr", "ndcg", "recall", "mrr") for k in ks}
        for qid, qrows in queries.items():
            d = {}
            for k in ks:
                effs = [row_effectiveness(r["output"], r["relevant"], k) for r in qrows]
                for m in ("hr", "ndcg", "recall", "mrr"):
                    vals = [e[m] for e in effs]
                    all_rows_eff[f"{m}@{k}"].extend(vals)
                    d[f"{m}@{k}"] = sum(vals) / len(vals)
            d["ppi"] = literal_ppi(qrows, buckets)
            d["gpi"], d["gpi_mass"], d["gpi_order"] = literal_gpi(qrows)
            d["loc"] = literal_loc(qrows)
            per_query[qid] = d
        overall = {name: sum(v) / len(v) for name, v in all_rows_eff.items()}
        for name in ("ppi", "gpi", "loc"):
            vals = [d[name] for d in per_query.values() if d[name] is not None]
            overall[name] = sum(vals) / len(vals) if vals else None
        # exposure, pooled over every row with K > p
        all_rows = [r for qrows in queries.values() for r in qrows]
        max_k = max(len(r["input"]) for r in all_rows)
        exposure, expected = [], []
        for p in range(max_k):
            eligible = [r for r in all_rows if len(r["input"]) > p]
            exposure.append(sum(1 for r in eligible if r["input"][p] in r["output"][:exposure_k]) / len(eligible))
            expected.append(sum(min(exposure_k, len(r["input"])) / len(r["input"]) for r in eligible) / len(eligible))
        dev = [abs(e - x) for e, x in zip(exposure, expected)]
        overall[f"exposure@{exposure_k}"] = exposure
        overall[f"expected_exposure@{exposure_k}"] = expected
        # not defined when every list fits in the top-k (every item reaches it: no position can be favoured)
        defined = max_k > exposure_k
        overall[f"exposure_mad@{exposure_k}"] = sum(dev) / len(dev) if defined else None
        overall[f"exposure_maxdev@{exposure_k}"] = max(dev) if defined else None
        overall["queries"] = len(queries)
        overall["rows"] = len(all_rows)
        result[method] = {"overall": overall, "per_query": per_query}
    return {"methods": result}
