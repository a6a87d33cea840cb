"""Batch schedules: which passes share a forward, as pure logic on suffix lengths and prefixes (no torch, no model).

A real scorer computes the missing passes of a call as *rows* of batched forwards over their suffixes (the
shared history prefix of a query is computed once and reused). A batch of rows is right-padded to its longest
suffix, so it computes ``rows × longest suffix`` positions (:func:`computed_positions`).

* :func:`per_prefix_batches`: rows of the same prefix, ``batch_size`` at a time, prefix after prefix in
  first-seen order (what a call of one query, or a window without a token budget, computes);
* :func:`packed_batches`: rows of every prefix sorted by suffix length and packed into batches of at most
  ``budget`` computed positions (a single row longer than the budget is a batch of its own), and never padding
  beyond what the batches per prefix would compute (sorting by length pads less): the packing across the queries
  of a window (``max_batch_tokens``).

Rows are indices into the call's list of passes; every index appears in exactly one batch.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def group_by_prefix(prefixes: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """Row indices by prefix, prefixes in first-seen order, rows in order."""
    groups: dict[Hashable, list[int]] = {}
    for i, prefix in enumerate(prefixes):
        groups.setdefault(prefix, []).append(i)
    return groups


def per_prefix_batches(groups: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Each group's rows in consecutive chunks of ``batch_size`` (>= 1), group after group."""
    size = max(1, int(batch_size))
    return [list(idxs[c : c + size]) for idxs in groups for c in range(0, len(idxs), size)]


def computed_positions(batches: Sequence[Sequence[int]], lengths: Sequence[int]) -> int:
    """Positions the batches compute: per batch, its rows × its longest suffix."""
    return sum(len(b) * max(lengths[i] for i in b) for b in batches if b)


def packed_batches(
    lengths: Sequence[int], groups: Sequence[Sequence[int]], batch_size: int, budget: int
) -> list[list[int]]:
    """Rows sorted by suffix length (ties by index) and packed greedily: a row joins the open batch while the
    batch stays within ``budget`` computed positions and the positions committed so far, plus this batch, plus
    every row still to come unpadded, stay within what :func:`per_prefix_batches` of ``groups`` with
    ``batch_size`` would compute; else the open batch is closed. Batches in the order they are closed."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    budget = max(1, int(budget))
    limit = computed_positions(per_prefix_batches(groups, batch_size), lengths)
    committed, remaining = 0, sum(lengths[i] for i in order)
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:
        n = lengths[i]
        remaining -= n
        if not batch or ((len(batch) + 1) * n <= budget and committed + (len(batch) + 1) * n + remaining <= limit):
            batch.append(i)
            continue
        committed += len(batch) * lengths[batch[-1]]
        batches.append(batch)
        batch = [i]
    if batch:
        batches.append(batch)
    return batches
