"""Per-user chronological split (the protocol chapter), vectorised with numpy.

Temporal split of a user with ``n`` interactions, ordered by (timestamp, item id) ascending:

* train = max(1, floor(0.7 n)), validation = max(1, floor(0.1 n)), test = the rest;
* if train + validation >= n then train = max(1, n - validation - 1).

The floors are computed **exactly in integers** (``7 n // 10``, ``n // 10``). (A float ``int(0.7 * n)``
differs for some n, e.g. n = 90 gives 62 instead of 63; the protocol's formula is the exact floor.)
Every segment is non-empty for n >= 3, so the split needs ``min_interactions >= 3``.

Leave-one-out: the last interaction is the test segment, the second last the validation segment,
the rest (at least one) is train.

Segments are coded ``0`` = train, ``1`` = validation, ``2`` = test.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvariRankError

TRAIN, VALIDATION, TEST = 0, 1, 2
SEGMENT_NAMES = ("train", "validation", "test")
SPLITS = ("temporal", "loo")
MIN_PER_USER = 3


def split_sizes(n: np.ndarray | int, method: str = "temporal") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(train, validation, test) sizes for users with ``n`` interactions (arrays, int64)."""
    n = np.asarray(n, dtype=np.int64)
    if method not in SPLITS:
        raise InvariRankError(f"split {method!r}: expected one of {', '.join(SPLITS)}")
    if n.size and n.min() < MIN_PER_USER:
        raise InvariRankError(
            f"split: a user has {int(n.min())} interactions; every user needs at least "
            f"{MIN_PER_USER} (train, validation and test must be non-empty)"
        )
    if method == "loo":
        val = np.ones_like(n)
        test = np.ones_like(n)
        return n - 2, val, test
    train = np.maximum(1, (7 * n) // 10)
    val = np.maximum(1, n // 10)
    over = train + val >= n
    train = np.where(over, np.maximum(1, n - val - 1), train)
    return train, val, n - train - val


def assign_segments(user: np.ndarray, method: str = "temporal") -> np.ndarray:
    """Segment code per row for rows **already sorted** by (user, timestamp, item id).

    ``user``: non-decreasing user codes (0..U-1, every code present). Returns int8 codes.
    """
    user = np.asarray(user)
    if user.size == 0:
        return np.zeros(0, dtype=np.int8)
    counts = np.bincount(user)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    position = np.arange(user.size, dtype=np.int64) - starts[user]  # 0-based, chronological
    train, val, _ = split_sizes(counts, method)
    seg = np.full(user.size, TEST, dtype=np.int8)
    seg[position < (train + val)[user]] = VALIDATION
    seg[position < train[user]] = TRAIN
    return seg
