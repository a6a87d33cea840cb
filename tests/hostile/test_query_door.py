"""Hostile input, round 4 (issue 39) F2 and F7 at the Python front door: a ``Query`` built in Python is held to the
candidates file's rules before any pass (repeated or empty candidate ids, no candidates or no relevant id, lone
surrogates, objects that are not items), and ``model``, ``dataset`` and ``on_order`` are checked — one
``InvariRankError`` naming the function, the query and the field, never silently wrong rows, a ``TypeError``
from inside or a ``UnicodeEncodeError`` when the rows are written. One row per case."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import invarirank as ir
from invarirank.llm._testing import toy_split_queries
from invarirank.runner.rerank import rerank_window

QUERY = next(q for q in toy_split_queries() if q.split == "test")
FIRST = QUERY.candidates[0]


def _with(**fields):
    return dataclasses.replace(QUERY, **fields)


# (id, query, keyword arguments, fragments)
CASES = [
    ("repeated-candidate", _with(candidates=(FIRST, *QUERY.candidates)), {}, ["repeats item_id", repr(FIRST.item_id)]),
    ("no-candidates", _with(candidates=()), {}, ["'candidates' is empty"]),
    ("no-relevant-id", _with(ground_truth=()), {}, ["'ground_truth' is empty"]),
    ("surrogate-query-id", _with(query_id="u\udc80"), {}, ["'query_id'", "lone surrogate"]),
    ("surrogate-user-id", _with(user_id="\ud800"), {}, ["'user_id'", "lone surrogate"]),
    (
        "surrogate-title",
        _with(candidates=(dataclasses.replace(FIRST, title="x\ud800"), *QUERY.candidates[1:])),
        {},
        ["'candidates[0].title'", "lone surrogate"],
    ),
    (
        "empty-item-id",
        _with(candidates=(dataclasses.replace(FIRST, item_id=""), *QUERY.candidates[1:])),
        {},
        ["candidates[0].item_id"],
    ),
    ("string-candidate", _with(candidates=("a", *QUERY.candidates[1:])), {}, ["Item candidates"]),
    ("model-not-text", QUERY, {"model": 3}, ["model = 3"]),
    ("dataset-none", QUERY, {"dataset": None}, ["dataset = None"]),
    ("on-order-not-callable", QUERY, {"on_order": 5}, ["on_order = 5"]),
]


@pytest.mark.parametrize("case,query,kwargs,needles", CASES, ids=[c[0] for c in CASES])
def test_rerank_query_checks_the_query_at_the_door(case, query, kwargs, needles):
    scorer = ir.make_scorer("simulated")
    with pytest.raises(ir.InvariRankError) as err:
        ir.rerank_query(scorer, query, M=2, methods=["zero_shot"], **kwargs)
    message = str(err.value)
    assert message.startswith("rerank_query: "), message
    for needle in needles:
        assert needle in message, (needle, message)


def test_rerank_window_checks_every_query():
    bad = _with(query_id="v1", candidates=(FIRST, FIRST))
    with pytest.raises(ir.InvariRankError, match=r"rerank_window: query 'v1': field 'candidates' repeats"):
        rerank_window(ir.make_scorer("simulated"), [QUERY, bad], M=2, methods=["zero_shot"])


def test_a_valid_query_with_numpy_text_gives_the_rows_of_plain_text():
    scorer = ir.make_scorer("simulated")
    plain = ir.rerank_query(scorer, QUERY, M=3, methods=["zero_shot"])
    numpy_ids = _with(query_id=np.str_(QUERY.query_id))
    assert [r.output for r in ir.rerank_query(scorer, numpy_ids, M=3, methods=["zero_shot"])] == [
        r.output for r in plain
    ]


def _rows():
    scorer = ir.make_scorer("simulated")
    tests = [q for q in toy_split_queries() if q.split == "test"]
    return tests, [r for q in tests for r in ir.rerank_query(scorer, q, M=2, methods=["zero_shot"])]


def _first_stage(tests, **override):
    return {**{q.query_id: [c.item_id for c in q.candidates] for q in tests}, **override}


# (id, call(tests, rows), fragments): evaluate's and write_observations' other arguments
ARGUMENTS = [
    ("first-stage-not-a-path", lambda t, r: ir.evaluate(r, n_bootstrap=0, first_stage=[1]), ["first_stage = [1]"]),
    (  # a string is iterable: its characters would pass for single-character ids
        "first-stage-ranking-a-string",
        lambda t, r: ir.evaluate(r, n_bootstrap=0, first_stage=_first_stage(t, u0="".join(_first_stage(t)["u0"]))),
        ["query 'u0'", "expected a list of item ids"],
    ),
    (
        "first-stage-ranking-none",
        lambda t, r: ir.evaluate(r, n_bootstrap=0, first_stage=_first_stage(t, u0=None)),
        ["query 'u0'", "expected a list of item ids"],
    ),
    ("write-path-none", lambda t, r: ir.write_observations(None, r), ["write_observations: path = None"]),
    ("write-rows-a-path", lambda t, r: ir.write_observations("o.jsonl", "rows.jsonl"), ["rows = 'rows.jsonl'"]),
]


@pytest.mark.parametrize("case,call,needles", ARGUMENTS, ids=[c[0] for c in ARGUMENTS])
def test_evaluate_and_write_observations_check_their_arguments(case, call, needles):
    tests, rows = _rows()
    with pytest.raises(ir.InvariRankError) as err:
        call(tests, rows)
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def _by_title(query, presented):
    return [item.item_id for item in sorted(presented, key=lambda it: it.title)]


# (id, call(tests), fragments): the audit's door — one rule for scores (methods._common.finite_scores), the
# candidates file's rules for queries, and rerank's own arguments
AUDIT = [
    (
        "scores-strings",
        lambda t: ir.audit(ir.audit.from_scores(lambda q, p: ["1"] * len(p), name="s"), t, M=1),
        ["reranker 's'", "strings", "finite real numbers"],
    ),
    (
        "scores-booleans",
        lambda t: ir.audit(ir.audit.from_scores(lambda q, p: [True] * len(p), name="s"), t, M=1),
        ["reranker 's'", "booleans"],
    ),
    ("queries-none", lambda t: ir.audit(ir.audit.from_order(_by_title, name="o"), None, M=1), ["queries = None"]),
    (
        "queries-surrogate",
        lambda t: ir.audit(ir.audit.from_order(_by_title, name="o"), [_with(query_id="\ud800")], M=1),
        ["'query_id'", "lone surrogate"],
    ),
    (  # a string is iterable: "0123" would present the candidates "0", "1", "2", "3"
        "rerank-presented-a-string",
        lambda t: ir.rerank(ir.audit.from_order(_by_title, name="o"), QUERY, "0123"),
        ["presented = '0123'"],
    ),
    (
        "rerank-seed-float",
        lambda t: ir.rerank(ir.audit.from_order(_by_title, name="o"), QUERY, seed=1.5),
        ["seed = 1.5"],
    ),
    ("rerank-query-none", lambda t: ir.rerank(ir.audit.from_order(_by_title, name="o"), None), ["query = NoneType"]),
]


@pytest.mark.parametrize("case,call,needles", AUDIT, ids=[c[0] for c in AUDIT])
def test_the_audit_door_checks_scores_queries_and_arguments(case, call, needles):
    with pytest.raises(ir.InvariRankError) as err:
        call([q for q in toy_split_queries() if q.split == "test"][:2])
    for needle in needles:
        assert needle in str(err.value), (needle, str(err.value))


def test_numpy_string_ids_from_a_reranker_are_strings():
    as_numpy = ir.audit.from_order(lambda q, p: np.array(_by_title(q, p)), name="o")
    rows = ir.audit(as_numpy, [QUERY], M=2)
    assert [r["output"] for r in rows] == [
        r["output"] for r in ir.audit(ir.audit.from_order(_by_title, name="o"), [QUERY], M=2)
    ]
