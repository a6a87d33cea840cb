"""Real-model smoke run: SmolLM2-135M span scorer, 2 ML-100K queries, K = 5, M = 2, 1 calibration query,
all four methods, computed once; a cache-off rescore of 6 of its passes and a one-query noise floor (slow: loads a
real model; about a minute on 2 idle CPU cores)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from invarirank._io import read_json
from invarirank.evaluation import read_observations
from invarirank.runner import RunConfig, load_queries, make_run_scorer, run_experiment

pytestmark = pytest.mark.slow

METHODS = ("zero_shot", "bootstrapping", "sgs", "stella")


def _config(base, name, **kw) -> RunConfig:
    settings = dict(
        dataset="ml-100k",
        retriever="als",
        K=5,
        M=2,
        n_queries=2,
        scorer="span",
        model="smollm2-135m",
        calibration_queries=1,
        calibration_repeats=1,
        n_bootstrap=0,
        seed=3,
        out=str(base / name),
        cache_dir=str(base / "cache"),
    )  # a fresh pass cache: the first run really computes
    settings.update(kw)
    return RunConfig.from_mapping(settings)


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """One real run (2 queries, the four methods) with a fresh pass cache, so that it really computes."""
    pytest.importorskip("torch")
    base = tmp_path_factory.mktemp("real-run")
    cfg = _config(base, "a")
    queries = load_queries(cfg, progress=False)
    scorer = make_run_scorer(cfg)
    first = run_experiment(cfg, progress=False, queries=queries, scorer=scorer)
    return {"base": base, "cfg": cfg, "queries": queries, "scorer": scorer, "a": first}


def test_real_run_writes_a_valid_run_folder(real):
    run = real["base"] / "a"
    rows = read_observations(run / "observations.jsonl")  # validates the public schema
    assert {r["method"] for r in rows} == set(METHODS)
    assert len(rows) == 2 * 2 * 4 and all(r["k"] == 5 and r["model"] == "smollm2-135m" for r in rows)
    metrics = real["a"].metrics
    assert set(metrics["methods"]) == set(METHODS)
    for block in metrics["methods"].values():
        assert block["overall"]["rows"] == 4 and block["overall"]["loc"] is not None
    man = read_json(run / "manifest.json")
    assert man["model"]["scorer"] == "span" and man["model"]["weights_sha256"]
    p = man["passes"]
    assert p["shared_cache_hits"] >= 5 * 4  # 3 shared first passes + 2 shared shuffles per order
    assert p["calibration"]["5"]["passes"] >= 5
    assert read_json(run / "run.json")["tokens_computed"] > 0
    for r in rows:
        lo, hi = {"zero_shot": (1, 1), "bootstrapping": (3, 3), "sgs": (5, 5), "stella": (4, 10)}[r["method"]]
        assert lo <= r["passes"] <= hi


def test_first_pass_of_every_method_has_the_zero_shot_scores(real):
    rows = read_observations(real["base"] / "a" / "observations.jsonl")
    by_order = {}
    for r in rows:
        by_order.setdefault((r["query_id"], r["permutation"]), {})[r["method"]] = r
    for methods in by_order.values():
        zs = methods["zero_shot"]
        for name in METHODS:
            assert methods[name]["input"] == zs["input"]
            assert methods[name]["scores"] == zs["scores"]
    # ... and they are the scores of that very order: rescore one order with no cache at all
    from invarirank.llm import make_scorer

    fresh = make_scorer("span", "smollm2-135m", pass_cache=False)
    r = rows[0]
    query = next(q for q in real["queries"].test if q.query_id == r["query_id"])
    items = {it.item_id: it for it in query.candidates}
    direct = fresh.score(query, [items[i] for i in r["input"]]).scores
    assert np.allclose(direct, r["scores"], atol=1e-4)


def test_span_scores_are_finite_and_negative(real):
    rows = read_observations(real["base"] / "a" / "observations.jsonl")
    scores = [s for r in rows for s in r["scores"]]
    assert scores and all(math.isfinite(s) and s < 0 for s in scores)


def test_a_cache_off_rescore_gives_the_same_rows(real):
    """A few passes again (one query, zero-shot and bootstrapping: 6 passes) by a scorer without the pass cache,
    so the model really recomputes them: the rows are exactly the run's (so its files would be the same bytes)."""
    from invarirank.llm.factory import make_scorer

    fresh = make_scorer("span", "smollm2-135m", seed=real["cfg"].seed, pass_cache=False)
    assert fresh.pass_cache is None
    one = dataclasses.replace(real["queries"], test=real["queries"].test[:1])
    methods = ["zero_shot", "bootstrapping"]
    res = run_experiment(_config(real["base"], "rescore", methods=methods), progress=False, queries=one, scorer=fresh)
    assert res.manifest["passes"]["scorer_calls"] == 2 * (1 + 2)  # M = 2 orders, 3 distinct passes each
    qid = one.test[0].query_id
    mine = [
        r
        for r in read_observations(real["base"] / "a" / "observations.jsonl")
        if r["query_id"] == qid and r["method"] in methods
    ]
    assert len(mine) == 4 and res.rows() == mine


def test_noise_floor_on_the_cpu(real):
    # one query, M = 2 copies of one order; STELLA is left out to keep the CPU time small (its shuffles are
    # seeded like the others', so it adds no new source of nondeterminism)
    cfg = _config(real["base"], "nf", noise_floor=True, n_queries=1, methods=["zero_shot", "bootstrapping", "sgs"])
    scorer = make_run_scorer(cfg)  # pass cache off: every copy is recomputed
    assert scorer.pass_cache is None
    res = run_experiment(cfg, progress=False, scorer=scorer)
    assert res.manifest["passes"]["scorer_calls"] == 2 * (1 + 2 + 4)  # both copies really scored
    for method, block in res.metrics["methods"].items():
        assert block["overall"]["loc"] == pytest.approx(1.0), method
        assert block["overall"]["gpi"] == pytest.approx(0.0), method
