"""The random order's PPI, GPI and LOC (invarirank.evaluation._random_reference): exact against the average over every
possible output, and within Monte-Carlo error of the estimator it replaced (M random outputs per query and replicate,
evaluated like a method's rows)."""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest

from invarirank.evaluation import evaluate
from invarirank.evaluation._random_reference import (
    _sorting_network,
    expected_gpi,
    expected_ppi,
    expected_range,
    gpi_bound_expectation,
)


def _rows(query, inputs, outputs, method="m"):
    return [
        {"query_id": query, "method": method, "permutation": t, "input": list(i), "output": list(o), "relevant": ["a"]}
        for t, (i, o) in enumerate(zip(inputs, outputs))
    ]


@pytest.mark.parametrize("sizes", [(1, 1), (2, 3), (1, 4, 2), (5, 5, 1), (3, 1, 2, 6), (7, 7)])
def test_expected_range_is_the_average_over_every_count(sizes):
    want = 0.0
    for wins in itertools.product(*(range(n + 1) for n in sizes)):
        p = math.prod(math.comb(n, w) / 2**n for n, w in zip(sizes, wins))
        rates = [w / n for n, w in zip(sizes, wins)]
        want += p * (max(rates) - min(rates))
    assert expected_range(sizes) == pytest.approx(want, abs=1e-13)


@pytest.mark.parametrize("n", range(1, 17))
def test_the_sorting_network_sorts_every_zero_one_input(n):
    # the 0-1 principle: a comparator network that sorts every 0/1 input sorts every input
    cols = list(np.array(list(itertools.product((0, 1), repeat=n)), dtype=np.uint8).T)
    for i, j in _sorting_network(n):
        assert i < j < n
        cols[i], cols[j] = np.minimum(cols[i], cols[j]), np.maximum(cols[i], cols[j])
    assert (np.diff(np.stack(cols, axis=1).astype(int), axis=1) >= 0).all()


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_bit_counts_without_numpys_bitwise_count(monkeypatch, dtype):
    # numpy before 2.0 has no bitwise_count: the byte table gives the same counts
    from invarirank.evaluation import _pair_cells

    words = np.random.default_rng(0).integers(0, np.iinfo(dtype).max, size=(3, 50), dtype=dtype, endpoint=True)
    words[0, :3] = [0, np.iinfo(dtype).max, 1]
    want = np.array([[bin(int(x)).count("1") for x in row] for row in words], dtype=np.uint8)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    got = _pair_cells.bit_counts(words[:, ::2])
    assert got.dtype == np.uint8 and np.array_equal(got, want[:, ::2])


@pytest.mark.parametrize(("K", "M", "buckets"), [(6, 70, 3), (5, 130, 2), (7, 9, 4), (4, 5, 1)])
def test_expected_ppi_is_the_mean_of_each_pairs_expected_spread(K, M, buckets):
    # the rows of each pair's (bucket of i, bucket of j) cells counted one by one (M above 64: rows as several words)
    rng = np.random.default_rng(K * M)
    positions = np.stack([np.stack([rng.permutation(K) for _ in range(M)]) for _ in range(3)])
    positions[0] = positions[0, :1]  # one query shown in one order only
    got = expected_ppi(positions, buckets)
    for g in range(3):
        spreads = []
        for i, j in itertools.combinations(range(K), 2):
            cells: dict[tuple[int, int], int] = {}
            for row in positions[g]:
                a, c = (min(int(row[x]) * buckets // K, buckets - 1) for x in (i, j))
                cells[a, c] = cells.get((a, c), 0) + 1
            if len(cells) >= 2:
                spreads.append(expected_range(tuple(sorted(cells.values()))))
        if spreads:
            assert got[g] == pytest.approx(sum(spreads) / len(spreads), rel=1e-12)
        else:
            assert np.isnan(got[g])


def test_gpi_bound_expectation_known_answers():
    # E[min(B, M - B)] / M, B ~ Binomial(M, 1/2): M = 2: 1/2 of 2; M = 3: 6/8 of 3; M = 4: 20/16 of 4
    assert gpi_bound_expectation(5, 2) == 0.25
    assert gpi_bound_expectation(5, 3) == 0.25
    assert gpi_bound_expectation(9, 4) == 0.3125


@pytest.mark.parametrize("K,M,buckets", [(3, 4, 2), (4, 3, 3)])
def test_the_random_order_equals_the_average_over_every_output(K, M, buckets):
    """Every tuple of M outputs of one query with fixed presented orders, evaluated as a method: PPI and LOC equal
    the random order's exactly; GPI is within 5 Monte-Carlo standard errors of the exact average."""
    items = [f"i{j}" for j in range(K)]
    rng = np.random.default_rng(K * 10 + M)
    inputs = [[items[x] for x in rng.permutation(K)] for _ in range(M)]
    rows = []
    for n, outs in enumerate(itertools.product(itertools.permutations(items), repeat=M)):
        rows += _rows(f"c{n}", inputs, outs)
    every = evaluate(rows, buckets=buckets, n_bootstrap=0, n_permutations=0, reference_replicates=0)
    per = every["methods"]["m"]["per_query"].values()
    truth = {name: np.mean([d[name] for d in per]) for name in ("ppi", "gpi", "loc")}

    draws = 4000
    ref = evaluate(_rows("q", inputs, inputs), buckets=buckets, n_bootstrap=0, n_permutations=0)
    got = ref["references"]["random"]["per_query"]["q"]
    assert got["ppi"] == pytest.approx(truth["ppi"], abs=1e-12)
    assert got["loc"] == 0.0 and truth["loc"] == pytest.approx(0.0, abs=1e-12)
    # GPI: the bound's part is exact, the excess is estimated; its spread over every output gives the error
    P = K * (K - 1) // 2
    bound = []
    for n in range(len(per)):
        outs = [r["output"] for r in rows[n * M : (n + 1) * M]]
        above = [sum(o.index(a) < o.index(b) for o in outs) for a, b in itertools.combinations(items, 2)]
        bound.append(sum(min(w, M - w) for w in above) / (M * P))
    assert np.mean(bound) == pytest.approx(gpi_bound_expectation(K, M), abs=1e-12)
    excess = np.array([d["gpi"] for d in per]) - np.array(bound)
    se = excess.std() / math.sqrt(draws)
    estimate = expected_gpi(K, M, draws, 0)
    assert abs(estimate - truth["gpi"]) <= 5 * se + 1e-12, (estimate, truth["gpi"], se)
    assert excess.std() < 0.5 * np.std([d["gpi"] for d in per])  # the bound takes most of the spread away


def _old_estimator(rows, replicates, seed=0, buckets=3):
    """The estimator this module replaced: per query and replicate, M uniformly random outputs seeded from
    (seed, replicate, crc32(query id)), evaluated as a method's rows. Returns {metric: Q x replicates}."""
    by_query: dict[str, list[dict]] = {}
    for r in rows:
        by_query.setdefault(r["query_id"], []).append(r)
    out = {name: np.zeros((len(by_query), replicates)) for name in ("ppi", "gpi", "loc")}
    for rep in range(replicates):
        draw = []
        for qid, qrows in by_query.items():
            rng = np.random.default_rng(np.random.SeedSequence([seed, rep, zlib.crc32(qid.encode("utf-8"))]))
            draw += [{**r, "output": [r["input"][i] for i in rng.permutation(len(r["input"]))]} for r in qrows]
        m = evaluate(draw, buckets=buckets, n_bootstrap=0, n_permutations=0, reference_replicates=0)
        for q, qid in enumerate(by_query):
            for name in out:
                out[name][q, rep] = m["methods"]["m"]["per_query"][qid][name]
    return out


def test_the_random_order_is_within_monte_carlo_error_of_the_old_estimator():
    rng = np.random.default_rng(3)
    rows = []
    for q in range(30):
        K = 8 if q % 2 else 12
        items = [f"q{q}x{j}" for j in range(K)]
        inputs = [[items[x] for x in rng.permutation(K)] for _ in range(10)]
        rows += _rows(f"u{q}", inputs, inputs)
    old = _old_estimator(rows, replicates=20)
    new = evaluate(rows, n_bootstrap=0, n_permutations=0)["references"]["random"]
    for name in ("ppi", "gpi", "loc"):
        values = np.array([d[name] for d in new["per_query"].values()])
        mean, sd = old[name].mean(axis=1), old[name].std(axis=1, ddof=1)
        z = (values - mean) / (sd / math.sqrt(old[name].shape[1]))
        assert np.all(np.abs(z) < 5), (name, z)  # per query: 60 checks at 5 standard errors
        overall_se = math.sqrt((sd**2).mean() / old[name].size)
        assert abs(new["overall"][name] - old[name].mean()) < 4 * overall_se, name
