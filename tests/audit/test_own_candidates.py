""" "My candidates, my reranker", as a researcher tries it from the package top: ``Query``, ``Item`` and
``HistoryEntry`` are exported, a history needs no rating (written and read back without one), and an audit of
one's own candidates runs through the project's own scorer and through a callable alike."""

from __future__ import annotations

import json

import invarirank as ir
from invarirank.candidates import read_candidates, write_candidates


def my_queries() -> list[ir.Query]:
    books = [ir.Item(f"b{i}", f"Book {i}", None, ("Fiction",)) for i in range(6)]
    clicked = (ir.HistoryEntry(ir.Item("h1", "Seen Before")), ir.HistoryEntry(ir.Item("h2", "Also Seen"), 4.5))
    return [
        ir.Query("alice", "alice", clicked, tuple(books), ("b3",)),
        ir.Query("bob", "bob", clicked[:1], tuple(reversed(books)), ("b0", "elsewhere")),
    ]


def test_front_door_names_and_a_history_without_ratings_round_trip(tmp_path):
    assert {"Query", "Item", "HistoryEntry", "audit", "rerank"} <= set(ir.__all__)
    queries = my_queries()
    path = tmp_path / "candidates.jsonl"
    write_candidates(path, queries)
    first = json.loads(path.read_text().splitlines()[0])
    assert "rating" not in first["history"][0] and first["history"][1]["rating"] == 4.5
    back = read_candidates(path)
    assert back == queries  # None stays None, 4.5 stays 4.5


def test_an_audit_of_my_candidates_with_a_project_scorer_and_a_callable():
    queries = my_queries()
    scorer = ir.make_scorer("simulated", seed=1)
    rows = ir.audit(
        [
            ir.audit.from_scorer(scorer, "zero_shot"),
            ir.audit.from_order(lambda q, p: sorted(x.item_id for x in p), name="az"),
        ],
        queries,
        M=4,
        seed=1,
    )
    assert len(rows) == 2 * 2 * 4
    metrics = ir.evaluate(rows, n_bootstrap=0, exposure_k=2)
    assert metrics["methods"]["az"]["overall"]["loc"] == 1.0  # sorted by id: the same ranking for every order
    assert metrics["methods"]["zero_shot"]["overall"]["queries"] == 2
