"""Reference rows (first-stage order, random order): exact expectations against simulation, perfect first-stage
consistency, determinism, orientation of the comparisons, and the first-stage file's checks."""

from __future__ import annotations

import gzip
import itertools
import json

import numpy as np
import pytest

from invarirank.errors import InvariRankError
from invarirank.evaluation import evaluate, hit_rate, ndcg, recall, reciprocal_rank
from invarirank.evaluation._references import random_expectations, read_first_stage, write_first_stage
from tests.support import ROOT


@pytest.mark.parametrize("K,g,n", [(5, 1, 1), (5, 2, 4), (6, 3, 3), (4, 0, 2), (7, 7, 9)])
def test_random_expectations_are_the_exact_average_over_all_rankings(K, g, n):
    items = [f"i{j}" for j in range(K)]
    truth = items[:g] + [f"x{j}" for j in range(n - g)]  # n - g relevant ids that are not candidates
    ks = [1, 3, 5, 10]
    perms = list(itertools.permutations(items))
    want = random_expectations(K, g, n, ks)
    for k in ks:
        assert want[f"hr@{k}"] == pytest.approx(np.mean([hit_rate(p, truth, k) for p in perms]), abs=1e-12)
        if n:
            assert want[f"ndcg@{k}"] == pytest.approx(np.mean([ndcg(p, truth, k) for p in perms]), abs=1e-12)
            assert want[f"recall@{k}"] == pytest.approx(np.mean([recall(p, truth, k) for p in perms]), abs=1e-12)
        assert want[f"mrr@{k}"] == pytest.approx(np.mean([reciprocal_rank(p, truth, k) for p in perms]), abs=1e-12)


def test_random_expectations_reject_impossible_counts():
    with pytest.raises(InvariRankError, match="random reference"):
        random_expectations(5, 6, 6, [5])


def _rows(n_queries=6, K=6, M=6, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        items = [f"q{q}i{j}" for j in range(K)]
        rel = [items[0], items[3], "elsewhere"]
        for t in range(M):
            inp = [items[i] for i in rng.permutation(K)]
            for method, out in (("a", sorted(inp)), ("b", inp[::-1])):  # a ignores the order, b follows it
                rows.append(
                    {
                        "schema_version": 1,
                        "query_id": f"u{q}",
                        "method": method,
                        "permutation": t,
                        "input": inp,
                        "output": out,
                        "relevant": rel,
                        "model": "m",
                        "dataset": "d",
                        "k": K,
                    }
                )
    return rows


def test_first_stage_reference_is_perfectly_consistent_and_as_effective_as_its_ranking():
    rows = _rows()
    fs = {f"u{q}": [f"q{q}i{j}" for j in range(6)] for q in range(6)}  # relevant at ranks 1 and 4
    m = evaluate(rows, n_bootstrap=50, n_permutations=200, first_stage=fs)
    ref = m["references"]["first_stage"]["overall"]
    assert ref["ppi"] == 0.0 and ref["gpi"] == 0.0 and ref["loc"] == 1.0
    assert ref["hr@1"] == 1.0
    assert ref["ndcg@5"] == pytest.approx(ndcg(fs["u0"], ["q0i0", "q0i3", "elsewhere"], 5))
    # a ignores the presented order too: no difference in consistency; b is worse
    comp = m["references"]["first_stage"]["comparisons"]
    assert comp["loc"]["a"]["mean_diff"] == pytest.approx(0.0)
    assert comp["loc"]["b"]["mean_diff"] < 0  # method - reference
    assert set(m["methods"]) == {"a", "b"}  # references stay out of "methods"


def test_random_reference_is_seeded_and_consistency_is_near_its_expectation():
    rows = _rows(n_queries=8, K=6, M=8)
    m1 = evaluate(rows, n_bootstrap=50, n_permutations=200, reference_replicates=10)
    m2 = evaluate(rows, n_bootstrap=50, n_permutations=200, reference_replicates=10)
    assert json.dumps(m1) == json.dumps(m2)
    r = m1["references"]["random"]["overall"]
    assert "first_stage" not in m1["references"]
    assert r["loc"] == 0.0  # random outputs agree with nothing: exactly, in expectation
    assert r["hr@1"] == pytest.approx(2 / 6)  # two relevant candidates among six
    m0 = evaluate(rows, n_bootstrap=0, n_permutations=0, reference_replicates=0)
    assert m0["references"] == {}


def test_first_stage_rankings_must_be_permutations_of_the_candidates():
    rows = _rows(n_queries=1)
    with pytest.raises(InvariRankError, match="first-stage order of query 'u0'"):
        evaluate(rows, n_bootstrap=0, n_permutations=0, first_stage={"u0": ["q0i0"]})
    with pytest.raises(InvariRankError, match="no ranking for query 'u0'"):
        evaluate(rows, n_bootstrap=0, n_permutations=0, first_stage={})


def test_first_stage_file_round_trip_and_errors(tmp_path):
    p = tmp_path / "first_stage.jsonl.gz"
    write_first_stage(p, {"u1": ["a", "b"], "u2": ["c"]})
    assert read_first_stage(p) == {"u1": ["a", "b"], "u2": ["c"]}
    assert gzip.decompress(p.read_bytes()).decode().count("\n") == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "u1", "ranking": ["a"]}\n{"query_id": "u1", "ranking": ["a"]}\n')
    with pytest.raises(InvariRankError, match="bad.jsonl:2: query 'u1' appears twice"):
        read_first_stage(bad)
    bad.write_text('{"query_id": "u1", "rankin": ["a"]}\n')
    with pytest.raises(InvariRankError, match="bad.jsonl:1: expected"):
        read_first_stage(bad)


def test_the_report_shows_each_reference_and_each_method_against_it():
    from invarirank.evaluation.report import format_references, format_table

    rows = _rows()
    fs = {f"u{q}": [f"q{q}i{j}" for j in range(6)] for q in range(6)}
    m = evaluate(rows, n_bootstrap=50, n_permutations=200, first_stage=fs, reference_replicates=5)
    text = format_references(m)
    assert "reference: first-stage order" in text and "reference: random order" in text
    lines = text.splitlines()
    assert sum(line.lstrip().startswith(("a ", "b ")) for line in lines) == 4  # two methods x two references
    assert text in format_table(m)
    assert format_references({**m, "references": {}}) == ""


def test_exposure_is_not_defined_when_no_list_is_longer_than_the_cut_off():
    short = evaluate(_rows(K=5), exposure_k=5, n_bootstrap=20, n_permutations=100, reference_replicates=0)
    ov = short["methods"]["a"]["overall"]
    assert ov["exposure_mad@5"] is None and ov["exposure_maxdev@5"] is None and "exposure_mad@5" not in ov["ci"]
    assert "exposure_mad@5" not in short["comparisons"]
    longer = evaluate(_rows(K=6), exposure_k=5, n_bootstrap=20, n_permutations=100, reference_replicates=0)
    assert longer["methods"]["a"]["overall"]["exposure_mad@5"] is not None


def test_the_committed_k5_run_re_evaluates_to_its_own_metrics(tmp_path):
    import shutil

    from invarirank.store import refresh_metrics

    run = ROOT / "results" / "evidence" / "smollm2-span-k5"
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    refresh_metrics(copy)
    assert (copy / "metrics.json").read_bytes() == (run / "metrics.json").read_bytes()


def test_the_random_order_reads_the_same_positions_from_the_methods_as_from_its_rows():
    """The engine hands the random order the presented positions it mapped for the methods (relabelled to each
    query's first row); the block must be the one computed from the rows alone, to the bit, whatever the lists."""
    from invarirank.evaluation._references import random_block, reference_inputs
    from invarirank.evaluation.engine import _evaluate_method, check_settings

    rows = _rows(n_queries=7, K=7, M=5, seed=3) + _rows(n_queries=3, K=4, M=3, seed=4)[:18]  # mixed K, M
    for r in rows[-18:]:
        r["query_id"] += "-short"
    grouped: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        grouped.setdefault(r["method"], {}).setdefault(r["query_id"], []).append(r)
    st = check_settings((1, 5), 3, 3, 8, 30, 5, 50)
    presented: dict[str, np.ndarray] = {}
    for queries in grouped.values():
        _evaluate_method(queries, st, presented)
    inputs = reference_inputs(grouped)
    assert set(presented) == set(inputs)
    with_positions = random_block(inputs, st, replicates=4, presented=presented)
    from_rows = random_block(inputs, st, replicates=4)
    assert json.dumps(with_positions[0]) == json.dumps(from_rows[0])
    assert all(np.array_equal(with_positions[1].values[k], v, equal_nan=True) for k, v in from_rows[1].values.items())
