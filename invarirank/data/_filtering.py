"""Raw ratings → clean, encoded interactions: duplicates, the per-user minimum, integer codes.

Rules (the protocol chapter plus the documented choices here):

1. **Raw counts** (``raw_users``, ``raw_items``, ``raw_interactions``) are taken on the rating rows as
   read, before anything is removed.
2. **Duplicate (user, item) rows**: the row with the latest timestamp is kept (on equal timestamps,
   the one that comes later in the file), so a re-rating replaces the earlier one; the pair then counts
   once everywhere (minimum, split, queries). ``duplicates_dropped`` says how many rows were removed.
3. **Minimum interactions per user**: a user is kept when they have at least ``min_interactions``
   distinct rated items, counting **all** ratings (low ones too). One pass only: items are not filtered
   (no k-core iteration), and the items of dropped users stay only if someone else rated them.
4. The kept users and items get dense integer codes in canonical id order (see :mod:`._ids`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import InvariRankError
from ._ids import encode, sort_order


@dataclass
class Interactions:
    """Encoded interactions (one row per kept (user, item) pair) and the counts of the clean-up.

    ``user`` / ``item`` are codes into ``user_ids`` / ``item_ids`` (canonical order). Row order is
    unspecified; :func:`invarirank.data._split.assign_segments` needs them sorted first.
    """

    user: np.ndarray  # int64
    item: np.ndarray  # int64
    rating: np.ndarray  # float64
    timestamp: np.ndarray  # int64
    user_ids: np.ndarray  # object (str), canonical order
    item_ids: np.ndarray  # object (str), canonical order
    raw_users: int
    raw_items: int
    raw_interactions: int
    duplicates_dropped: int
    users_dropped: int


def _compact(codes: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the codes that occur into 0..m-1, keeping their order."""
    present = np.zeros(len(ids), dtype=bool)
    present[codes] = True
    new = np.cumsum(present) - 1
    return new[codes], ids[present]


def clean_interactions(ratings: pa.Table, min_interactions: int, *, source: str = "ratings") -> Interactions:
    """Apply the rules of the module docstring to a (user_id, item_id, rating, timestamp) table."""
    n = ratings.num_rows
    if n == 0:
        raise InvariRankError(f"{source}: no ratings; expected at least one rating row")
    users = encode(ratings.column("user_id"))
    items = encode(ratings.column("item_id"))
    rating = ratings.column("rating").to_numpy().astype(np.float64, copy=False)
    ts = ratings.column("timestamp").to_numpy().astype(np.int64, copy=False)
    user, item = users.codes, items.codes

    # duplicates: keep the latest (timestamp, then file position) row of each (user, item) pair;
    # the sort is stable, so equal (user, item, timestamp) rows stay in file order
    order = sort_order((user, "ascending"), (item, "ascending"), (ts, "ascending"))
    su, si = user[order], item[order]
    last = np.ones(n, dtype=bool)
    last[:-1] = (su[1:] != su[:-1]) | (si[1:] != si[:-1])
    del su, si
    duplicates = int(n - last.sum())
    if duplicates:
        keep = np.sort(order[last])  # back to file order
        user, item, rating, ts = user[keep], item[keep], rating[keep], ts[keep]
    del order, last

    # minimum number of (distinct) interactions per user, all ratings counted
    counts = np.bincount(user, minlength=len(users.ids))
    kept_user = counts >= min_interactions
    users_dropped = int((counts > 0).sum() - kept_user.sum())
    if not kept_user.any():
        raise InvariRankError(
            f"{source}: no user has at least {min_interactions} ratings "
            f"(most: {int(counts.max())}); lower --min-interactions"
        )
    mask = kept_user[user]
    if not mask.all():
        user, item, rating, ts = user[mask], item[mask], rating[mask], ts[mask]
    user, user_ids = _compact(user, users.ids)
    item, item_ids = _compact(item, items.ids)
    return Interactions(
        user=user,
        item=item,
        rating=rating,
        timestamp=ts,
        user_ids=user_ids,
        item_ids=item_ids,
        raw_users=len(users.ids),
        raw_items=len(items.ids),
        raw_interactions=n,
        duplicates_dropped=duplicates,
        users_dropped=users_dropped,
    )
