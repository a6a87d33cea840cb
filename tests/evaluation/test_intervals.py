"""The bootstrap intervals: the basic interval of the exposure deviations (reflection, clipping, the percentile
interval's equal for symmetric replicates) and what it is for, measured on simulated rankers with a known curve
(``benchmarks/exposure_intervals.py``, small): the percentile interval of a deviation sits above the truth, the
basic one covers it. The replicates' totals are summed in query order, so every processor gets the same bits."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import exposure_intervals as sim
from invarirank.evaluation._bootstrap import (
    basic_interval,
    collect,
    percentile_interval,
    ratio,
    resample_counts,
    totals,
)
from tests.support import ROOT


def test_the_basic_interval_reflects_the_percentile_interval_about_the_estimate():
    reps = np.array([0.30, 0.32, 0.35, 0.40, 0.41, 0.45, 0.50, 0.52, 0.60, np.nan, np.inf])
    q = percentile_interval(reps)
    assert q is not None
    assert basic_interval(reps, 0.4, lower=None) == pytest.approx([0.8 - q[1], 0.8 - q[0]])
    assert basic_interval(reps, 0.1) == [max(0.0, 0.2 - q[1]), max(0.0, 0.2 - q[0])]
    assert basic_interval(reps, 0.1, lower=None)[0] < 0  # unclipped, a difference can be negative
    assert basic_interval(np.array([np.nan]), 0.1) is None
    symmetric = 0.5 + np.linspace(-0.2, 0.2, 41)
    assert basic_interval(symmetric, 0.5) == pytest.approx(percentile_interval(symmetric), abs=1e-12)


@pytest.mark.parametrize("beta, percentile_at_most", [(0.25, 0.1), (0.5, 0.7)])
def test_on_a_known_curve_the_basic_interval_covers_the_true_mad_and_the_percentile_interval_does_not(
    beta, percentile_at_most
):
    """Q = 40, M = 20, K = 25 (Table 1's shape), a true exposure MAD of 0.01 or 0.02: 60 simulated data sets, 300
    replicates each. The percentile interval covers the truth in at most 10 % / 70 % of them (0 and 0.50 in the
    committed 300-draw measurement), the basic interval in at least 75 % (0.87 and 0.89 there)."""
    r = sim.scenario(beta, Q=40, M=20, K=25, draws=60, n_boot=300, truth_queries=20_000, seed=3)
    assert 0.005 < r["mad"]["truth"] < 0.03
    assert r["mad"]["coverage"]["percentile"] <= percentile_at_most
    assert r["mad"]["coverage"]["basic"] >= 0.75
    assert r["mad"]["mean_estimate"] > r["mad"]["truth"]  # the upward bias the interval corrects


def test_the_committed_measurement_is_the_one_the_protocol_chapter_shows():
    """``book/data/exposure_intervals.json`` holds the default measurement (every beta, the paired difference) with
    the adoption evidence the engine's docstrings quote: at a true MAD near 0.01 the percentile interval never
    covers and the basic one mostly does."""
    m = json.loads((ROOT / "book" / "data" / "exposure_intervals.json").read_text(encoding="utf-8"))
    assert (m["queries"], m["orders"], m["K"], m["draws"], m["bootstrap"]) == (40, 20, 25, 300, 1000)
    assert [s["beta"] for s in m["scenarios"]] == list(sim.BETAS)
    near = next(s for s in m["scenarios"] if s["beta"] == 0.25)["mad"]
    assert near["truth"] == pytest.approx(0.01, abs=0.002)
    assert near["coverage"]["percentile"] == 0 and near["coverage"]["basic"] >= 0.85
    assert m["paired_difference"]["coverage"]["basic"] > m["paired_difference"]["coverage"]["percentile"]


def test_replicate_totals_are_summed_in_query_order_not_by_a_blas_kernel():
    """A BLAS product sums in an order that depends on the processor's kernel (it moved the last binary digit of
    committed intervals between two machines); the totals add query by query, left to right. On these columns the
    order shows: 1e16 + 1 rounds back to 1e16, so the left-to-right sum of each block of four is 1 (a pairwise or
    blocked sum gives 2 a block)."""
    column = np.array([1e16, 1.0, -1e16, 1.0] * 8)
    counts = np.ones((3, column.size))
    assert totals(counts, column).tolist() == [1.0, 1.0, 1.0]
    assert totals(counts, np.column_stack([column, 2 * column])).tolist() == [[1.0, 2.0]] * 3
    rng = np.random.default_rng(0)
    c, v = rng.integers(0, 4, (50, 40)).astype(float), rng.random((40, 3))
    assert totals(c, v) == pytest.approx(c @ v, rel=1e-13)
    y = totals(np.vstack(list(resample_counts(40, 200, 7))), v)  # collect sums its resamples the same way
    assert collect(40, 200, 7, v, {"r": ratio(0, 1)})["r"].tolist() == (y[:, 0] / y[:, 1]).tolist()


def test_whole_number_and_repeated_columns_get_the_bits_of_the_query_by_query_sum():
    """Columns of whole numbers (hits, rows, 0/1 flags) are summed by one matrix product, exact in any order, and
    a column equal to an earlier one reuses its totals: both must give the left-to-right loop's bits, zeros +0.0."""
    rng = np.random.default_rng(1)
    counts = np.vstack(list(resample_counts(60, 150, 2)))
    n = rng.integers(1, 30, 60).astype(float)
    columns = np.column_stack(
        [n, rng.random((60, 3)), rng.integers(0, 20, (60, 4)).astype(float), n * 0.2, n * 0.2, -np.zeros(60), n * 0.2]
        + [np.full(60, np.nan), np.round(rng.random(60) * 1e15), rng.random(60) * 1e17]
    )
    loop = np.zeros((counts.shape[0], columns.shape[1]))
    for q in range(columns.shape[0]):
        loop += counts[:, q : q + 1] * columns[q]
    got = totals(counts, columns)
    assert got.tobytes() == loop.tobytes()
    assert not np.signbit(got[:, 10]).any()  # the column of -0.0: +0.0 totals, as the loop gives
    assert totals(counts, columns[:, 4]).tobytes() == loop[:, 4].tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_ratio_intervals_are_the_percentile_intervals_of_every_replicate_to_the_bit(seed, monkeypatch):
    """The intervals of ratio statistics sum query by query only the replicates near the four ranks each interval
    reads: on columns with ties between replicates (thirds, twentieths, one value for every query), cancellation
    (1e16 + 1 - 1e16), tiny values and denominators that are sometimes 0, every interval is the one of
    :func:`collect`'s replicates, bit for bit, and most are decided from a few replicates."""
    from invarirank.evaluation import _bootstrap, _ratio_intervals

    planned = []
    plan = _ratio_intervals._plan
    monkeypatch.setattr(_ratio_intervals, "_plan", lambda *a: planned.append(plan(*a)) or planned[-1])
    rng = np.random.default_rng(seed)
    for trial in range(12):
        Q, B = int(rng.integers(2, 300)), int(rng.integers(1, 400))
        n = rng.integers(1, 30, Q).astype(float)
        has = (rng.random(Q) < 0.8).astype(float)
        numerators = [
            rng.random(Q) * n,
            rng.integers(0, 3, Q) / 3.0,
            rng.integers(0, 20, Q) * 0.05,
            np.full(Q, 0.4202),
            np.tile([1e16, 1.0, -1e16, 1.0], Q)[:Q],
            rng.normal(size=Q) * 1e-300,
            np.where(has > 0, rng.random(Q), 0.0),
        ]
        columns = np.column_stack([n, has, *numerators, rng.integers(0, 5, Q).astype(float)])
        ratios = {f"r{j}": (2 + j, j % 2) for j in range(len(numerators) + 1)}
        custom = {"mean_n": lambda Y: Y[:, 0] / 7.0}
        for level in (0.95, 0.5):
            _bootstrap._shared_counts.cache_clear()
            got, reps = _ratio_intervals.ratio_intervals(Q, B, trial, columns, ratios, level, custom, [0])
            every = collect(Q, B, trial, columns, {k: ratio(a, d) for k, (a, d) in ratios.items()})
            for k in ratios:
                want = percentile_interval(every[k], level)
                assert (got[k] is None) == (want is None)
                assert want is None or [x.hex() for x in got[k]] == [x.hex() for x in want], (trial, k)
            assert reps["mean_n"].tobytes() == (collect(Q, B, trial, columns, custom)["mean_n"]).tobytes()
    decided = [p for p in planned if p is not None and len(p.rows) <= _ratio_intervals._FEW]
    assert len(decided) > len(planned) / 2


def test_ratio_intervals_of_resamples_drawn_per_call_take_every_replicate(monkeypatch):
    """Past the shared resamples' size the counts come in blocks drawn again per call: every replicate is summed."""
    from invarirank.evaluation import _ratio_intervals

    monkeypatch.setattr(_ratio_intervals, "_SHARED_CELLS", 0)
    rng = np.random.default_rng(5)
    columns = np.column_stack([rng.integers(1, 9, 50).astype(float), rng.random(50), rng.random(50)])
    custom = {"b": lambda Y: Y[:, 2]}
    got, reps = _ratio_intervals.ratio_intervals(50, 120, 3, columns, {"a": (1, 0)}, 0.95, custom, [2])
    every = collect(50, 120, 3, columns, {"a": ratio(1, 0), **custom})
    assert got["a"] == percentile_interval(every["a"]) and reps["b"].tobytes() == every["b"].tobytes()
