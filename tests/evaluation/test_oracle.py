"""The fast evaluator against the literal one (tests/support/literal_evaluator.py) and hypothesis properties of §5."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invarirank.evaluation import evaluate, gpi, gpi_exact, loc, win_counts
from invarirank.evaluation._consistency import contradiction_mass, gpi_local_search, swap_deltas
from invarirank.evaluation._kemeny import kemeny_mass
from invarirank.evaluation.engine import check_settings, evaluate_rows
from invarirank.evaluation.observations import validate_rows
from tests.support.evaluation_families import families
from tests.support.literal_evaluator import literal_evaluate, literal_local_search, loc_identity


def examples(n: int) -> settings:
    return settings(
        max_examples=n, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )


def close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def by_query(rows):
    out = {}
    for r in rows:
        out.setdefault((r["method"], r["query_id"]), []).append(r)
    return out


@examples(500)
@given(
    rows=families(),
    ks=st.sampled_from([(1, 5, 10), (1, 3, 20), (2,)]),
    exposure_k=st.integers(1, 6),
    buckets=st.sampled_from([1, 2, 3, 3, 4, 5, 9, 12]),
)
def test_fast_equals_literal(rows, ks, exposure_k, buckets):
    lit = literal_evaluate(rows, ks=ks, exposure_k=exposure_k, buckets=buckets)
    # the engine's arithmetic on every setting, also those the front door refuses for these lists (one bucket, an
    # exposure cut-off at or above K): validated rows and settings straight into evaluate_rows
    settings = {**check_settings(ks, exposure_k, 2, None, 0, 0), "buckets": buckets}
    fast = evaluate_rows(validate_rows(enumerate(rows, 1), "<rows>"), settings)
    assert list(fast["methods"]) == list(lit["methods"])
    groups = by_query(rows)
    for method, block in lit["methods"].items():
        fb = fast["methods"][method]
        assert list(fb["per_query"]) == list(block["per_query"])
        for qid, d in block["per_query"].items():
            fq = fb["per_query"][qid]
            for key, value in d.items():
                if key in ("gpi_mass", "gpi_order"):
                    continue
                assert close(fq[key], value), (method, qid, key, fq[key], value)
            # GPI: the same integer mass → the same float, bit for bit, and the same final order
            assert fq["gpi"] == d["gpi"]
            if d["gpi"] is not None:
                value, order = gpi([r["output"] for r in groups[(method, qid)]], return_order=True)
                assert order == d["gpi_order"] and value == d["gpi"]
        for key, value in block["overall"].items():
            got = fb["overall"][key]
            if isinstance(value, list):
                assert len(got) == len(value) and all(close(x, y) for x, y in zip(got, value)), key
            else:
                assert close(got, value), (key, got, value)


@examples(150)
@given(rows=families(max_k=8, max_m=12, max_queries=2, max_methods=1))
def test_gpi_bounds_and_exact_kemeny(rows):
    fast = evaluate(rows, n_bootstrap=0, exact_kemeny_max_k=8)
    for block in fast["methods"].values():
        for d in block["per_query"].values():
            if d["gpi"] is None:
                assert d["gpi_exact"] is None and d["loc"] is None
                continue
            assert 0.0 <= d["gpi_exact"] <= d["gpi"] <= 0.5
        ov = block["overall"]
        if ov["gpi"] is not None:
            assert ov["gpi_exact"] <= ov["gpi"] <= 0.5
            assert 0 <= ov["gpi_suboptimal_queries"] <= ov["gpi_queries"]


def brute_force_mass(W: np.ndarray) -> int:
    K = W.shape[0]
    return min(
        sum(int(W[o[b], o[a]]) for a in range(K) for b in range(a + 1, K)) for o in itertools.permutations(range(K))
    )


@st.composite
def win_matrices(draw, max_k=7):
    """Integer win counts of M rows with W + Wᵀ = M off the diagonal (any such matrix, not only from rankings)."""
    K = draw(st.integers(1, max_k))
    M = draw(st.integers(1, 20))
    W = np.zeros((K, K), dtype=np.int64)
    for i, j in itertools.combinations(range(K), 2):
        W[i, j] = draw(st.integers(0, M))
        W[j, i] = M - W[i, j]
    return W


@examples(120)
@given(W=win_matrices())
def test_exact_kemeny_equals_brute_force(W):
    assert int(kemeny_mass(W[None])[0]) == brute_force_mass(W)
    order, mass = gpi_local_search(W[None])
    assert mass[0] >= kemeny_mass(W[None])[0]
    assert mass[0] == contradiction_mass(W[None], order)[0]


@examples(60)
@given(rows=families(max_k=7, max_m=10, max_queries=1, max_methods=1))
def test_exact_kemeny_of_rankings_equals_brute_force(rows):
    value = gpi_exact([r["output"] for r in rows])
    items, W = win_counts([r["output"] for r in rows])
    K, M = len(items), len(rows)
    if M < 2:
        assert value is None
    else:
        assert value == brute_force_mass(W) / (M * (K * (K - 1) // 2))


@examples(100)
@given(W=win_matrices(max_k=12), data=st.data())
def test_swap_delta_formula(W, data):
    """Δ(a, b) from the prefix-sum formula equals recomputing M·D after the swap, for every a < b."""
    K = W.shape[0]
    order = np.array(data.draw(st.permutations(list(range(K)))), dtype=np.int64)
    delta = swap_deltas(W[None], order[None])[0]
    before = contradiction_mass(W[None], order[None])[0]
    for a in range(K):
        for b in range(K):
            if a < b:
                o = order.copy()
                o[a], o[b] = o[b], o[a]
                assert delta[a, b] == contradiction_mass(W[None], o[None])[0] - before
            else:
                assert delta[a, b] == 0


@examples(150)
@given(W=win_matrices(max_k=10))
def test_local_search_matches_literal_on_any_win_matrix(W):
    """The vectorised search follows the literal rule step for step on arbitrary integer win counts."""
    K = W.shape[0]
    items = [f"i{n:02d}" for n in range(K)]  # index order = code-point order
    Wd = {items[i]: {items[j]: int(W[i, j]) for j in range(K) if j != i} for i in range(K)}
    lit_mass, lit_order = literal_local_search(items, Wd)
    order, mass = gpi_local_search(W[None])
    assert int(mass[0]) == lit_mass and [items[i] for i in order[0]] == lit_order


@examples(150)
@given(rows=families(max_k=10, max_m=15, max_queries=2, max_methods=2))
def test_invariant_to_order_preserving_renaming(rows):
    rename = {}
    for r in rows:
        for x in r["input"] + r["relevant"]:
            rename[x] = "id:" + x  # a common prefix keeps code-point order
    renamed = [
        {
            **r,
            "input": [rename[x] for x in r["input"]],
            "output": [rename[x] for x in r["output"]],
            "relevant": [rename[x] for x in r["relevant"]],
        }
        for r in rows
    ]
    a = evaluate(rows, n_bootstrap=50, exact_kemeny_max_k=8)
    b = evaluate(renamed, n_bootstrap=50, exact_kemeny_max_k=8)
    assert a == b


@examples(100)
@given(rows=families(min_k=1, max_k=12, max_m=6), k=st.integers(1, 6))
def test_position_follower_exposure(rows, k):
    follower = [{**r, "output": list(r["input"])} for r in rows]
    # exposure cut-offs at or above K included (the front door refuses them): straight into the engine
    settings = {**check_settings((1, 5, 10), 1, 2, None, 0, 0), "exposure_k": k}
    res = evaluate_rows(validate_rows(enumerate(follower, 1), "<rows>"), settings)
    for block in res["methods"].values():
        e = block["overall"][f"exposure@{k}"]
        assert e == [1.0 if p < k else 0.0 for p in range(len(e))]


@examples(150)
@given(rows=families(max_k=10, max_m=20, max_queries=1, max_methods=1))
def test_loc_identity(rows):
    outputs = [r["output"] for r in rows]
    value = loc(outputs)
    if len(rows) < 2:
        assert value is None
        return
    assert close(value, float(loc_identity(rows)))
    # the closed form is exact up to one rounding
    items, W = win_counts(outputs)
    M, K = len(rows), len(items)
    disc = sum(int(W[i, j]) * int(W[j, i]) for i, j in itertools.combinations(range(K), 2))
    exact = 1 - Fraction(2 * disc, (M * (M - 1) // 2) * (K * (K - 1) // 2))
    assert value == float(exact)
