"""Position effects read straight from observations, beyond the exposure metric: the zero-shot exposure skew that
the paper's §5 describes (:func:`exposure_skew`) and a diagnostic of the first input position
(:func:`first_position_effect`).

Conventions: presented (input) positions are 0-based, ``p = 0`` is the candidate written first in the prompt; the
thirds of a list of K are the buckets ``min(floor(3p/K), 2)`` (0 = head, 2 = tail); a row's ``scores`` are aligned
with its ``input`` (the scorer's value of each presented candidate, higher = preferred: the span scorer's mean
log-probability per token of the candidate's text, the choice scorer's log-probability of its label). p-values are
two-sided paired sign-flip p over queries (:func:`._comparisons.sign_flip_p`). Nothing here recomputes a pass: every
number comes from the committed rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._comparisons import sign_flip_p


def _third(p: int, K: int) -> int:
    return min(3 * p // K, 2)


def exposure_skew(rows: Iterable[Mapping[str, Any]], method: str, k: int = 5, skip_first: bool = False) -> dict | None:
    """Does ``method`` give the last third of input positions more top-``k`` exposure than the first third?

    Per query: the share of (row, position) cells of the tail third whose candidate lands in the output top k,
    minus the same share of the head third (without position 0 when ``skip_first``, which tells a first-slot effect
    from a trend across positions). Returns ``{"mean_diff": mean over queries of tail − head, "n", "p"}``; ``None``
    when the method has no row with K > k (every candidate is in the top k)."""
    by_query: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        K = len(row["input"])
        if row["method"] != method or K <= k:
            continue
        top = set(row["output"][:k])
        head = [c in top for p, c in enumerate(row["input"]) if _third(p, K) == 0 and (p > 0 or not skip_first)]
        tail = [c in top for p, c in enumerate(row["input"]) if _third(p, K) == 2]
        if head and tail:
            by_query[row["query_id"]].append(float(np.mean(tail)) - float(np.mean(head)))
    diffs = [float(np.mean(v)) for v in by_query.values()]
    if not diffs:
        return None
    return {"mean_diff": float(np.mean(diffs)), "n": len(diffs), "p": sign_flip_p(diffs)[0]}


def first_position_effect(rows: Sequence[Mapping[str, Any]], method: str, k: int = 5) -> dict | None:
    """How the scorer treats the candidate written first, against the same candidate written elsewhere.

    For each (query, candidate) of ``method``, its **score shift** at position p is its score in a row that shows it
    at p minus the mean of its scores in the query's rows that show it elsewhere: the candidate and the user are
    held fixed, only the slot changes, so a shift is what the slot does to the score. Returns::

        {"K", "n_queries", "shift": [mean shift at p for p = 0..K-1],
         "first_minus_second": mean over queries of (shift at 0 − shift at 1), "p_first": its sign-flip p,
         "rest": (min, max) of the shift over p = 1..K-1,
         "exposure_first": share of rows whose first candidate reaches the output top k,
         "rank_first": mean 0-based output rank of the first candidate,
         "skew": exposure_skew(...), "skew_without_first": exposure_skew(..., skip_first=True)}

    Why: a step at p = 0 alone, with the other positions flat, is a property of the first slot (for the span scorer
    the first candidate follows the prompt's header, not another candidate, so its text is scored in another
    context), not a gradual preference for later positions. ``None`` when the method's rows carry no scores, differ
    in K, or no candidate was seen at two positions."""
    mine = [r for r in rows if r["method"] == method and r.get("scores")]
    if not mine or len({len(r["input"]) for r in mine}) != 1:
        return None
    K = len(mine[0]["input"])
    seen: dict[str, dict[str, list[tuple[int, float]]]] = defaultdict(lambda: defaultdict(list))
    for r in mine:
        for p, (c, s) in enumerate(zip(r["input"], r["scores"])):
            seen[r["query_id"]][c].append((p, float(s)))
    per_query: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q, candidates in seen.items():
        for cells in candidates.values():
            for p, s in cells:
                others = [s2 for p2, s2 in cells if p2 != p]
                if others:
                    per_query[q][p].append(s - float(np.mean(others)))
    by_position = [[x for q in per_query.values() for x in q.get(p, [])] for p in range(K)]
    if K < 2 or not by_position[0] or not by_position[1]:
        return None
    shift = [float(np.mean(v)) if v else float("nan") for v in by_position]
    gaps = [float(np.mean(q[0]) - np.mean(q[1])) for q in per_query.values() if q.get(0) and q.get(1)]
    return {
        "K": K,
        "n_queries": len(per_query),
        "shift": shift,
        "first_minus_second": float(np.mean(gaps)),
        "p_first": sign_flip_p(gaps)[0],
        "rest": (float(np.nanmin(shift[1:])), float(np.nanmax(shift[1:]))),
        "exposure_first": float(np.mean([r["input"][0] in r["output"][:k] for r in mine])),
        "rank_first": float(np.mean([r["output"].index(r["input"][0]) for r in mine])),
        "skew": exposure_skew(mine, method, k),
        "skew_without_first": exposure_skew(mine, method, k, skip_first=True),
    }
