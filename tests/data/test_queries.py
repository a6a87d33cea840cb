"""Test and validation queries: history order and length, ratings, ground truth, exclusions —
checked against a plain per-user reference implementation on random data."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.data import load_prepared, prepare
from tests.support.data import write_atomic_layout, write_csv_layout

pytestmark = pytest.mark.usefixtures("private_cache")


def _random_ratings(seed: int, n_users: int = 30, n_items: int = 60, id_style: str = "int"):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(n_users):
        n = int(rng.integers(3, 45))
        items = rng.choice(n_items, size=min(n, n_items), replace=False)
        for it in items:
            ts = int(rng.integers(0, 15))  # few distinct timestamps → many ties
            rating = float(rng.integers(1, 6))
            uid = str(u + 1) if id_style == "int" else f"U{u:03d}x"
            iid = str(it + 1) if id_style == "int" else f"{'ab'[it % 2]}{it}"
            rows.append((uid, iid, rating, ts))
    return rows


def _sizes_by_hand(n: int, split: str) -> tuple[int, int]:
    """The split written out independently of the package's ``split_sizes``: leave-one-out keeps the last two
    ratings for validation and test; temporal takes floor(0.7 n) / floor(0.1 n) (each at least 1) and leaves the
    test part at least one rating. E.g. n = 10 -> 7 / 1 (/ 2), n = 12 -> 8 / 1 (/ 3), n = 20 -> 14 / 2 (/ 4)."""
    if split == "loo":
        return n - 2, 1
    train, val = max(1, (7 * n) // 10), max(1, n // 10)
    if train + val >= n:
        train = max(1, n - val - 1)
    return train, val


def test_reference_sizes_are_the_protocol_by_hand():
    assert [_sizes_by_hand(n, "temporal") for n in (3, 10, 12, 20)] == [(1, 1), (7, 1), (8, 1), (14, 2)]
    assert _sizes_by_hand(10, "loo") == (8, 1)


def _reference(rows, min_n: int, key, split="temporal", history_len=20, thr=4.0):
    """Straightforward per-user implementation of the protocol chapter's split."""
    by_user: dict[str, list] = {}
    for u, i, r, t in rows:
        by_user.setdefault(u, []).append((u, i, r, t))
    tests, vals = {}, {}
    for u, urows in by_user.items():
        if len(urows) < min_n:
            continue
        urows = sorted(urows, key=lambda x: (x[3], key(x[1])))
        train_n, val_n = _sizes_by_hand(len(urows), split)
        train, val, test = urows[:train_n], urows[train_n : train_n + val_n], urows[train_n + val_n :]

        def hist(seg):
            newest = sorted(seg, key=lambda x: (-x[3], key(x[1])))[:history_len]
            return [x[1] for x in newest], [x[2] for x in newest]

        def gt(seg):
            return sorted((x[1] for x in seg if x[2] >= thr), key=key)

        if gt(test):
            tests[u] = (*hist(train + val), gt(test), sorted((x[1] for x in train + val), key=key))
        if gt(val):
            vals[u] = (*hist(train), gt(val), sorted((x[1] for x in train), key=key))
    return tests, vals


def _as_dict(queries, split):
    part = queries[queries["split"] == split]
    return {
        u: (h, r, g, e)
        for u, h, r, g, e in zip(
            part["user_id"], part["history_item_ids"], part["history_ratings"], part["ground_truth"], part["exclude"]
        )
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("split", ["temporal", "loo"])
def test_queries_match_reference(tmp_path, seed, split):
    rows = _random_ratings(seed)
    items = [(str(i), f"Item {i} (2000)", ["Drama"]) for i in range(1, 61)]
    folder = prepare(
        "movielens",
        raw_dir=write_csv_layout(tmp_path / "raw", rows, items),
        out=tmp_path / "out",
        split=split,
        min_interactions=10,
    )
    data = load_prepared(folder)
    tests, vals = _reference(rows, 10, key=int, split=split)
    assert _as_dict(data.queries, "test") == tests
    assert _as_dict(data.queries, "validation") == vals
    assert data.stats["test_queries"] == len(tests) and data.stats["validation_queries"] == len(vals)
    # query ids and row order: test queries (users in numeric order) then validation queries
    q = data.queries
    assert q["query_id"].tolist() == [f"u{u}" for u in sorted(tests, key=int)] + [
        f"v{u}" for u in sorted(vals, key=int)
    ]


def test_string_ids_use_code_point_order(tmp_path):
    rows = _random_ratings(5, id_style="str")
    items = [(i, f"T {i}", []) for i in sorted({r[1] for r in rows})]
    folder = prepare(
        "movielens",
        raw_dir=write_atomic_layout(tmp_path / "raw", rows, items),
        out=tmp_path / "out",
        min_interactions=5,
    )
    data = load_prepared(folder)
    tests, vals = _reference(rows, 5, key=lambda s: s)
    assert _as_dict(data.queries, "test") == tests
    assert _as_dict(data.queries, "validation") == vals
    assert data.items["item_id"].tolist() == sorted(data.items["item_id"])


def test_history_is_newest_first_with_ratings_and_capped(tmp_path):
    # one user, 40 ratings with distinct timestamps: item k rated at time k with rating k % 5 + 1
    rows = [("7", str(k), float(k % 5 + 1), 100 + k) for k in range(1, 41)]
    items = [(str(k), f"M{k} (1990)", ["Drama"]) for k in range(1, 41)]
    data = load_prepared(
        prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", rows, items), out=tmp_path / "out")
    )
    train_n, val_n, test_n = 28, 4, 8
    inter = data.interactions
    assert inter["split"].tolist() == ["train"] * train_n + ["validation"] * val_n + ["test"] * test_n
    test_q = data.queries[data.queries["query_id"] == "u7"].iloc[0]
    # history = train + validation (items 1..32), newest first, 20 of them
    assert test_q["history_item_ids"] == [str(k) for k in range(32, 12, -1)]
    assert test_q["history_ratings"] == [float(k % 5 + 1) for k in range(32, 12, -1)]
    assert test_q["ground_truth"] == [str(k) for k in range(33, 41) if k % 5 + 1 >= 4]
    assert test_q["exclude"] == [str(k) for k in range(1, 33)]
    val_q = data.queries[data.queries["query_id"] == "v7"].iloc[0]
    assert val_q["history_item_ids"] == [str(k) for k in range(28, 8, -1)]
    assert val_q["ground_truth"] == [str(k) for k in range(29, 33) if k % 5 + 1 >= 4]
    assert val_q["exclude"] == [str(k) for k in range(1, 29)]
    assert val_q["split"] == "validation" and test_q["split"] == "test"


def test_ties_in_time_are_broken_by_item_id(tmp_path):
    # all 12 ratings at the same second: chronological order = item id order (numeric: 2 < 10)
    ids = ["10", "2", "33", "4", "5", "61", "7", "8", "9", "1", "11", "12"]
    rows = [("1", i, 5.0, 500) for i in ids]
    items = [(i, f"M{i} (1990)", []) for i in ids]
    data = load_prepared(
        prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", rows, items), out=tmp_path / "out")
    )
    ordered = sorted(ids, key=int)
    assert data.interactions["item_id"].tolist() == ordered
    test_q = data.queries[data.queries["split"] == "test"].iloc[0]
    assert test_q["ground_truth"] == ordered[9:]  # 12 → 8/1/3
    # newest first, equal timestamps: ascending item id
    assert test_q["history_item_ids"] == ordered[:9]


def test_low_ratings_stay_in_history_but_never_in_ground_truth(tmp_path):
    rows = [("1", str(k), 1.0 if k % 2 else 5.0, k) for k in range(1, 11)]
    items = [(str(k), f"M{k} (1990)", []) for k in range(1, 11)]
    data = load_prepared(
        prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", rows, items), out=tmp_path / "out")
    )
    test_q = data.queries[data.queries["split"] == "test"].iloc[0]
    assert 1.0 in test_q["history_ratings"]
    assert test_q["ground_truth"] == ["10"]  # test = items 9 (rating 1) and 10 (rating 5)
    # validation segment = item 8 (rating 5) → one validation query
    assert data.queries["query_id"].tolist() == ["u1", "v1"]


def test_queries_without_positives_are_left_out(tmp_path):
    rows = [("1", str(k), 2.0, k) for k in range(1, 11)] + [("2", str(k), 5.0, k) for k in range(1, 11)]
    items = [(str(k), f"M{k} (1990)", []) for k in range(1, 11)]
    data = load_prepared(
        prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", rows, items), out=tmp_path / "out")
    )
    assert data.queries["query_id"].tolist() == ["u2", "v2"]
    assert data.stats["users"] == 2 and data.stats["test_queries"] == 1


def test_history_len_override(tmp_path):
    rows = [("1", str(k), 5.0, k) for k in range(1, 31)]
    items = [(str(k), f"M{k} (1990)", []) for k in range(1, 31)]
    data = load_prepared(
        prepare(
            "movielens", raw_dir=write_csv_layout(tmp_path / "raw", rows, items), out=tmp_path / "out", history_len=5
        )
    )
    assert all(len(h) == 5 for h in data.queries["history_item_ids"])
