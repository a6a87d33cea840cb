"""Hostile input, round 4 (issue 39), the Python front door: F1 custom scorers (scores validated at one boundary,
:func:`invarirank.methods._common.checked_scores`), F2 arguments of ``rerank_query``/``rerank_window`` and
``read_candidates``, F3 ``evaluate``'s settings (one check with the command line), F7 lone surrogates, F11 ids and
windows. A rejected input raises :class:`InvariRankError`, one line naming the input; an accepted one gives the right
answer."""

from __future__ import annotations

import codecs
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import invarirank as ir
from invarirank.candidates import query_to_json
from invarirank.data._synthetic import synthetic_queries
from invarirank.errors import InvariRankError
from invarirank.methods.stella import calibrate
from invarirank.runner.rerank import rerank_window
from invarirank.types import ScorerBase, ScoreResult

QUERIES = synthetic_queries(n_test=3, n_validation=6, k=5, seed=1)
TEST = [q for q in QUERIES if q.split == "test"]
VALIDATION = [q for q in QUERIES if q.split == "validation"]


def _one_line(exc: pytest.ExceptionInfo, needles: list[str]) -> None:
    text = str(exc.value)
    assert "\n" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


class Custom:
    """A scorer written against the documented protocol (name, score, identity), answering ``answer(presented)``."""

    name = "custom"

    def __init__(self, answer: Callable[[list], Any]) -> None:
        self.answer = answer

    def identity(self) -> dict:
        return {"name": self.name}

    def score(self, query, presented):
        return self.answer(list(presented))


def _scores(values: Callable[[int], Any]) -> Custom:
    return Custom(lambda presented: ScoreResult(scores=values(len(presented))))


# ------------------------------------------------------------------------------------------ F1 custom scorers
BAD_SCORERS = [
    ("nan", _scores(lambda n: np.array([np.nan] + [1.0] * (n - 1))), ["nan for candidate 0"]),
    ("inf", _scores(lambda n: [float("inf")] + [0.0] * (n - 1)), ["inf", "finite real numbers"]),
    ("strings-that-parse", _scores(lambda n: [str(i) for i in range(n)]), ["strings", "'0'"]),
    ("complex", _scores(lambda n: np.arange(n) + 1j), ["complex"]),
    ("object-array", _scores(lambda n: np.array([1.0] * n, dtype=object)), ["objects"]),
    ("booleans", _scores(lambda n: [True] * n), ["booleans"]),
    ("generator", _scores(lambda n: (float(i) for i in range(n))), ["generator"]),
    ("too-few", _scores(lambda n: [1.0]), ["1 scores", "expected 5"]),
    ("two-dimensional", _scores(lambda n: np.zeros((n, 1))), ["shape (5, 1)"]),
    ("plain-ndarray", Custom(lambda p: np.arange(len(p), dtype=float)), ["returned ndarray", "ScoreResult"]),
    ("none", Custom(lambda p: None), ["returned NoneType", "ScoreResult"]),
]


@pytest.mark.parametrize("case,scorer,needles", BAD_SCORERS, ids=[c[0] for c in BAD_SCORERS])
def test_bad_scores_are_refused_naming_scorer_and_query(case, scorer, needles):
    with pytest.raises(InvariRankError) as exc:
        ir.rerank_query(scorer, TEST[0], M=2, methods=["zero_shot", "sgs"])
    _one_line(exc, ["scorer 'custom'", f"query {TEST[0].query_id!r}", *needles])


@pytest.mark.parametrize("case,scorer,needles", BAD_SCORERS[:6], ids=[c[0] for c in BAD_SCORERS[:6]])
def test_stella_calibration_refuses_bad_scores(case, scorer, needles):
    """Not smoothed into a uniform matrix: the calibration fails naming the scorer."""
    with pytest.raises(InvariRankError) as exc:
        calibrate(scorer, VALIDATION, 5, n_queries=3, repeats=1)
    _one_line(exc, ["scorer 'custom'", *needles])


class BatchNone(ScorerBase):
    """A batching scorer whose batch holds a None entry (or too few results)."""

    name = "batcher"
    batch_size = 4

    def __init__(self, short: bool = False) -> None:
        self.short = short

    def identity(self) -> dict:
        return {"name": self.name}

    def score(self, query, presented):
        return ScoreResult(scores=np.arange(len(presented), dtype=float))

    def score_requests(self, requests):
        out: list[Any] = [self.score(q, p) for q, p in requests]
        return out[:-1] if self.short else [None, *out[1:]]


@pytest.mark.parametrize("short,needles", [(False, ["returned NoneType"]), (True, ["answered"])])
def test_a_batch_with_a_none_entry_or_too_few_results_is_refused(short, needles):
    with pytest.raises(InvariRankError) as exc:
        rerank_window(BatchNone(short), TEST, M=2, methods=["zero_shot"])
    _one_line(exc, ["scorer 'batcher'", *needles])


class NoName:
    def score(self, query, presented):
        return ScoreResult(scores=np.zeros(len(presented)))

    def identity(self):
        return {}


class NoIdentity:
    name = "x"

    def score(self, query, presented):
        return ScoreResult(scores=np.zeros(len(presented)))


# ------------------------------------------------------------------------------------------ F2 the front door
DOOR = [
    ("scorer-without-name", NoName(), {}, ["rerank_query", "NoName", "'name'"]),
    ("scorer-without-identity", NoIdentity(), {}, ["rerank_query", "identity()"]),
    ("scorer-a-string", "simulated", {}, ["rerank_query", "str object", "make_scorer"]),
    ("query-a-dict", None, {"query": {"query_id": "x"}}, ["rerank_query", "query = dict", "Query"]),
    ("query-a-string", None, {"query": "u000"}, ["query = str"]),
    ("seed-float", None, {"seed": 1.5}, ["seed = 1.5", "integer"]),
    ("seed-string", None, {"seed": "1"}, ["seed = '1'"]),
    ("seed-none", None, {"seed": None}, ["seed = None"]),
    ("seed-above-32-bits", None, {"seed": 2**33}, ["'seed'", "4294967295"]),
    ("seed-negative", None, {"seed": -1}, ["'seed'", "at least 0"]),
    ("methods-none", None, {"methods": None}, ["'methods' = None"]),
    ("noise-floor-string", None, {"noise_floor": "yes"}, ["noise_floor = 'yes'"]),
]


@pytest.mark.parametrize("case,scorer,kw,needles", DOOR, ids=[c[0] for c in DOOR])
def test_rerank_query_checks_its_arguments_at_the_door(case, scorer, kw, needles):
    kw = dict(kw)
    query = kw.pop("query", TEST[0])
    with pytest.raises(InvariRankError) as exc:
        ir.rerank_query(ir.make_scorer("simulated") if scorer is None else scorer, query, M=2, **kw)
    _one_line(exc, needles)


WRONG_OBJECTS = [
    ("read-candidates-none", lambda: ir.read_candidates(None), ["read_candidates: path = None"]),
    ("read-candidates-empty", lambda: ir.read_candidates(""), ["read_candidates: path = ''"]),
    ("read-observations-none", lambda: ir.read_observations(None), ["read_observations: path = None"]),
    ("evaluate-none", lambda: ir.evaluate(None), ["evaluate: data = NoneType"]),
    ("evaluate-a-number", lambda: ir.evaluate(5), ["evaluate: data = int"]),
    ("evaluate-one-row-not-a-list", lambda: ir.evaluate({"query_id": "q"}), ["evaluate: data = dict"]),
]


@pytest.mark.parametrize("case,call,needles", WRONG_OBJECTS, ids=[c[0] for c in WRONG_OBJECTS])
def test_the_wrong_kind_of_object_is_named_at_the_door(case, call, needles):
    with pytest.raises(InvariRankError) as exc:
        call()
    _one_line(exc, needles)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_read_candidates_accepts_gzip_and_a_byte_order_mark_as_observations_do(tmp_path):
    text = "".join(json.dumps(query_to_json(q)) + "\n" for q in QUERIES).encode("utf-8")
    plain = ir.read_candidates(_write(tmp_path / "c.jsonl", text))
    assert ir.read_candidates(_write(tmp_path / "c.jsonl.gz", gzip.compress(text))) == plain
    assert ir.read_candidates(_write(tmp_path / "bom.jsonl", codecs.BOM_UTF8 + text)) == plain
    with pytest.raises(InvariRankError) as exc:
        ir.read_candidates(_write(tmp_path / "cut.jsonl.gz", gzip.compress(text)[:-30]))
    _one_line(exc, ["cut.jsonl.gz", "gzip"])


# ------------------------------------------------------------------------------------------ F3 evaluate's settings
def _rows(k: int = 6, queries: int = 3, m: int = 3) -> list[dict]:
    items = [f"i{j}" for j in range(k)]
    return [
        {
            "query_id": f"q{q}",
            "method": "zero_shot",
            "permutation": t,
            "input": items[t:] + items[:t],
            "output": sorted(items),
            "relevant": [items[q % k]],
        }
        for q in range(queries)
        for t in range(m)
    ]


EVALUATE = [
    ("ks-floats", {"ks": [1.0, 5.0]}, ["ks", "positive integers"]),
    ("ks-strings", {"ks": ["1", "5"]}, ["ks"]),
    ("ks-booleans", {"ks": [True]}, ["ks"]),
    ("buckets-1", {"buckets": 1}, ["buckets 1", "one bucket"]),
    ("buckets-above-k", {"buckets": 7}, ["buckets 7", "K = 6"]),
    ("exposure-k-equal-k", {"exposure_k": 6}, ["exposure_k 6", "equal to K = 6"]),
    ("bootstrap-beyond-limit", {"n_bootstrap": 10**9}, ["n_bootstrap", "limit 100,000"]),
    ("permutations-beyond-limit", {"n_permutations": 10**12}, ["n_permutations", "limit 1,000,000"]),
    ("exact-k-boolean", {"exact_kemeny_max_k": True}, ["exact_kemeny_max_k"]),
]


@pytest.mark.parametrize("case,kw,needles", EVALUATE, ids=[c[0] for c in EVALUATE])
def test_evaluate_from_python_applies_the_command_lines_checks(case, kw, needles):
    with pytest.raises(InvariRankError) as exc:
        ir.evaluate(_rows(), **{"n_bootstrap": 0, **kw})
    _one_line(exc, needles)


def test_evaluate_refuses_an_empty_query_id():
    rows = _rows()
    for r in rows[:3]:
        r["query_id"] = ""
    with pytest.raises(InvariRankError) as exc:
        ir.evaluate(rows, n_bootstrap=0)
    _one_line(exc, ["<rows>:1", "'query_id' is empty"])


def test_numpy_and_pandas_string_ids_are_strings():
    pd = pytest.importorskip("pandas")
    rows = _rows()
    want = ir.evaluate(rows, n_bootstrap=0, n_permutations=0)
    as_numpy = [
        {**r, "query_id": np.str_(r["query_id"]), "method": np.str_(r["method"]), "input": np.array(r["input"])}
        for r in rows
    ]
    assert ir.evaluate(as_numpy, n_bootstrap=0, n_permutations=0) == want
    frame = pd.DataFrame(rows)
    frame["query_id"] = frame["query_id"].astype("string")
    assert ir.evaluate(frame, n_bootstrap=0, n_permutations=0) == want


# ------------------------------------------------------------------------------------------ F7 lone surrogates
SURROGATES = [
    ("title", lambda d: d["candidates"][1].__setitem__("title", "A\ud800B"), "candidates[1].title"),
    ("item-id", lambda d: d["candidates"][0].__setitem__("item_id", "x\udc00"), "candidates[0].item_id"),
    ("query-id", lambda d: d.__setitem__("query_id", "q\ud83d"), "query_id"),
    ("history-title", lambda d: d["history"][0].__setitem__("title", "\udfff"), "history[0].title"),
]


@pytest.mark.parametrize("case,spoil,field", SURROGATES, ids=[c[0] for c in SURROGATES])
def test_candidates_with_a_lone_surrogate_are_refused_at_reading(tmp_path, case, spoil, field):
    d = query_to_json(TEST[0])
    spoil(d)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(d) + "\n", encoding="ascii")  # json escapes the surrogate as \\udXXX
    with pytest.raises(InvariRankError) as exc:
        ir.read_candidates(path)
    _one_line(exc, [f"{path}:1", field, "lone surrogate"])


@pytest.mark.parametrize("field", ["query_id", "method", "input", "relevant"])
def test_observations_with_a_lone_surrogate_are_refused_at_reading(tmp_path, field):
    rows = _rows()
    for r in rows:
        if field == "input":  # (output is a permutation of input)
            r["input"], r["output"] = ([x + "\ud800" if x == "i0" else x for x in r[f]] for f in ("input", "output"))
        elif field == "relevant":
            r["relevant"] = [x + "\ud800" for x in r["relevant"]]
        else:
            r[field] = r[field] + "\ud800"
    path = tmp_path / "obs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="ascii")
    with pytest.raises(InvariRankError) as exc:
        ir.read_observations(path)
    _one_line(exc, [f"{path}:1", repr(field), "lone surrogate"])


# ------------------------------------------------------------------------------------------ F11 wrong data
def test_rerank_window_refuses_two_queries_sharing_an_id():
    with pytest.raises(InvariRankError) as exc:
        rerank_window(ir.make_scorer("simulated"), [TEST[0], TEST[0]], M=2, methods=["zero_shot"])
    _one_line(exc, ["rerank_window", repr(TEST[0].query_id), "twice"])
