"""Batch schedules (:mod:`invarirank.llm._batching`) as pure logic: properties over random suffix lengths, prefixes,
batch sizes and token budgets, no torch and no model."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import invarirank.llm._batching as batching
from invarirank.llm._batching import computed_positions, group_by_prefix, packed_batches, per_prefix_batches

SETTINGS = settings(max_examples=300, deadline=None, database=None)  # database=None: no .hypothesis/ folder


@st.composite
def workloads(draw):
    """(suffix lengths, prefix of each row, batch size, budget)."""
    n = draw(st.integers(0, 40))
    lengths = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n))
    prefixes = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    return lengths, prefixes, draw(st.integers(1, 9)), draw(st.integers(1, 400))


def _is_partition(batches, n):
    flat = [i for b in batches for i in b]
    return sorted(flat) == list(range(n)) and all(b for b in batches)


@SETTINGS
@given(workloads())
def test_per_prefix_batches_keep_prefixes_apart_and_in_order(work):
    lengths, prefixes, size, _ = work
    groups = list(group_by_prefix(prefixes).values())
    batches = per_prefix_batches(groups, size)
    assert _is_partition(batches, len(lengths))
    for b in batches:
        assert 1 <= len(b) <= size and len({prefixes[i] for i in b}) == 1 and b == sorted(b)
    # prefix after prefix in first-seen order, rows in order: the concatenation is the groups'
    assert [i for b in batches for i in b] == [i for g in groups for i in g]


@SETTINGS
@given(workloads())
def test_packed_batches_fit_the_budget_and_never_pad_more_than_per_prefix(work):
    lengths, prefixes, size, budget = work
    groups = list(group_by_prefix(prefixes).values())
    batches = packed_batches(lengths, groups, size, budget)
    assert _is_partition(batches, len(lengths))
    for b in batches:
        # within the budget, unless one row alone is longer than it
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= budget
        assert [lengths[i] for i in b] == sorted(lengths[i] for i in b)
    assert computed_positions(batches, lengths) <= computed_positions(per_prefix_batches(groups, size), lengths)
    assert computed_positions(batches, lengths) >= sum(lengths)
    # rows are taken shortest first: batches follow each other in length order
    flat = [i for b in batches for i in b]
    assert flat == sorted(range(len(lengths)), key=lambda i: (lengths[i], i))


@SETTINGS
@given(st.lists(st.integers(1, 50), min_size=1, max_size=30), st.integers(1, 8))
def test_a_huge_budget_with_equal_lengths_packs_everything_at_once(lengths, size):
    """Rows of equal length never pad: with a budget that holds them all they form one batch."""
    same = [lengths[0]] * len(lengths)
    groups = [list(range(len(same)))]
    assert packed_batches(same, groups, size, budget=10**9) == [list(range(len(same)))]


def test_packing_by_hand():
    # two queries (prefixes 0 and 1), suffixes 5, 7 | 6, 7; batch size 2 per prefix would compute 2*7 + 2*7 = 28
    lengths, groups = [5, 7, 6, 7], [[0, 1], [2, 3]]
    assert per_prefix_batches(groups, 2) == [[0, 1], [2, 3]]
    assert packed_batches(lengths, groups, 2, budget=28) == [[0, 2, 1, 3]]  # 4 rows x 7 = 28
    assert packed_batches(lengths, groups, 2, budget=14) == [[0, 2], [1, 3]]  # 2x6 = 12, 2x7 = 14
    assert packed_batches(lengths, groups, 2, budget=1) == [[0], [2], [1], [3]]  # every row alone
    assert packed_batches([], [], 3, budget=10) == []


def test_the_module_needs_no_torch():
    tree = ast.parse(Path(batching.__file__).read_text(encoding="utf-8"))
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "typing", "collections"}, imported  # the standard library only
