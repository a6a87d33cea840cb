"""Test and validation queries (the protocol chapter), built with numpy and Arrow list arrays.

* **Test query** ``u<user_id>``: history = the user's train + validation interactions, newest first,
  the first ``history_len`` (20) of them, each with the user's own rating (low ratings included);
  ground truth = the user's test interactions with rating >= ``positive_threshold``; exclude = every
  train + validation item of the user.
* **Validation query** ``v<user_id>``: history = train interactions only (same rule); ground truth =
  validation positives; exclude = train items.
* "Newest first" sorts by timestamp **descending**; interactions with the same timestamp are ordered
  by **ascending** canonical item id (so among equal timestamps the lower id comes first and, at the
  cut-off, is the one kept).
* ``ground_truth`` and ``exclude`` are sorted in canonical item-id order.
* Only queries with a non-empty ground truth are listed. Rows: every test query (users in canonical
  order), then every validation query.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._ids import sort_order
from ._split import TEST, TRAIN, VALIDATION

QUERY_SCHEMA = pa.schema(
    [
        ("query_id", pa.string()),
        ("user_id", pa.string()),
        ("split", pa.string()),
        ("history_item_ids", pa.list_(pa.string())),
        ("history_ratings", pa.list_(pa.float64())),
        ("ground_truth", pa.list_(pa.string())),
        ("exclude", pa.list_(pa.string())),
    ]
)


def _lists(row_user: np.ndarray, values: pa.Array, query_users: np.ndarray, n_users: int) -> pa.ListArray:
    """One list per query user, from rows sorted by user (values aligned with the rows)."""
    selected = np.zeros(n_users, dtype=bool)
    selected[query_users] = True
    keep = selected[row_user]
    counts = np.bincount(row_user[keep], minlength=n_users)[query_users]
    offsets = np.zeros(len(query_users) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    kept_values = values.filter(pa.array(keep)) if not keep.all() else values
    if offsets[-1] < 2**31:
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), kept_values)
    return pa.LargeListArray.from_arrays(pa.array(offsets), kept_values).cast(pa.list_(values.type))


def _segment_queries(
    user: np.ndarray,
    item: np.ndarray,
    rating: np.ndarray,
    ts: np.ndarray,
    seg: np.ndarray,
    user_ids: np.ndarray,
    id_strings: pa.Array,
    history_segments: tuple,
    target: int,
    positive_threshold: float,
    history_len: int,
    prefix: str,
    split_name: str,
) -> pa.Table:
    n_users = len(user_ids)
    positive = (seg == target) & (rating >= positive_threshold)
    gt_rows = np.flatnonzero(positive)
    query_users = np.unique(user[gt_rows])  # sorted = canonical user order

    # ground truth, sorted by (user, item)
    gt_rows = gt_rows[sort_order((user[gt_rows], "ascending"), (item[gt_rows], "ascending"))]
    ground_truth = _lists(user[gt_rows], id_strings.take(pa.array(item[gt_rows])), query_users, n_users)

    # history: newest first (timestamp desc, item asc), first history_len per user
    hist_rows = np.flatnonzero(np.isin(seg, history_segments))
    exclude_rows = hist_rows[sort_order((user[hist_rows], "ascending"), (item[hist_rows], "ascending"))]
    hist_rows = hist_rows[
        sort_order((user[hist_rows], "ascending"), (ts[hist_rows], "descending"), (item[hist_rows], "ascending"))
    ]
    hu = user[hist_rows]
    if hist_rows.size:
        starts = np.concatenate(([0], np.flatnonzero(hu[1:] != hu[:-1]) + 1))
        group_start = np.repeat(starts, np.diff(np.concatenate((starts, [hu.size]))))
        rank = np.arange(hu.size) - group_start
        hist_rows = hist_rows[rank < history_len]
        hu = user[hist_rows]
    history_ids = _lists(hu, id_strings.take(pa.array(item[hist_rows])), query_users, n_users)
    history_ratings = _lists(hu, pa.array(rating[hist_rows], pa.float64()), query_users, n_users)
    exclude = _lists(user[exclude_rows], id_strings.take(pa.array(item[exclude_rows])), query_users, n_users)

    uid = [str(u) for u in user_ids[query_users]]
    return pa.table(
        [
            pa.array([prefix + u for u in uid], pa.string()),
            pa.array(uid, pa.string()),
            pa.array([split_name] * len(uid), pa.string()),
            history_ids,
            history_ratings,
            ground_truth,
            exclude,
        ],
        schema=QUERY_SCHEMA,
    )


def build_queries(
    user: np.ndarray,
    item: np.ndarray,
    rating: np.ndarray,
    ts: np.ndarray,
    seg: np.ndarray,
    user_ids: np.ndarray,
    item_ids: np.ndarray,
    *,
    positive_threshold: float = 4.0,
    history_len: int = 20,
) -> pa.Table:
    """The queries table (schema :data:`QUERY_SCHEMA`): test queries, then validation queries.

    Arrays are aligned per interaction row (any order); ``user``/``item`` are codes into the
    canonical-order id arrays; ``seg`` holds the segment codes of :mod:`._split`.
    """
    id_strings = pa.array(item_ids, pa.string())
    common = dict(
        user=user,
        item=item,
        rating=rating,
        ts=ts,
        seg=seg,
        user_ids=user_ids,
        id_strings=id_strings,
        positive_threshold=positive_threshold,
        history_len=history_len,
    )
    test = _segment_queries(**common, history_segments=(TRAIN, VALIDATION), target=TEST, prefix="u", split_name="test")
    validation = _segment_queries(
        **common, history_segments=(TRAIN,), target=VALIDATION, prefix="v", split_name="validation"
    )
    return pa.concat_tables([test, validation])
