"""The ``label-swap`` design with a project scorer: ``from_scorer`` of the choice scorer (which writes labels)
reads the presentation's labels, every pass of a method writes the position's label, and the rows' scores are the
scorer's on the labelled order; the design's ``random`` rows stay the default computation; the span and
simulated scorers, which write no labels, are refused with one line (tiny random-weight models, CPU)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import invarirank as ir  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._simulated import SimulatedScorer  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import tiny_model, toy_query, train_tokenizer  # noqa: E402
from invarirank.types import LabelledOrder, labels_of  # noqa: E402


@pytest.fixture(scope="module")
def lm():
    return tiny_model("llama", train_tokenizer("bytelevel"), seed=3)


@pytest.fixture(scope="module")
def queries():
    return [toy_query(k=5, history=6, seed=s, query_id=f"u{s}") for s in (1, 2)]


def test_choice_scorer_runs_the_label_swap_design(lm, queries):
    sc = ChoiceScorer(lm, pass_cache=False)
    assert ir.audit.from_scorer(sc).uses_labels
    rows = ir.audit(ir.audit.from_scorer(sc), queries, design="label-swap", M=4, seed=7)
    assert len(rows) == 8 and any(r["labels"] != list("ABCDE") for r in rows)
    by_id = {q.query_id: {c.item_id: c for c in q.candidates} for q in queries}
    for r in rows:
        q = next(q for q in queries if q.query_id == r["query_id"])
        items = [by_id[q.query_id][x] for x in r["input"]]
        want = sc.score(q, LabelledOrder(items, r["labels"])).scores
        assert np.allclose(r["scores"], want, atol=1e-5)  # the scores follow the labels written
    plain = ir.audit(ir.audit.from_scorer(sc), queries, design="random", M=4, seed=7)
    for r, s in zip(plain, rows):  # the same orders: only the labels differ
        assert r["input"] == s["input"]
        q = next(q for q in queries if q.query_id == r["query_id"])
        items = [by_id[q.query_id][x] for x in r["input"]]
        assert np.array_equal(np.float32(r["scores"]), sc.score(q, items).scores)


def test_a_method_keeps_the_labels_of_the_positions(lm, queries, monkeypatch):
    sc = ChoiceScorer(lm, pass_cache=False)
    seen: list = []
    scored = sc.score_requests

    def spy(requests):
        seen.extend(labels_of(presented) for _, presented in requests)
        return scored(requests)

    monkeypatch.setattr(sc, "score_requests", spy)
    (row,) = ir.audit(ir.audit.from_scorer(sc, "bootstrapping"), queries[:1], design="label-swap", M=1, seed=7)
    # every reshuffled pass of the method writes the order's label at each position
    assert row["passes"] > 1 and row["labels"] != list("ABCDE")
    assert len(seen) == row["passes"] and set(seen) == {tuple(row["labels"])}


@pytest.mark.parametrize("make", [lambda lm: SpanScorer(lm, pass_cache=False), lambda lm: SimulatedScorer()])
def test_scorers_that_write_no_labels_are_refused(lm, queries, make):
    reranker = ir.audit.from_scorer(make(lm))
    assert not reranker.uses_labels
    with pytest.raises(ir.InvariRankError, match="label-swap.*does not read them.*only the choice scorer"):
        ir.audit(reranker, queries, design="label-swap", M=2)
