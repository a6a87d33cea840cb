"""First stage: top-K with exclusion of seen items, tie-break, coverage filter, metrics, output files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from invarirank.candidates import read_candidates
from invarirank.retrieval import retrieval_metrics, retrieve
from invarirank.retrieval._candidates import top_k_row, top_k_unseen
from tests.retrieval.test_helpers import synthetic_interactions, write_prepared


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))


def test_top_k_row_orders_by_score_then_lower_index():
    s = np.array([1.0, 3.0, 2.0, 3.0, -np.inf, 2.0, 0.5])
    assert top_k_row(s, 4).tolist() == [1, 3, 2, 5]
    # ties straddling the cut keep the lower indices
    assert top_k_row(np.array([1.0, 1.0, 1.0, 1.0]), 2).tolist() == [0, 1]
    # fewer finite entries than k: only those come back, -inf never does
    assert top_k_row(np.array([-np.inf, 2.0, -np.inf]), 3).tolist() == [1]


def test_top_k_unseen_never_returns_excluded_items():
    rng = np.random.default_rng(1)
    U, V = rng.normal(size=(5, 4)), rng.normal(size=(40, 4))
    excl = [rng.choice(40, size=n, replace=False) for n in (0, 5, 20, 35, 39)]
    tops, scores = top_k_unseen(U, V, [0, 1, 2, 3, 4], excl, k=10, chunk=2)
    for u, (top, sc, ex) in enumerate(zip(tops, scores, excl)):
        assert not set(top.tolist()) & set(ex.tolist())
        assert len(top) == min(10, 40 - len(ex))
        full = U[u] @ V.T
        full[ex] = -np.inf
        expect = np.lexsort((np.arange(40), -full))[: len(top)]
        assert top.tolist() == expect.tolist()
        assert np.allclose(sc, full[top])


def _handmade(folder: Path) -> Path:
    """Popularity by training positives: item 1 (4 users) > 2 (3) > 3 (2) > 5 (1) > 4, 6 (0).

    User 1 saw item 1 in train and item 2 in validation; test target item 4, validation target item 2.
    Its queries' ``exclude`` lists also name item 3 for the test query (honoured as given)."""
    rows = [
        ("1", "1", 5, 1, "train"),
        ("1", "6", 2, 2, "train"),
        ("1", "2", 5, 3, "validation"),
        ("1", "4", 5, 4, "test"),
        ("1", "5", 4, 5, "test"),
    ]
    for u in ("2", "3", "4"):
        rows += [(u, "1", 5, 1, "train"), (u, "2", 4, 2, "train")]
    rows += [
        ("2", "3", 5, 3, "train"),
        ("3", "3", 5, 3, "train"),
        ("4", "5", 5, 3, "train"),
        ("2", "6", 5, 4, "validation"),
        ("2", "4", 5, 5, "test"),
        ("3", "6", 5, 4, "validation"),
        ("3", "5", 5, 5, "test"),
        ("4", "6", 1, 4, "validation"),
        ("4", "4", 5, 5, "test"),
    ]
    queries = [
        {
            "query_id": "u1",
            "user_id": "1",
            "split": "test",
            "history_item_ids": ["2", "6", "1"],
            "history_ratings": [5.0, 2.0, 5.0],
            "ground_truth": ["4", "5"],
            "exclude": ["1", "2", "3", "6"],
        },
        {
            "query_id": "u2",
            "user_id": "2",
            "split": "test",
            "history_item_ids": ["6", "3", "2", "1"],
            "history_ratings": [5.0, 5.0, 4.0, 5.0],
            "ground_truth": ["4"],
            "exclude": ["1", "2", "3", "6"],
        },
        {
            "query_id": "u3",
            "user_id": "3",
            "split": "test",
            "history_item_ids": ["6", "3", "2", "1"],
            "history_ratings": [5.0, 5.0, 4.0, 5.0],
            "ground_truth": ["5"],
            "exclude": ["1", "2", "3", "6"],
        },
        {
            "query_id": "v1",
            "user_id": "1",
            "split": "validation",
            "history_item_ids": ["6", "1"],
            "history_ratings": [2.0, 5.0],
            "ground_truth": ["2"],
            "exclude": ["1", "6"],
        },
        {
            "query_id": "v2",
            "user_id": "2",
            "split": "validation",
            "history_item_ids": ["3", "2", "1"],
            "history_ratings": [5.0, 4.0, 5.0],
            "ground_truth": ["6"],
            "exclude": ["1", "2", "3"],
        },
    ]
    return write_prepared(folder, rows, queries=queries)


def test_candidates_exclude_train_and_validation_items(tmp_path):
    res = retrieve(_handmade(tmp_path / "d"), "popularity", k=2, out=tmp_path / "out", progress=False)
    by_id = {q.query_id: q for q in res.test + res.validation}
    # test query u1: train (1, 6), validation (2) and the listed item 3 are never candidates
    assert [c.item_id for c in by_id["u1"].candidates] == ["5", "4"]
    # validation query v1 excludes only train items: its validation item 2 is the top candidate
    assert [c.item_id for c in by_id["v1"].candidates] == ["2", "3"]
    for q in res.test + res.validation:
        assert len(q.candidates) == 2
        assert not {c.item_id for c in q.candidates} & {h.item.item_id for h in q.history}


def test_coverage_filter_drops_queries_without_a_hit_and_never_injects(tmp_path):
    res = retrieve(_handmade(tmp_path / "d"), "popularity", k=1, out=tmp_path / "out", progress=False)
    # K = 1: every test query's unseen items are 4 and 5; popularity puts 5 first:
    # u1 (targets 4, 5) hit, u2 (target 4) miss, u3 (target 5) hit -- recomputed below from the counts
    counts = {"1": 4, "2": 3, "3": 2, "5": 1, "4": 0, "6": 0}
    seen = {"u1": {"1", "2", "3", "6"}, "u2": {"1", "2", "3", "6"}, "u3": {"1", "2", "3", "6"}}
    gts = {"u1": {"4", "5"}, "u2": {"4"}, "u3": {"5"}}
    expect_kept = []
    for qid in ("u1", "u2", "u3"):
        unseen = sorted((i for i in counts if i not in seen[qid]), key=lambda i: (-counts[i], int(i)))
        if set(unseen[:1]) & gts[qid]:
            expect_kept.append(qid)
    assert [q.query_id for q in res.test] == expect_kept == ["u1", "u3"]
    assert res.stats["queries_kept"] == 2 and res.stats["queries_dropped"] == 1
    assert res.stats["test_queries"] == 3
    assert res.stats["coverage@15"] == 1.0  # every test query has a hit among its (two) unseen items
    for q in res.test:
        assert [c.item_id for c in q.candidates] == ["5"]  # the raw top-1, no relevant item injected
    assert res.stats["validation"]["queries_kept"] + res.stats["validation"]["queries_dropped"] == 2


def test_candidates_file_holds_test_then_validation_with_text_and_scores(tmp_path):
    res = retrieve(_handmade(tmp_path / "d"), "popularity", k=2, out=tmp_path / "out", progress=False)
    lines = (tmp_path / "out" / "candidates.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    assert all(r["schema_version"] == 1 for r in rows)
    splits = [r["split"] for r in rows]
    assert splits == sorted(splits, key=lambda s: s != "test")
    assert rows[0]["query_id"] == "u1"
    cand = rows[0]["candidates"][0]
    assert cand == {"item_id": "5", "title": "Movie 5", "year": 1995, "genres": ["Drama"], "score": 1.0}
    assert [h["item_id"] for h in rows[0]["history"]] == ["2", "6", "1"]
    assert rows[0]["ground_truth"] == ["4", "5"]
    back = read_candidates(tmp_path / "out" / "candidates.jsonl")
    assert [q.query_id for q in back] == [q.query_id for q in res.test + res.validation]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    for k in (15, 25, 50):
        for m in ("coverage", "recall", "hr", "ndcg"):
            assert 0.0 <= stats[f"{m}@{k}"] <= 1.0
    assert {"queries_kept", "queries_dropped", "train_seconds", "loss_curve"} <= set(stats)


def test_retrieval_metrics_known_values():
    retrieved = [["a", "b", "c"], ["x", "y", "z"]]
    truth = [["b", "q"], ["q"]]
    m = retrieval_metrics(retrieved, truth, ks=(1, 2))
    assert m["hr@1"] == 0.0 and m["hr@2"] == 0.5 and m["coverage@2"] == 0.5
    assert m["recall@2"] == pytest.approx((1 / 2) / 2)
    ideal = 1 + 1 / math.log2(3)
    assert m["ndcg@2"] == pytest.approx((1 / math.log2(3)) / ideal / 2)


def test_candidates_are_cached_and_identical(tmp_path):
    folder = write_prepared(tmp_path / "d", synthetic_interactions())
    a = retrieve(folder, "popularity", k=3, progress=False)
    first = (a.out_dir / "candidates.jsonl").read_bytes()
    b = retrieve(folder, "popularity", k=3, progress=False)
    assert b.candidates_cached and b.out_dir == a.out_dir
    assert (b.out_dir / "candidates.jsonl").read_bytes() == first
    c = retrieve(folder, "popularity", k=3, progress=False, force=True)
    assert not c.candidates_cached
    assert (c.out_dir / "candidates.jsonl").read_bytes() == first
    assert str(a.out_dir).startswith(str(tmp_path / "cache" / "retrieval"))
