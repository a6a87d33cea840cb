"""Permutation designs: seeded, identity-preserving, 0-based, recorded in the rows; ``random`` is the study's orders."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import invarirank as ir
from invarirank._orders import presented_orders
from invarirank.audit import Design, design_orders
from invarirank.llm._testing import toy_split_queries


def test_random_is_the_studys_presented_orders():
    got = design_orders("u3", 9, Design("random", M=15), seed=42)
    want = presented_orders("u3", 9, 15, 42)
    assert [(o.t, o.key, o.positions) for o in got] == [(o.t, o.key, o.positions) for o in want]
    assert all(o.labels == tuple("ABCDEFGHI") and o.fields == {"design": "random"} for o in got)


@pytest.mark.parametrize("position", [0, 3, -1])
def test_pinned_holds_one_candidate_and_shuffles_the_rest(position):
    orders = design_orders("u1", 7, Design("pinned", M=30, pin_item=2, pin_position=position), seed=5)
    where = position % 7
    assert all(o.positions[where] == 2 and sorted(o.positions) == list(range(7)) for o in orders)
    assert len({o.positions for o in orders}) > 20  # the others really move
    again = design_orders("u1", 7, Design("pinned", M=30, pin_item=2, pin_position=position), seed=5)
    assert again == orders
    assert design_orders("u1", 7, Design("pinned", M=30, pin_item=2, pin_position=position), seed=6) != orders


@pytest.mark.parametrize("k, repeats", [(2, 1), (5, 1), (8, 3)])
def test_sweep_puts_every_candidate_at_every_position_r_times(k, repeats):
    orders = design_orders("q", k, Design("sweep", repeats=repeats), seed=1)
    assert len(orders) == k * repeats and [o.t for o in orders] == list(range(k * repeats))
    grid = np.array([o.positions for o in orders])
    for item in range(k):  # each candidate at each position exactly `repeats` times
        assert Counter(np.nonzero(grid == item)[1].tolist()) == dict.fromkeys(range(k), repeats)


def test_label_swap_permutes_labels_independently_of_positions():
    orders = design_orders("q", 6, Design("label-swap", M=40), seed=3)
    assert [o.positions for o in orders] == [o.positions for o in design_orders("q", 6, Design("random", M=40), seed=3)]
    for o in orders:
        assert sorted(o.labels) == list("ABCDEF") and o.fields["labels"] == list(o.labels)
    assert len({o.labels for o in orders}) > 30
    # independence: the label at position 0 takes every value
    assert {o.labels[0] for o in orders} == set("ABCDEF")


def test_audit_records_the_design_in_the_rows():
    queries = [q for q in toy_split_queries(n_test=2, k=5) if q.split == "test"]
    seen = []

    def by_label(query, presented):
        seen.append(presented.labels)
        order = sorted(range(len(presented)), key=lambda i: presented.labels[i])  # follows the labels only
        return [presented[i].item_id for i in order]

    rows = ir.audit(ir.audit.from_order(by_label, name="labels", uses_labels=True), queries, design="label-swap", M=6)
    assert all(r["design"] == "label-swap" and r["labels"] in [list(x) for x in seen] for r in rows)
    pinned = ir.audit(
        ir.audit.from_order(by_label, name="p"), queries, design="pinned", M=4, pin_item=1, pin_position=2, seed=9
    )
    for r in pinned:
        q = next(q for q in queries if q.query_id == r["query_id"])
        assert r["pin"] == {"item": q.candidates[1].item_id, "position": 2} and r["input"][2] == q.candidates[1].item_id
    sweep = ir.audit(ir.audit.from_order(by_label, name="s"), queries, design="sweep", repeats=2)
    assert len(sweep) == 2 * 5 * 2 and {r["design"] for r in sweep} == {"sweep"}


def test_bad_designs_are_one_line_errors():
    queries = [q for q in toy_split_queries(n_test=1, k=4) if q.split == "test"]
    blind = ir.audit.from_order(lambda q, p: [x.item_id for x in p], name="blind")
    with pytest.raises(ir.InvariRankError, match="label-swap.*blind.*uses_labels"):
        ir.audit(blind, queries, design="label-swap")
    with pytest.raises(ir.InvariRankError, match="design 'nope' is not known"):
        ir.audit(blind, queries, design="nope")
    with pytest.raises(ir.InvariRankError, match="pin_item 9 is not a candidate"):
        ir.audit(blind, queries, design="pinned", pin_item=9)
    with pytest.raises(ir.InvariRankError, match="M = 0"):
        ir.audit(blind, queries, M=0)
