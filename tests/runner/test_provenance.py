"""rows_reproduce: stored rows checked against queries by content (ids, order, ground truth), not by hash."""

from __future__ import annotations

import dataclasses

from invarirank._orders import presented_orders
from invarirank.runner._provenance import rows_reproduce
from invarirank.types import Item, Query


def _query(qid="u1", k=5, scores=(5.0, 4.0, 3.0, 2.0, 1.0)):
    return Query(
        query_id=qid,
        user_id=qid,
        history=(),
        candidates=tuple(Item(f"i{j}", f"T{j}") for j in range(k)),
        ground_truth=("i1", "zz"),
        candidate_scores=scores,
    )


def _rows(q, M=4, seed=42):
    return [
        {
            "query_id": q.query_id,
            "method": "zero_shot",
            "permutation": o.t,
            "input": [q.candidates[i].item_id for i in o.positions],
            "relevant": ["zz", "i1"],
        }
        for o in presented_orders(q.query_id, q.k, M, seed)
    ]


def test_rows_of_the_same_candidates_pass_whatever_the_retriever_scores():
    q = _query()
    other_bits = dataclasses.replace(q, candidate_scores=(5.000001, 4.0, 3.0, 2.0, 1.0))
    assert rows_reproduce(_rows(q), {"u1": other_bits}, M=4, seed=42) is None


def test_each_kind_of_difference_is_named():
    q = _query()
    rows = _rows(q)
    swapped = dataclasses.replace(q, candidates=(q.candidates[1], q.candidates[0], *q.candidates[2:]))
    assert "presented order is not" in rows_reproduce(rows, {"u1": swapped}, M=4, seed=42)
    assert "presented order is not" in rows_reproduce(rows, {"u1": q}, M=4, seed=7)
    assert "ground truth" in rows_reproduce(rows, {"u1": dataclasses.replace(q, ground_truth=("i1",))}, M=4, seed=42)
    assert "not among the run's queries" in rows_reproduce(rows, {}, M=4, seed=42)
    assert "no such presented order" in rows_reproduce(rows, {"u1": q}, M=2, seed=42)
