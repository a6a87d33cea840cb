"""Per-user split sizes (the protocol chapter) and segment assignment."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invarirank.data._split import TEST, TRAIN, VALIDATION, assign_segments, split_sizes
from invarirank.errors import InvariRankError

TABLE = {
    3: (1, 1, 1),
    4: (2, 1, 1),
    5: (3, 1, 1),
    7: (4, 1, 2),
    10: (7, 1, 2),
    12: (8, 1, 3),
    20: (14, 2, 4),
    33: (23, 3, 7),
    100: (70, 10, 20),
}


@pytest.mark.parametrize("n,expected", sorted(TABLE.items()))
def test_temporal_split_table(n, expected):
    train, val, test = split_sizes(np.array([n]))
    assert (int(train[0]), int(val[0]), int(test[0])) == expected


def test_split_sizes_vectorised_matches_table():
    ns = np.array(sorted(TABLE))
    train, val, test = split_sizes(ns)
    assert [tuple(map(int, t)) for t in zip(train, val, test)] == [TABLE[n] for n in ns]


def test_floor_is_exact_not_float():
    # int(0.7 * 90) == 62 in floating point; the protocol's floor(0.7 n) is 63
    train, val, test = split_sizes(np.array([90, 170]))
    assert train.tolist() == [63, 119] and val.tolist() == [9, 17] and test.tolist() == [18, 34]


@given(st.integers(min_value=3, max_value=5000))
@settings(max_examples=200, deadline=None)
def test_split_formula_properties(n):
    train, val, test = (int(x[0]) for x in split_sizes(np.array([n])))
    assert train >= 1 and val >= 1 and test >= 1 and train + val + test == n
    expected_train = max(1, (7 * n) // 10)
    expected_val = max(1, n // 10)
    if expected_train + expected_val >= n:
        expected_train = max(1, n - expected_val - 1)
    assert (train, val) == (expected_train, expected_val)


def test_leave_one_out_sizes():
    train, val, test = split_sizes(np.array([3, 4, 50]), "loo")
    assert train.tolist() == [1, 2, 48] and val.tolist() == [1, 1, 1] and test.tolist() == [1, 1, 1]


def test_too_few_interactions_is_an_error():
    with pytest.raises(InvariRankError, match="at least 3"):
        split_sizes(np.array([5, 2]))
    with pytest.raises(InvariRankError, match="expected one of temporal, loo"):
        split_sizes(np.array([5]), "random")


def test_assign_segments_follows_row_order():
    user = np.array([0] * 10 + [1] * 3 + [2] * 4)
    seg = assign_segments(user)
    assert seg[:10].tolist() == [TRAIN] * 7 + [VALIDATION] + [TEST] * 2
    assert seg[10:13].tolist() == [TRAIN, VALIDATION, TEST]
    assert seg[13:].tolist() == [TRAIN, TRAIN, VALIDATION, TEST]
    loo = assign_segments(user, "loo")
    assert loo[:10].tolist() == [TRAIN] * 8 + [VALIDATION, TEST]
