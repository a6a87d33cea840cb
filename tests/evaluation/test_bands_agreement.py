"""Exposure bands over queries (evaluation.positional_exposure.exposure_band) and Kendall's tau between orderings
(evaluation.agreement.kendall_tau): values pooled like ``exposure``, the band from the one bootstrap of
evaluation.bootstrap, equal to the independent per-position resampling the book drew before."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank._orders import rng_for
from invarirank.evaluation import exposure
from invarirank.evaluation._agreement import kendall_tau
from invarirank.evaluation._positional_exposure import exposure_band, query_position_sums


def _rows(n_queries: int = 12, K: int = 6, M: int = 5, seed: int = 0) -> list[dict]:
    rows = []
    for q in range(n_queries):
        items = [f"q{q}i{j}" for j in range(K)]
        for m in range(M):
            rng = rng_for(seed, q, m)
            inp = [items[j] for j in rng.permutation(K)]
            out = inp[:2][::-1] + [inp[j] for j in rng.permutation(range(2, K))]  # a primacy-ish ranker
            rows.append({"query_id": f"q{q}", "input": inp, "output": out})
    return rows


def _reference_band(rows: list[dict], k: int, n_bootstrap: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Resample queries, recompute the pooled ratio per position, take numpy's 2.5/97.5 percentiles."""
    _, hits, n, _ = query_position_sums(rows, k)
    draws = np.random.default_rng(seed).integers(0, len(hits), size=(n_bootstrap, len(hits)))
    w = np.stack([np.bincount(d, minlength=len(hits)) for d in draws]).astype(float)
    low, high = np.percentile((w @ hits) / np.maximum(w @ n, 1), [2.5, 97.5], axis=0)
    return low, high


def test_values_equal_pooled_exposure():
    rows = _rows()
    band = exposure_band(rows, k=3, n_bootstrap=0)
    pooled = exposure(rows, k=3)
    assert band["exposure"].tolist() == pytest.approx(pooled["exposure"])
    assert band["expected"].tolist() == pytest.approx(pooled["expected"])
    assert np.array_equal(band["low"], band["exposure"]) and np.array_equal(band["high"], band["exposure"])


def test_band_equals_the_reference_resampling_and_holds_the_value():
    rows = _rows()
    band = exposure_band(rows, k=3, n_bootstrap=400, seed=5)
    low, high = _reference_band(rows, 3, 400, 5)
    assert np.array_equal(band["low"], low) and np.array_equal(band["high"], high)
    assert (band["low"] <= band["exposure"] + 1e-12).all() and (band["exposure"] <= band["high"] + 1e-12).all()
    assert not np.array_equal(exposure_band(rows, k=3, n_bootstrap=400, seed=6)["low"], low)


def test_one_query_has_no_band():
    rows = _rows(n_queries=1)
    band = exposure_band(rows, k=2, n_bootstrap=100)
    assert np.array_equal(band["low"], band["exposure"])


def test_kendall_tau_between_orderings():
    assert kendall_tau("abcd", "abcd") == 1.0
    assert kendall_tau("abcd", "dcba") == -1.0
    assert kendall_tau(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(1 / 3)
    assert kendall_tau(["a", "b", "x"], ["b", "a", "y"]) == -1.0  # on the common labels only
    assert kendall_tau(["a", "x"], ["a", "y"]) is None
