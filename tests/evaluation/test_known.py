"""Known answers (the metrics chapter's worked examples), edge cases, the per-metric API on lists and frames,
file formats."""

from __future__ import annotations

import gzip
import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from invarirank.errors import InvariRankError
from invarirank.evaluation import (
    evaluate,
    exposure,
    format_table,
    gpi,
    gpi_exact,
    hit_rate,
    loc,
    ndcg,
    ppi,
    read_observations,
    recall,
    reciprocal_rank,
    win_counts,
    write_observations,
)
from invarirank.evaluation.engine import METRICS_SCHEMA_VERSION, dumps_metrics
from tests.support.literal_evaluator import literal_evaluate


def rows_of(orders, outputs=None, relevant=("a",), query="q", method="m"):
    outputs = orders if outputs is None else outputs
    return [
        {
            "query_id": query,
            "method": method,
            "permutation": t,
            "input": list(i),
            "output": list(o),
            "relevant": list(relevant),
        }
        for t, (i, o) in enumerate(zip(orders, outputs))
    ]


def overall(rows, **kw):
    kw.setdefault("n_bootstrap", 0)
    res = evaluate(rows, **kw)
    return next(iter(res["methods"].values()))["overall"]


# ----------------------------------------------------------------------------------------------- §6


def test_known_position_follower():
    rows = rows_of(["abc", "cba"])
    ov = overall(rows, ks=(1,), exposure_k=1)
    assert ov["ppi"] == 1.0 and ov["gpi"] == 0.5 and ov["loc"] == -1.0
    assert ov["hr@1"] == 0.5 and ov["ndcg@1"] == 0.5
    assert ov["exposure@1"] == [1.0, 0.0, 0.0]
    assert ov["expected_exposure@1"] == [1 / 3] * 3
    assert ov["gpi_exact"] == 0.5


def test_known_constant_output():
    orders = ["".join(p) for p in itertools.permutations("abc")]
    ov = overall(rows_of(orders, ["abc"] * 6))
    assert ov["ppi"] == 0.0 and ov["gpi"] == 0.0 and ov["loc"] == 1.0


def test_known_preference_cycle():
    rows = rows_of(["abc", "bca", "cab"])
    items, W = win_counts([r["output"] for r in rows])
    q = {(items[i], items[j]): Fraction(int(W[i, j]), 3) for i in range(3) for j in range(3) if i != j}
    assert q[("a", "b")] == q[("b", "c")] == Fraction(2, 3) and q[("a", "c")] == Fraction(1, 3)
    ov = overall(rows)
    assert ov["gpi"] == 4 / 9 and ov["loc"] == -1 / 3 and ov["ppi"] == 1.0
    assert ov["gpi_exact"] == 4 / 9


def test_known_single_cell_has_no_ppi():
    res = evaluate(rows_of(["abc"] * 3, ["abc", "bca", "cab"]), n_bootstrap=0)
    block = res["methods"]["m"]
    assert block["per_query"]["q"]["ppi"] is None
    assert block["overall"]["ppi"] is None and block["overall"]["ppi_queries"] == 0
    assert block["overall"]["gpi"] == 4 / 9  # GPI and LOC do not need positions


# ----------------------------------------------------------------------------------------------- §5 edge cases


def test_single_row_and_k1_have_no_consistency_but_count_for_effectiveness():
    rows = rows_of(["abc"], relevant=("a",), query="one") + rows_of(["z", "z"], relevant=("z",), query="k1")
    rows[2]["permutation"] = 1
    res = evaluate(rows, ks=(1,), n_bootstrap=0)["methods"]["m"]
    for q in ("one", "k1"):
        d = res["per_query"][q]
        assert d["ppi"] is None and d["gpi"] is None and d["loc"] is None and d["gpi_exact"] is None
        assert d["hr@1"] == 1.0
    ov = res["overall"]
    assert ov["hr@1"] == 1.0 and ov["rows"] == 3 and ov["queries"] == 2
    assert ov["ppi"] is None and ov["gpi"] is None and ov["loc"] is None and ov["gpi_exact"] is None
    # every list is shorter than the cut-off: each item reaches the top-5, so no deviation is defined (not "no bias")
    assert ov["exposure@5"] == [1.0, 1.0, 1.0] and ov["exposure_mad@5"] is None


def test_effectiveness_definitions():
    out = ["x", "a", "y", "b"]
    truth = ["a", "b", "a", "c"]  # duplicates collapse; "c" is not a candidate
    assert hit_rate(out, truth, 1) == 0.0 and hit_rate(out, truth, 2) == 1.0
    idcg2 = 1 + 1 / math.log2(3)
    assert ndcg(out, truth, 2) == pytest.approx((1 / math.log2(3)) / idcg2)
    idcg10 = 1 + 1 / math.log2(3) + 1 / math.log2(4)  # min(|truth| = 3, k = 10) terms: "c" lowers the maximum
    assert ndcg(out, truth, 10) == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / idcg10)
    assert recall(out, truth, 10) == pytest.approx(2 / 3)
    assert reciprocal_rank(out, truth, 1) == 0.0 and reciprocal_rank(out, truth, 2) == 0.5
    rows = rows_of(["xayb"], relevant=truth)
    ov = overall(rows, ks=(1, 2, 10))
    assert ov["ndcg@10"] == pytest.approx(ndcg(out, truth, 10)) and ov["recall@10"] == pytest.approx(2 / 3)
    assert ov["mrr@2"] == 0.5 and ov["hr@1"] == 0.0


def test_overall_weighs_queries_by_rows():
    rows = rows_of(["ab", "ba", "ab"], ["ab", "ab", "ab"], relevant=("a",), query="q3")
    rows += rows_of(["ab"], ["ba"], relevant=("a",), query="q1")
    ov = overall(rows, ks=(1,))
    assert ov["hr@1"] == 0.75  # rows, not queries: (3 + 0) / 4


def test_exposure_mixed_k_pools_rows_with_k_above_p():
    rows = rows_of(["abcd", "dcba"], ["abcd", "dcba"], query="k4")
    rows += rows_of(["xy"], ["yx"], relevant=("x",), query="k2")
    ov = overall(rows, exposure_k=1)
    assert ov["exposure@1"] == [2 / 3, 1 / 3, 0.0, 0.0]
    expected = [(2 * 0.25 + 0.5) / 3, (2 * 0.25 + 0.5) / 3, 0.25, 0.25]
    assert ov["expected_exposure@1"] == pytest.approx(expected)
    dev = [abs(a - b) for a, b in zip(ov["exposure@1"], expected)]
    assert ov["exposure_mad@1"] == pytest.approx(sum(dev) / 4) and ov["exposure_maxdev@1"] == pytest.approx(max(dev))
    e = exposure(rows, k=1)
    assert e["exposure"] == ov["exposure@1"] and e["mad"] == pytest.approx(ov["exposure_mad@1"])


def test_gpi_tie_break_is_code_point_order():
    # two opposite rankings: every win score ties, so the start order is code-point order "10" < "9" < "B0" < "b0"
    outs = [["9", "10", "b0", "B0"], ["B0", "b0", "10", "9"]]
    value, order = gpi(outs, return_order=True)
    assert order[0] == "10" and value == 0.5


# ----------------------------------------------------------------------------------------------- API on lists/frames


def test_per_metric_functions_on_lists_and_frames():
    rows = rows_of(["abc", "bca", "cab"])
    frame = pd.DataFrame(rows)
    outs, ins = [r["output"] for r in rows], [r["input"] for r in rows]
    assert gpi(outs) == gpi(frame) == gpi(rows) == 4 / 9
    assert loc(outs) == loc(frame) == -1 / 3
    assert ppi(outs, ins) == ppi(frame) == ppi(rows) == 1.0
    assert gpi_exact(outs) == gpi_exact(frame) == 4 / 9
    assert exposure(frame, k=1)["exposure"] == [1.0, 0.0, 0.0]
    assert evaluate(frame, n_bootstrap=0) == evaluate(rows, n_bootstrap=0)
    with pytest.raises(InvariRankError):
        ppi(outs)  # positions need the presented orders
    assert gpi([["a", "b"]]) is None and loc([["a", "b"]]) is None


def test_evaluate_does_not_mutate_rows_and_accepts_integer_ids():
    rows = rows_of([[1, 2, 3], [3, 2, 1]], relevant=(1,))
    snapshot = json.dumps(rows)
    res = evaluate(rows, ks=(1,), n_bootstrap=0)["methods"]["m"]["overall"]
    assert json.dumps(rows) == snapshot
    assert res["hr@1"] == 0.5 and res["gpi"] == 0.5


def test_literal_and_fast_agree_on_known_answers():
    rows = rows_of(["abc", "bca", "cab"]) + rows_of(["abc", "cba"], method="follow")
    lit = literal_evaluate(rows, ks=(1,), exposure_k=1)
    fast = evaluate(rows, ks=(1,), exposure_k=1, n_bootstrap=0)
    for m in ("m", "follow"):
        for key in ("ppi", "gpi", "loc", "hr@1", "ndcg@1", "exposure_mad@1"):
            assert fast["methods"][m]["overall"][key] == pytest.approx(lit["methods"][m]["overall"][key])


# ----------------------------------------------------------------------------------------------- output


def _reject_nan(text):
    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))


def test_metrics_shape_deterministic_and_nan_free(tmp_path):
    rng = np.random.default_rng(1)
    rows = []
    for q in range(12):
        ids = [str(x) for x in rng.choice(100, 6, replace=False)]
        for t in range(int(rng.integers(1, 5))):
            rows.append(
                {
                    "query_id": f"u{q}",
                    "method": "zs",
                    "permutation": t,
                    "input": list(rng.permutation(ids)),
                    "output": list(rng.permutation(ids)),
                    "relevant": ids[:1],
                }
            )
    a, b = evaluate(rows), evaluate(rows)
    text = dumps_metrics(a)
    assert text == dumps_metrics(b)
    _reject_nan(text)
    assert json.loads(text) == a
    assert (
        a["schema_version"] == METRICS_SCHEMA_VERSION
        and a["settings"]["bootstrap"] == 1000
        and a["settings"]["permutations"] == 10000
    )
    assert a["settings"]["reference_replicates"] == 20 and set(a["references"]) == {"random"}
    assert set(a["references"]["random"]) == {"overall", "per_query", "comparisons"}
    ov = a["methods"]["zs"]["overall"]
    for k in (1, 5, 10):
        for m in ("hr", "ndcg", "recall", "mrr"):
            assert f"{m}@{k}" in ov and f"{m}@{k}" in ov["ci"]
            low, high = ov["ci"][f"{m}@{k}"]
            assert low <= high
    for key in (
        "ppi",
        "gpi",
        "gpi_exact",
        "loc",
        "exposure@5",
        "expected_exposure@5",
        "exposure_mad@5",
        "exposure_maxdev@5",
        "queries",
        "rows",
    ):
        assert key in ov
    assert set(ov["ci"]) >= {"ppi", "gpi", "gpi_exact", "loc", "exposure_mad@5", "exposure_maxdev@5"}
    pq = a["methods"]["zs"]["per_query"]["u0"]
    assert {"hr@1", "ndcg@10", "ppi", "gpi", "loc"} <= set(pq)
    c = evaluate(rows, seed=1)
    assert c["methods"]["zs"]["overall"]["ci"] != ov["ci"]
    off = evaluate(rows, n_bootstrap=0, exact_kemeny_max_k=None)["methods"]["zs"]["overall"]
    assert off["ci"] == {} and off["gpi_exact"] is None and off["gpi_suboptimal_queries"] is None
    table = format_table(a)
    assert "zs: 12 queries" in table and "gpi_exact" in table and "exposure@5 by presented position" in table


def test_gpi_exact_null_when_some_query_is_too_large():
    big = rows_of(["abcdef", "fedcba"], query="big")
    small = rows_of(["ab", "ba"], query="small")
    res = evaluate(big + small, exact_kemeny_max_k=4, n_bootstrap=0)["methods"]["m"]
    assert res["overall"]["gpi_exact"] is None
    assert res["per_query"]["small"]["gpi_exact"] == 0.5 and res["per_query"]["big"]["gpi_exact"] is None


def test_settings_are_checked():
    rows = rows_of(["ab", "ba"])
    for kw in (
        {"ks": (0,)},
        {"exposure_k": 0},
        {"buckets": 0},
        {"exact_kemeny_max_k": 17},
        {"n_bootstrap": -1},
        {"seed": -1},
    ):
        with pytest.raises(InvariRankError):
            evaluate(rows, **kw)


# ----------------------------------------------------------------------------------------------- files


@pytest.mark.parametrize("name", ["obs.jsonl", "obs.jsonl.gz", "obs.parquet"])
def test_write_read_roundtrip(tmp_path, name):
    rows = rows_of(["abc", "bca", "cab"])
    rows[0]["scores"] = np.array([0.5, np.nan, 1.0], dtype=np.float32)
    rows[1]["passes"] = np.int64(3)
    path = tmp_path / name
    write_observations(path, rows)
    back = read_observations(path)
    assert [r["output"] for r in back] == [r["output"] for r in rows]
    assert all(r["schema_version"] == 1 for r in back)
    assert back[0]["scores"] == [0.5, None, 1.0]
    assert evaluate(path, n_bootstrap=0) == evaluate(rows, n_bootstrap=0)
    first = path.read_bytes()
    write_observations(path, rows)
    assert path.read_bytes() == first  # deterministic
    if name.endswith(".gz"):
        assert gzip.decompress(first).decode().splitlines()[0].startswith('{"schema_version": 1, "query_id"')


def test_write_refuses_invalid_rows(tmp_path):
    rows = rows_of(["abc"], ["abd"])
    with pytest.raises(InvariRankError, match="not a permutation"):
        write_observations(tmp_path / "x.jsonl", rows)
    assert not (tmp_path / "x.jsonl").exists()


def test_percentile_interval_matches_numpy():
    from invarirank.evaluation._bootstrap import percentile_interval

    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 40, 999, 1000):
        r = rng.normal(size=n)
        assert percentile_interval(r) == np.percentile(r, [2.5, 97.5]).tolist()
        assert percentile_interval(np.append(r, np.nan)) == np.percentile(r, [2.5, 97.5]).tolist()
    assert percentile_interval(np.array([np.nan])) is None


def test_a_metrics_file_of_another_schema_version_is_one_clear_error():
    from invarirank.evaluation import check_metrics_version
    from invarirank.evaluation.engine import METRICS_SCHEMA_VERSION

    current = {"schema_version": METRICS_SCHEMA_VERSION, "methods": {}}
    assert check_metrics_version(current, "m.json") is current
    for bad, found in (
        ({"schema_version": 1}, "schema_version 1"),
        ({}, "schema_version None"),
        ({"schema_version": True}, "schema_version True"),
        ([], "not a metrics object"),
    ):
        with pytest.raises(
            InvariRankError,
            match=rf"^run/metrics.json: {found}, expected schema_version "
            rf"{METRICS_SCHEMA_VERSION} .*invarirank evaluate",
        ):
            check_metrics_version(bad, "run/metrics.json")
