"""``invarirank.audit``: a hidden reranker handed over as an order callable and as a score callable gives the PPI,
GPI, LOC and exposure that the literal evaluator computes from the same presented orders (drawn here straight
from ``invarirank._orders``), and ``from_scorer`` reproduces ``rerank_query``'s rows."""

from __future__ import annotations

import math

import pytest

import invarirank as ir
from invarirank._orders import presented_orders, stable_seed
from invarirank.llm._simulated import SimulatedScorer
from invarirank.llm._testing import toy_split_queries
from tests.support.literal_evaluator import literal_evaluate

M, SEED = 12, 7


def utility(query_id: str, item_id: str) -> float:
    """The hidden reranker's private taste: a fixed pseudo-random number per (query, item)."""
    return (stable_seed("taste", query_id, item_id) % 10_000) / 10_000


def hidden_scores(query, presented):
    """Taste plus a strong primacy bonus: the reranker the audit must see through."""
    k = len(presented)
    return [utility(query.query_id, it.item_id) + 0.6 * (k - i) / k for i, it in enumerate(presented)]


def hidden_order(query, presented):
    scores = hidden_scores(query, presented)
    return [presented[i].item_id for i in sorted(range(len(presented)), key=lambda i: (-scores[i], i))]


@pytest.fixture(scope="module")
def queries():
    return [q for q in toy_split_queries(n_test=6, k=8) if q.split == "test"]


def independent_rows(queries):
    """The rows an outside evaluator would log: today's presented orders, the hidden reranker applied directly."""
    rows = []
    for q in queries:
        for o in presented_orders(q.query_id, q.k, M, SEED):
            presented = [q.candidates[i] for i in o.positions]
            rows.append(
                {
                    "query_id": q.query_id,
                    "method": "hidden",
                    "permutation": o.t,
                    "input": [it.item_id for it in presented],
                    "output": hidden_order(q, presented),
                    "relevant": list(q.ground_truth),
                }
            )
    return rows


def close(a, b):
    if a is None or b is None:
        return a is b
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


@pytest.mark.parametrize("kind", ["order", "scores", "order-batched", "scores-batched"])
def test_a_hidden_reranker_gives_the_independent_evaluators_metrics(queries, kind):
    if kind.startswith("order"):
        fn = hidden_order if kind == "order" else (lambda qs, ps: [hidden_order(q, p) for q, p in zip(qs, ps)])
        reranker = ir.audit.from_order(fn, name="hidden", batched=kind != "order", batch_size=5)
    else:
        fn = hidden_scores if kind == "scores" else (lambda qs, ps: [hidden_scores(q, p) for q, p in zip(qs, ps)])
        reranker = ir.audit.from_scores(fn, name="hidden", batched=kind != "scores", batch_size=5)
    rows = ir.audit(reranker, queries, design="random", M=M, seed=SEED)
    expected_rows = independent_rows(queries)
    assert [(r["input"], r["output"]) for r in rows] == [(r["input"], r["output"]) for r in expected_rows]
    got = ir.evaluate(rows, n_bootstrap=0)["methods"]["hidden"]["overall"]
    want = literal_evaluate(expected_rows)["methods"]["hidden"]["overall"]
    for name in ("ppi", "gpi", "loc", "exposure@5", "exposure_mad@5", "hr@5", "ndcg@10"):
        assert close(got[name], want[name]), (name, got[name], want[name])
    assert got["exposure@5"][0] > 5 / 8 + 0.1  # the primacy bonus is visible: the first position is over-exposed
    assert all(r["repairs"] == {"unknown": 0, "duplicate": 0, "missing": 0} for r in rows)


def test_rows_written_as_a_trec_run_and_imported_give_identical_metrics(queries, tmp_path):
    rows = ir.audit(ir.audit.from_scores(hidden_scores, name="hidden"), queries, M=M, seed=SEED)
    run = ir.audit.write_trec_run(tmp_path / "hidden.run", rows)
    back = ir.audit.read_trec_run(run)
    required = ("query_id", "method", "permutation", "input", "output", "relevant")
    assert [{f: r[f] for f in required} for r in back] == [{f: r[f] for f in required} for r in rows]
    assert ir.evaluate(back, n_bootstrap=50) == ir.evaluate(rows, n_bootstrap=50)


def test_from_scorer_reproduces_rerank_query(queries):
    scorer = SimulatedScorer(seed=3)
    want = [
        r.to_json()
        for q in queries
        for r in ir.rerank_query(scorer, q, methods=["zero_shot", "bootstrapping"], M=5, seed=SEED)
    ]
    got = ir.audit(
        [ir.audit.from_scorer(scorer, "zero_shot"), ir.audit.from_scorer(scorer, "bootstrapping")],
        queries,
        M=5,
        seed=SEED,
    )
    fields = ("query_id", "method", "permutation", "input", "output", "scores", "passes")
    assert [{f: r[f] for f in fields} for r in got] == [{f: r[f] for f in fields} for r in want]


def test_invalid_orders_follow_the_stated_rule_and_are_counted(queries):
    def sloppy(query, presented):  # drops the last candidate, repeats the first, invents one
        ids = [it.item_id for it in presented]
        return [ids[1], ids[0], ids[1], "nonsense", *ids[2:-1]]

    rows = ir.audit(ir.audit.from_order(sloppy, name="sloppy"), queries[:2], M=3, seed=SEED)
    for r in rows:
        assert r["repairs"] == {"unknown": 1, "duplicate": 1, "missing": 1}
        assert r["output"] == [r["input"][1], r["input"][0], *r["input"][2:-1], r["input"][-1]]
    assert ir.audit.repair_totals(rows)["sloppy"] == {
        "rows": 6,
        "repaired_rows": 6,
        "unknown": 6,
        "duplicate": 6,
        "missing": 6,
    }
    with pytest.raises(ir.InvariRankError, match=r"sloppy.*t=0.*1 unknown, 1 duplicate, 1 missing"):
        ir.audit(ir.audit.from_order(sloppy, name="sloppy", on_invalid="error"), queries[:1], M=1)


@pytest.mark.parametrize(
    "answer, message",
    [
        (lambda q, p: [1.0] * (len(p) - 1), r"7 scores of shape \(7,\); expected 8"),
        (lambda q, p: [float("nan")] * len(p), "returned nan for candidate 0"),
        (lambda q, p: "abc", "expected"),
    ],
)
def test_bad_scores_are_refused_with_one_line(queries, answer, message):
    with pytest.raises(ir.InvariRankError, match=message):
        ir.audit(ir.audit.from_scores(answer, name="bad"), queries[:1], M=1)


def test_a_bare_callable_is_refused_with_the_two_ways_to_wrap_it(queries):
    with pytest.raises(ir.InvariRankError, match="from_order.*from_scores"):
        ir.audit(hidden_order, queries)


def test_rerank_reranks_the_order_you_give(queries):
    q = queries[0]
    given = [c.item_id for c in reversed(q.candidates)]
    ranking = ir.rerank(ir.audit.from_scores(hidden_scores, name="hidden"), q, given)
    presented = [next(c for c in q.candidates if c.item_id == x) for x in given]
    assert ranking.output == hidden_order(q, presented)
    assert ranking.scores == pytest.approx(hidden_scores(q, presented))
    scorer = SimulatedScorer(seed=1)
    assert ir.rerank(scorer, q, given).scores == pytest.approx(scorer.score(q, presented).scores.tolist())
    with pytest.raises(ir.InvariRankError, match="not a candidate"):
        ir.rerank(scorer, q, ["nope"])
