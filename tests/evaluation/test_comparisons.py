"""Paired method comparisons and the paper's claims: known answers (identical methods, a method reversed on every
query), a literal recomputation on a small file, interval coverage over 400 simulated runs, Holm and verdicts."""

from __future__ import annotations

import itertools
import json
import math
from statistics import NormalDist, stdev

import numpy as np
import pytest

from invarirank.cli import main
from invarirank.evaluation import (
    PAPER_CLAIMS,
    PerQuery,
    compare_methods,
    comparison,
    evaluate,
    exposure,
    format_comparisons,
    holm,
    judge_claim,
    judge_claims,
    per_query_from_block,
    queries_for_power,
    sign_flip_p,
    write_observations,
)
from invarirank.evaluation._claims import Claim, ordering_claim
from invarirank.evaluation.engine import METRICS_SCHEMA_VERSION, dumps_metrics
from tests.support.literal_evaluator import literal_evaluate

Z80 = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)


def ranked_rows(n_queries: int, K: int = 4, M: int = 3, seed: int = 0) -> list[dict]:
    """Method "best" puts the relevant item first on every row; "reversed" returns "best"'s output reversed."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        ids = [f"i{q}_{j}" for j in range(K)]
        for t in range(M):
            presented = [ids[j] for j in rng.permutation(K)]
            best = [ids[0]] + [x for x in presented if x != ids[0]]
            for method, out in (("best", best), ("reversed", best[::-1])):
                rows.append(
                    {
                        "query_id": f"q{q}",
                        "method": method,
                        "permutation": t,
                        "input": presented,
                        "output": out,
                        "relevant": [ids[0]],
                    }
                )
    return rows


def simulated_run(n_queries: int = 30, K: int = 6, M: int = 8, seed: int = 0, names=None) -> list[dict]:
    """Four methods that rank by utility + noise (less noise: more consistent); zero_shot also favours early
    presented positions. ``names`` relabels the methods (to doctor a run)."""
    noise = {"sgs": 0.1, "bootstrapping": 0.4, "zero_shot": 0.8, "stella": 2.5}
    names = names or {}
    rng = np.random.default_rng(seed)
    ids = [str(i) for i in range(K)]
    rows = []
    for q in range(n_queries):
        utility = rng.normal(size=K)
        for t in range(M):
            presented = rng.permutation(K)
            for method, s in noise.items():
                score = utility[presented] + s * rng.normal(size=K)
                if method == "zero_shot":
                    score = score + 0.8 * np.arange(K)[::-1] / (K - 1)
                out = presented[np.argsort(-score)]
                rows.append(
                    {
                        "query_id": f"q{q}",
                        "method": names.get(method, method),
                        "permutation": t,
                        "input": [ids[i] for i in presented],
                        "output": [ids[i] for i in out],
                        "relevant": [ids[int(np.argmax(utility))]],
                    }
                )
    return rows


# ----------------------------------------------------------------------------------------------- known answers


@pytest.mark.parametrize("n_queries", [5, 20])  # exact enumeration, then seeded flips
def test_identical_methods_differ_by_zero_with_p_one(n_queries):
    rows = [r for r in ranked_rows(n_queries) if r["method"] == "best"]
    rows += [{**r, "method": "copy"} for r in rows]
    res = evaluate(rows, n_bootstrap=200, exposure_k=3)  # K = 4: a top-3 exposure is defined, a top-5 is not
    comps = res["comparisons"]
    assert set(comps) >= {"hr@1", "ndcg@5", "ppi", "gpi", "loc", "exposure_mad@3"}
    for metric, by_a in comps.items():
        rec = by_a["best"]["copy"]
        assert rec["n"] == n_queries and rec["mean_diff"] == 0.0 and rec["p"] == 1.0, metric
        assert rec["exact"] is (n_queries <= 16)
        assert rec["ci"] == [0.0, 0.0] and rec["queries_80"] is None
    assert "claims" not in res and judge_claims(comps) == {}  # evaluate judges nothing; no paper method here


@pytest.mark.parametrize("n", [1, 2, 6, 10, 16])
def test_reversed_on_every_query_gives_the_exact_sign_test_p(n):
    res = evaluate(ranked_rows(n), n_bootstrap=0)
    hr1 = res["comparisons"]["hr@1"]["best"]["reversed"]
    assert hr1["mean_diff"] == 1.0 and hr1["exact"] is True
    assert hr1["p"] == 2 / 2**n  # only all-plus and all-minus reach |sum d|
    assert hr1["ci"] is None and hr1["sd"] == (0.0 if n >= 2 else None)
    if n >= 2:  # reversing every row keeps every Kendall tau
        loc = res["comparisons"]["loc"]["best"]["reversed"]
        assert loc["mean_diff"] == 0.0 and loc["p"] == 1.0
    # the same from the plain function, with unequal magnitudes and either sign
    d = -np.arange(1, n + 1) / 7
    assert sign_flip_p(d) == (2 / 2**n, True)


def test_more_than_16_queries_use_seeded_flips():
    p, exact = sign_flip_p(np.ones(20), n_permutations=999, seed=3)
    assert not exact and p == 1 / 1000  # (1 + 0) / (1 + 999): no random vector is all +1 or -1
    assert sign_flip_p(np.zeros(40)) == (1.0, False)
    rng = np.random.default_rng(0)
    d = rng.normal(0.1, 1, size=40)
    assert sign_flip_p(d, seed=1) == sign_flip_p(d, seed=1) != sign_flip_p(d, seed=2)
    # a column with few paired queries is enumerated exactly even when the run has more queries
    values = np.full(30, np.nan)
    values[:5] = 1.0
    pq = {
        "a": PerQuery(tuple(f"q{i}" for i in range(30)), {"x": values}),
        "b": PerQuery(tuple(f"q{i}" for i in range(30)), {"x": np.where(np.isnan(values), np.nan, 0.0)}),
    }
    rec = compare_methods(pq, n_bootstrap=0)["x"]["a"]["b"]
    assert rec["n"] == 5 and rec["exact"] is True and rec["p"] == 2 / 32


@pytest.mark.parametrize("seed", range(3))
def test_float32_flips_count_what_float64_flips_count(seed, monkeypatch):
    """Drawn flips are summed in float32 first and the rows it leaves undecided again in float64: the counts are
    those of float64 alone on columns with many ties (twentieths, a few nonzero queries, one value everywhere),
    wide ranges and continuous values."""
    from invarirank.evaluation import _sign_flips

    rng = np.random.default_rng(seed)
    n = 500
    D = np.column_stack(
        [
            rng.integers(-3, 4, n) * 0.05,
            np.where(rng.random(n) < 0.02, rng.integers(-1, 2, n) * 0.05, 0.0),
            np.full(n, 0.125),
            rng.normal(size=n) * np.exp(rng.normal(size=n) * 5),
            rng.normal(0.05, 1.0, n),
            np.zeros(n),
        ]
    )
    D[: n // 3, 4] = 0.0
    fast = _sign_flips.permutation_p(n, D, [], 3000, seed)
    recomputed = []
    float32_sums = _sign_flips._float32_sums

    def counted(bits, d, total, threshold, buffers):
        X = float32_sums(bits, d, total, threshold, buffers)
        recomputed.append(np.abs(X - bits.astype(np.float64) @ d).max())
        return bits.astype(np.float64) @ d

    monkeypatch.setattr(_sign_flips, "_float32_sums", counted)
    slow = _sign_flips.permutation_p(n, D, [], 3000, seed)
    assert fast[0].tolist() == slow[0].tolist() and fast[2] is slow[2] is False
    assert max(recomputed) > 0  # (the float32 sums do differ from float64's)


def test_queries_for_power_is_the_normal_approximation():
    assert queries_for_power(0.1, 0.5) == math.ceil((Z80 * 0.5 / 0.1) ** 2) == 197
    assert queries_for_power(-0.1, 0.5) == 197
    assert queries_for_power(0.0, 0.5) is None and queries_for_power(0.1, None) is None
    assert queries_for_power(0.1, 0.0) == 1


def test_the_normal_quantile_is_statistics_own_to_the_bit():
    from statistics import NormalDist, StatisticsError

    from invarirank.evaluation._comparisons import normal_quantile

    for p in (0.975, 0.8, 0.5, 1e-300, 0.3, 1 - 1e-16, 0.025):
        assert normal_quantile(p) == NormalDist().inv_cdf(p)
    with pytest.raises(StatisticsError):
        normal_quantile(1.0)


# ----------------------------------------------------------------------------------------------- literal


def test_literal_computation_on_a_small_file(tmp_path):
    """Six queries, two methods, through ``invarirank evaluate FILE``: every number of hr@1, ndcg@5, loc and
    exposure_mad@2 recomputed here from the protocol (literal evaluator), itertools and numpy."""
    rng = np.random.default_rng(7)
    rows = []
    for q in range(6):
        ids = [f"{q}{c}" for c in "abcd"]
        for t in range(3):
            presented = [ids[j] for j in rng.permutation(4)]
            rows.append(
                {
                    "query_id": f"u{q}",
                    "method": "follow",
                    "permutation": t,
                    "input": presented,
                    "output": presented,
                    "relevant": [ids[0]],
                }
            )
            rows.append(
                {
                    "query_id": f"u{q}",
                    "method": "noisy",
                    "permutation": t,
                    "input": presented,
                    "output": [ids[j] for j in rng.permutation(4)],
                    "relevant": [ids[0]],
                }
            )
    path = tmp_path / "obs.jsonl"
    write_observations(path, rows)
    assert main(["evaluate", str(path), "--bootstrap", "300", "--seed", "5", "--k", "1,5", "--exposure-k", "2"]) == 0
    stored = json.loads((tmp_path / "metrics.json").read_text())
    assert stored["schema_version"] == METRICS_SCHEMA_VERSION and stored["settings"]["permutations"] == 10000
    lit = literal_evaluate(rows, ks=(1, 5), exposure_k=2)["methods"]
    qids = [f"u{q}" for q in range(6)]
    draws = np.random.default_rng(5).integers(0, 6, size=(300, 6))  # the bootstrap's resamples
    signs = list(itertools.product([1, -1], repeat=6))
    for metric in ("hr@1", "ndcg@5", "loc"):
        d = [lit["follow"]["per_query"][q][metric] - lit["noisy"]["per_query"][q][metric] for q in qids]
        rec = stored["comparisons"][metric]["follow"]["noisy"]
        mean = sum(d) / 6
        t_obs = abs(sum(d))
        p = sum(abs(sum(s * x for s, x in zip(sv, d))) >= t_obs - 1e-12 for sv in signs) / 64
        ci = np.percentile(np.asarray(d)[draws].mean(axis=1), [2.5, 97.5])
        assert rec["n"] == 6 and rec["exact"] is True
        assert rec["mean_diff"] == pytest.approx(mean, abs=1e-12)
        assert rec["p"] == pytest.approx(p, abs=1e-12)
        assert rec["ci"] == pytest.approx(ci.tolist(), abs=1e-12)
        assert rec["sd"] == pytest.approx(stdev(d), abs=1e-12)
        assert rec["queries_80"] == (None if mean == 0 else max(1, math.ceil((Z80 * stdev(d) / abs(mean)) ** 2)))

    # exposure: a pooled deviation, compared by swapping whole queries between the methods
    by = {(r["method"], r["query_id"]): [] for r in rows}
    for r in rows:
        by[(r["method"], r["query_id"])].append(r)

    def mad_diff(first: list[str], second: list[str]) -> float:
        a = [r for q, m in zip(qids, first) for r in by[(m, q)]]
        b = [r for q, m in zip(qids, second) for r in by[(m, q)]]
        return exposure(a, k=2)["mad"] - exposure(b, k=2)["mad"]

    rec = stored["comparisons"]["exposure_mad@2"]["follow"]["noisy"]
    observed = mad_diff(["follow"] * 6, ["noisy"] * 6)
    assert observed == pytest.approx(
        lit["follow"]["overall"]["exposure_mad@2"] - lit["noisy"]["overall"]["exposure_mad@2"]
    )
    assert observed > 0.2  # a position follower is far from flat
    assert rec["mean_diff"] == pytest.approx(observed, abs=1e-12)
    swapped = [
        mad_diff(["follow" if s > 0 else "noisy" for s in sv], ["noisy" if s > 0 else "follow" for s in sv])
        for sv in signs
    ]
    assert rec["p"] == pytest.approx(sum(abs(x) >= abs(observed) - 1e-12 for x in swapped) / 64, abs=1e-12)

    def pooled_mad(method: str, drawn: np.ndarray) -> float:  # a resample: rows of the drawn queries
        return exposure([r for i in drawn for r in by[(method, qids[i])]], k=2)["mad"]

    reps = [pooled_mad("follow", row) - pooled_mad("noisy", row) for row in draws]
    low, high = np.percentile(reps, [2.5, 97.5])  # the basic interval reflects them about the estimate
    assert rec["ci"] == pytest.approx([2 * observed - high, 2 * observed - low], abs=1e-12)
    for method in ("follow", "noisy"):  # each method's own interval: basic, clipped at 0
        value = lit[method]["overall"]["exposure_mad@2"]
        low, high = np.percentile([pooled_mad(method, row) for row in draws], [2.5, 97.5])
        ci = stored["methods"][method]["overall"]["ci"]["exposure_mad@2"]
        assert ci == pytest.approx([max(0.0, 2 * value - high), max(0.0, 2 * value - low)], abs=1e-12)
    assert rec["sd"] == pytest.approx(np.std(reps, ddof=1) * math.sqrt(6), abs=1e-12)


def test_comparisons_from_a_metrics_file_equal_evaluate(tmp_path):
    """The book's path: per-query values read back from metrics.json (any schema) give the same comparisons."""
    res = evaluate(simulated_run(n_queries=12), n_bootstrap=100)
    back = json.loads(dumps_metrics(res))
    again = compare_methods({m: per_query_from_block(b) for m, b in back["methods"].items()}, n_bootstrap=100)
    assert again == {k: v for k, v in res["comparisons"].items() if not k.startswith("exposure")}


# ----------------------------------------------------------------------------------------------- coverage


def test_paired_interval_covers_a_known_difference_92_to_98_percent_of_400_runs():
    """Per-query values with a query effect and a true mean difference of 0.3; each run is its own seed."""
    true_diff, n, covered = 0.3, 40, 0
    qids = tuple(f"q{i}" for i in range(n))
    for run in range(400):
        rng = np.random.default_rng(run)
        base = rng.normal(0, 1, n)
        a = base + rng.normal(0, 1, n) + true_diff
        b = base + rng.normal(0, 1, n)
        rec = compare_methods(
            {"a": PerQuery(qids, {"x": a}), "b": PerQuery(qids, {"x": b})}, seed=run, n_bootstrap=1000, n_permutations=1
        )["x"]["a"]["b"]
        covered += rec["ci"][0] <= true_diff <= rec["ci"][1]
    assert 0.92 <= covered / 400 <= 0.98, covered
    print(f"coverage {covered / 400:.3f}")


# ----------------------------------------------------------------------------------------------- claims


def test_holm_step_down():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.001]) == pytest.approx([0.5, 0.002])
    assert holm([0.4, 0.4, 0.9]) == pytest.approx([1.0, 1.0, 1.0])
    assert holm([]) == []


def _record(mean_diff, p, queries_80=50):
    return {
        "n": 30,
        "mean_diff": mean_diff,
        "ci": [mean_diff - 0.1, mean_diff + 0.1],
        "p": p,
        "exact": False,
        "sd": 0.2,
        "queries_80": queries_80,
    }


def test_verdicts_from_hand_made_comparisons():
    claim = ordering_claim("c", "loc", ("x", "y", "z"), True, "test")
    assert claim.pairs == (("x", "y"), ("y", "z")) and claim.text == "x > y > z"
    stored = {"loc": {"x": {"y": _record(0.2, 0.001)}, "z": {"y": _record(-0.1, 0.02)}}}  # z - y stored
    v = judge_claim(claim, stored)
    assert v["verdict"] == "reproduced"
    assert [p["p_holm"] for p in v["pairs"]] == pytest.approx([0.002, 0.02])
    assert v["pairs"][1]["mean_diff"] == pytest.approx(0.1) and v["pairs"][1]["ci"] == pytest.approx([0.0, 0.2])
    assert all(p["queries_80"] is None for p in v["pairs"])  # resolved pairs need no more queries
    stored["loc"]["x"]["y"] = _record(0.2, 0.04)  # both raw p < 0.05, but Holm: 2 x 0.03
    stored["loc"]["z"]["y"] = _record(-0.1, 0.03)
    v = judge_claim(claim, stored)
    assert [p["p_holm"] for p in v["pairs"]] == pytest.approx([0.06, 0.06])
    assert v["verdict"] == "unresolved" and [p["queries_80"] for p in v["pairs"]] == [50, 50]
    stored["loc"]["z"]["y"] = _record(0.1, 0.001)  # z above y, resolved: contradicted
    v = judge_claim(claim, stored)
    assert v["verdict"] == "contradicted" and v["pairs"][1]["direction"] == "reversed"
    lower = Claim("d", "ppi", (("x", "y"),), False, "x < y", "test")
    assert judge_claim(lower, {"ppi": {"x": {"y": _record(0.2, 0.001)}}})["verdict"] == "contradicted"
    assert judge_claim(claim, {"loc": {"x": {"y": _record(0.2, 0.001)}}}) is None  # a pair is missing
    stored["loc"]["z"]["y"] = _record(0.1, 0.5)  # the wrong sign, not resolved: still contradicted, no power figure
    v = judge_claim(claim, stored)
    assert v["verdict"] == "contradicted" and not v["resolved_against"]
    assert v["pairs"][1]["direction"] == "reversed" and v["pairs"][1]["queries_80"] is None
    assert comparison(stored, "loc", "y", "x")["mean_diff"] == -0.2 and comparison(stored, "ppi", "x", "y") is None


def test_paper_claims_are_the_papers():
    by_name = {c.name: c for c in PAPER_CLAIMS}
    assert by_name["loc_order"].text == "sgs > bootstrapping > zero_shot > stella"
    assert by_name["ppi_order"].text == by_name["gpi_order"].text == "sgs < bootstrapping < zero_shot < stella"
    assert set(by_name["hr5_stella_best"].pairs) == {("stella", m) for m in ("zero_shot", "bootstrapping", "sgs")}
    assert set(by_name["exposure_flattened"].pairs) == {(m, "zero_shot") for m in ("bootstrapping", "sgs", "stella")}
    assert all(c.source.startswith("§5") for c in PAPER_CLAIMS)


def test_a_doctored_run_flips_the_verdict():
    """Verdicts come from the observations: swapping two methods' labels reverses the LOC ordering's verdict."""
    honest = judge_claims(evaluate(simulated_run(), n_bootstrap=100)["comparisons"])
    assert honest["loc_order"]["verdict"] == "reproduced"
    assert honest["ppi_order"]["verdict"] == "reproduced"
    assert honest["exposure_flattened"]["verdict"] == "reproduced"
    doctored = judge_claims(
        evaluate(simulated_run(names={"sgs": "stella", "stella": "sgs"}), n_bootstrap=100)["comparisons"]
    )
    assert doctored["loc_order"]["verdict"] == "contradicted" and doctored["loc_order"]["resolved_against"]
    few = judge_claims(
        evaluate(simulated_run(n_queries=3), n_bootstrap=100)["comparisons"]
    )  # 3 queries resolve nothing
    pairs = few["loc_order"]["pairs"]
    assert not any(p["resolved"] for p in pairs)
    assert all((p["queries_80"] is not None) == (p["direction"] == "as claimed") for p in pairs if p["mean_diff"])


# ----------------------------------------------------------------------------------------------- output


def test_deterministic_json_and_printed_table(tmp_path, capsys):
    rows = simulated_run(n_queries=20)
    a, b = dumps_metrics(evaluate(rows)), dumps_metrics(evaluate(rows))
    assert a == b
    assert evaluate(rows, seed=1)["comparisons"]["loc"] != json.loads(a)["comparisons"]["loc"]
    path = tmp_path / "obs.jsonl"
    write_observations(path, rows)
    assert main(["evaluate", str(path), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "paired comparisons" in out and "loc_order" not in out  # evaluate judges no claim of the paper
    assert out.index("paired comparisons") > out.index("zero_shot:")
    assert main(["evaluate", str(path), "--bootstrap", "50", "--permutations", "0"]) == 0
    assert "paired comparisons" not in capsys.readouterr().out
    stored = json.loads((tmp_path / "metrics.json").read_text())
    assert stored["comparisons"] == {} and "claims" not in stored
    assert main(["evaluate", str(path), "--permutations", "-1"]) == 2
    err = capsys.readouterr().err
    assert "--permutations: expected an integer >= 0" in err and err.count("\n") == 1


def test_schema_1_files_still_read():
    res = evaluate(simulated_run(n_queries=4), n_bootstrap=0, n_permutations=0)
    old = {
        "schema_version": 1,
        "settings": {k: v for k, v in res["settings"].items() if k != "permutations"},
        "methods": res["methods"],
    }
    assert format_comparisons(old) == ""
    values = {m: per_query_from_block(b) for m, b in old["methods"].items()}
    assert set(compare_methods(values, n_bootstrap=0)) >= {"hr@5", "loc"}
