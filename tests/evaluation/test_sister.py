"""The sister measures (``invarirank.evaluation.sister``): known answers worked by hand (the metrics chapter's
examples), scipy where it has the statistic (Spearman's ρ, the Jaccard distance, the standard deviation), and a
brute-force enumeration of triads; ``metrics.json`` does not carry them."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from scipy.spatial.distance import jaccard
from scipy.stats import spearmanr

from invarirank.evaluation import evaluate, sister_measures
from invarirank.evaluation.sister import query_sister_measures


def rows(outputs, relevant=("a",), inputs=None):
    inputs = inputs or outputs
    return [
        {
            "query_id": "q",
            "method": "m",
            "permutation": t,
            "input": list(i),
            "output": list(o),
            "relevant": list(relevant),
        }
        for t, (i, o) in enumerate(zip(inputs, outputs))
    ]


def test_known_answers_position_follower():
    # abc and cba returned unchanged: the chapter's worked example 1
    got = query_sister_measures(["abc", "cba"], ["a"], k=1)
    assert got["spearman"] == -1.0  # reverses
    assert got["jaccard@1"] == 0.0  # {a} vs {c}
    assert got["first_place"] == 0.0
    assert got["relevant_rank_mean"] == 2.0 and got["relevant_rank_sd"] == 1.0  # ranks 1 and 3
    assert got["flip_rate"] == 1.0  # every pair flips
    assert got["intransitive_triads"] is None  # every pair split 1:1, no decided triad


def test_known_answers_consistent_and_cycle():
    steady = query_sister_measures(["abc"] * 4, ["b"], k=1)
    assert steady == {
        "spearman": 1.0,
        "jaccard@1": 1.0,
        "first_place": 1.0,
        "relevant_rank_mean": 2.0,
        "relevant_rank_sd": 0.0,
        "flip_rate": 0.0,
        "intransitive_triads": 0.0,
    }
    cycle = query_sister_measures(["abc", "bca", "cab"], ["a"], k=1)  # worked example 3: a ≻ b ≻ c ≻ a by 2/3
    assert cycle["intransitive_triads"] == 1.0
    assert cycle["spearman"] == pytest.approx(-0.5)  # each pair of rows: ρ = 1 - 6·6/24 = -1/2
    assert cycle["first_place"] == 0.0 and cycle["flip_rate"] == 1.0
    assert cycle["relevant_rank_mean"] == 2.0 and cycle["relevant_rank_sd"] == pytest.approx(np.sqrt(2 / 3))


def brute(outputs, relevant, k):
    """The definitions, one pair or triad at a time, with scipy where it has the statistic."""
    items = sorted(outputs[0])
    ranks = [[out.index(x) for x in items] for out in outputs]
    pairs = list(itertools.combinations(range(len(outputs)), 2))
    rho = np.mean([spearmanr(ranks[s], ranks[t]).statistic for s, t in pairs])
    top = [[r < k for r in rk] for rk in ranks]
    jac = np.mean([1 - jaccard(top[s], top[t]) for s, t in pairs])
    first = np.mean([outputs[s][0] == outputs[t][0] for s, t in pairs])
    flips = np.mean(
        [
            len({ranks[t][i] < ranks[t][j] for t in range(len(outputs))}) == 2
            for i, j in itertools.combinations(range(len(items)), 2)
        ]
    )
    M = len(outputs)
    beats = {
        (i, j): sum(rk[i] < rk[j] for rk in ranks) * 2 > M
        for i in range(len(items))
        for j in range(len(items))
        if i != j
    }
    cyclic = decided = 0
    for a, b, c in itertools.combinations(range(len(items)), 3):
        if all(beats[(x, y)] or beats[(y, x)] for x, y in ((a, b), (b, c), (a, c))):
            decided += 1
            cyclic += (beats[(a, b)] and beats[(b, c)] and beats[(c, a)]) or (
                beats[(b, a)] and beats[(c, b)] and beats[(a, c)]
            )
    rel = [np.array([rk[items.index(x)] + 1 for rk in ranks]) for x in relevant if x in items]
    return {
        "spearman": rho,
        f"jaccard@{k}": jac,
        "first_place": first,
        "flip_rate": flips,
        "intransitive_triads": cyclic / decided if decided else None,
        "relevant_rank_mean": np.mean([r.mean() for r in rel]),
        "relevant_rank_sd": np.mean([np.std(r) for r in rel]),
    }


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_scipy_and_brute_force(seed):
    rng = random.Random(seed)
    K, M = rng.randint(4, 9), rng.randint(2, 12)
    base = [f"i{j}" for j in range(K)]
    outputs = []
    for _ in range(M):  # a noisy consensus, so that values are neither all 0 nor all 1
        keyed = sorted(base, key=lambda x: int(x[1:]) + rng.gauss(0, 2))
        outputs.append(keyed)
    relevant = rng.sample(base, 2)
    got = query_sister_measures(outputs, relevant, k=3)
    want = brute(outputs, relevant, 3)
    for name, value in want.items():
        assert got[name] == pytest.approx(value, abs=1e-12) if value is not None else got[name] is None, name


def test_per_method_overall_means_and_metrics_json_unchanged():
    rs = rows(["abc", "cba"]) + [
        {**r, "query_id": "q2"} for r in rows(["abc", "abc"], relevant=("z",))
    ]  # q2's relevant item is not a candidate
    out = sister_measures(rs, k=1)
    overall = out["methods"]["m"]["overall"]
    assert overall["spearman"] == 0.0  # mean of -1 and 1
    assert overall["relevant_rank_mean"] == 2.0  # q2 has none: left out
    assert overall["queries"] == 2 and out["settings"] == {"k": 1}
    metrics = evaluate(rs, n_bootstrap=0, ks=(1,), exposure_k=1)
    assert not any("spearman" in str(k) or "jaccard" in str(k) for k in metrics["methods"]["m"]["overall"])
