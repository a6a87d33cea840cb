"""prepare(): the embedded ml-100k numbers, the CLI table, caching, atomic and deterministic output,
the duplicate and minimum-interaction rules."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from invarirank.assets import ml100k_dir
from invarirank.cli import main
from invarirank.data import load_prepared, prepare
from invarirank.data._preparation import prepare_data
from invarirank.errors import InvariRankError
from tests.support.data import ITEMS, make_ratings, write_csv_layout

STATS_KEYS = {
    "users",
    "items",
    "interactions",
    "positives",
    "train",
    "validation",
    "test",
    "test_queries",
    "validation_queries",
    "raw_users",
    "raw_items",
    "raw_interactions",
}


@pytest.fixture(scope="module")
def ml100k_raw():
    return ml100k_dir()  # fetched by `make setup`; read from the real cache before it is redirected


@pytest.fixture(autouse=True)
def _fetched_then_private(ml100k_raw, private_cache):
    """The embedded raw files are fetched (into the real cache) before the cache is made private."""


def _digest(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_ml100k_cli_reports_the_known_numbers(tmp_path, capsys, ml100k_raw):
    out = tmp_path / "ml"
    assert main(["data", "prepare", "--dataset", "ml-100k", "--raw-dir", str(ml100k_raw), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for label, value in [
        ("users (raw)", "943"),
        ("items (raw)", "1,682"),
        ("ratings (raw)", "100,000"),
        ("train", "69,575"),
        ("validation", "9,596"),
        ("test", "20,829"),
    ]:
        assert any(line.startswith(label) and line.rstrip().endswith(value) for line in printed.splitlines()), label
    stats = json.loads((out / "stats.json").read_text())
    assert STATS_KEYS <= set(stats)
    assert (stats["raw_users"], stats["raw_items"], stats["raw_interactions"]) == (943, 1682, 100_000)
    # every ML-100K user has >= 20 ratings: nothing is filtered
    assert (stats["users"], stats["items"], stats["interactions"]) == (943, 1682, 100_000)
    assert stats["train"] + stats["validation"] + stats["test"] == 100_000
    assert stats["positives"] == 55_375  # ratings 4 and 5
    data = load_prepared(out)
    assert len(data.items) == 1682 and data.items["item_id"].tolist()[:3] == ["1", "2", "3"]
    assert data.items.loc[0, "title"] == "Toy Story" and data.items.loc[0, "year"] == 1995
    assert stats["test_queries"] == (data.queries["split"] == "test").sum() == 911  # as the book states
    assert stats["validation_queries"] == (data.queries["split"] == "validation").sum() == 861
    assert all(len(h) <= 20 for h in data.queries["history_item_ids"])
    # every query's exclusions are disjoint from its ground truth
    assert all(not (set(g) & set(e)) for g, e in zip(data.queries["ground_truth"], data.queries["exclude"]))


def test_default_dataset_uses_the_embedded_files(tmp_path, monkeypatch, ml100k_raw):
    monkeypatch.setattr("invarirank.assets.ml100k_dir", lambda: ml100k_raw)
    folder = prepare("ml-100k")
    assert folder.parent == tmp_path / "cache" / "prepared" and folder.name.startswith("ml-100k-")
    again, reused = prepare_data("ml-100k")
    assert again == folder and reused


def test_contract_types(tmp_path):
    data = load_prepared(prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw"), out=tmp_path / "o"))
    inter = data.interactions
    assert list(inter.columns) == ["user_id", "item_id", "rating", "timestamp", "split"]
    assert inter["rating"].dtype == "float64" and inter["timestamp"].dtype == "int64"
    assert all(isinstance(x, str) for x in inter["user_id"]) and all(isinstance(x, str) for x in inter["item_id"])
    assert set(inter["split"]) == {"train", "validation", "test"}
    assert list(data.items.columns) == ["item_id", "title", "year", "genres"]
    assert str(data.items["year"].dtype) == "Int64"
    assert list(data.queries.columns) == [
        "query_id",
        "user_id",
        "split",
        "history_item_ids",
        "history_ratings",
        "ground_truth",
        "exclude",
    ]
    assert all(isinstance(x, list) for x in data.queries["history_ratings"])
    assert all(isinstance(v, float) for x in data.queries["history_ratings"] for v in x)
    item = data.items_by_id()["5"]
    assert item.title == "unknown" and item.year is None and item.genres == ()
    # users in numeric order, each chronological by (timestamp, item id)
    assert inter["user_id"].drop_duplicates().tolist() == ["1", "2", "3"]
    low = load_prepared(prepare("movielens", raw_dir=tmp_path / "raw", out=tmp_path / "o3", min_interactions=3))
    assert low.interactions["user_id"].drop_duplicates().tolist() == ["1", "2", "3", "9", "10", "11"]
    for _, g in inter.groupby("user_id", sort=False):
        keys = list(zip(g["timestamp"], g["item_id"].astype(int)))
        assert keys == sorted(keys)


def test_minimum_counts_all_ratings_and_drops_user_9(tmp_path):
    data = load_prepared(prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw"), out=tmp_path / "o"))
    assert "9" not in set(data.interactions["user_id"])
    # users 9 (9 ratings), 10 (4) and 11 (3) are below the MovieLens minimum of 10
    assert data.stats["users_dropped"] == 3 and data.stats["raw_users"] == 6 and data.stats["users"] == 3
    assert set(data.interactions["user_id"]) == {"1", "2", "3"}
    low = load_prepared(prepare("movielens", raw_dir=tmp_path / "raw", out=tmp_path / "o3", min_interactions=3))
    assert low.stats["users"] == 6


def test_duplicate_rows_keep_the_latest_and_count_once(tmp_path):
    ratings = make_ratings()
    # user 3 has 10 ratings; re-rate its first item later with a new rating, and add an exact repeat
    first = next(r for r in ratings if r[0] == "3")
    ratings = ratings + [("3", first[1], 5.0, first[3] + 99_999), ("3", first[1], 5.0, first[3] + 99_999)]
    data = load_prepared(prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", ratings), out=tmp_path / "o"))
    assert data.stats["duplicates_dropped"] == 2
    user3 = data.interactions[data.interactions["user_id"] == "3"]
    assert len(user3) == 10  # counted once: still exactly 10, still kept
    row = user3[user3["item_id"] == first[1]].iloc[0]
    assert row["rating"] == 5.0 and row["timestamp"] == first[3] + 99_999
    assert user3.iloc[-1]["item_id"] == first[1]  # now the newest → test segment
    assert user3.iloc[-1]["split"] == "test"


def test_duplicate_that_pushes_a_user_to_the_minimum_does_not_count(tmp_path):
    ratings = [r for r in make_ratings() if r[0] != "9"]
    nine = [("9", str(k), 5.0, k) for k in range(1, 10)] + [("9", "1", 4.0, 50)]  # 10 rows, 9 distinct items
    data = load_prepared(
        prepare("movielens", raw_dir=write_csv_layout(tmp_path / "raw", ratings + nine), out=tmp_path / "o")
    )
    assert "9" not in set(data.interactions["user_id"])


def test_cache_reuse_and_invalidation(tmp_path):
    raw = write_csv_layout(tmp_path / "raw")
    a, reused = prepare_data("movielens", raw)
    assert not reused and a.parent == tmp_path / "cache" / "prepared"
    stamp = (a / "manifest.json").stat().st_mtime_ns
    b, reused = prepare_data("movielens", raw)
    assert b == a and reused and (a / "manifest.json").stat().st_mtime_ns == stamp
    c, reused = prepare_data("movielens", raw, split="loo")
    assert c != a and not reused
    # same settings, changed raw content → new key
    ratings = make_ratings()
    ratings[0] = (ratings[0][0], ratings[0][1], 1.0, ratings[0][3])
    write_csv_layout(raw, ratings)
    d, reused = prepare_data("movielens", raw)
    assert d != a and not reused
    # --out with settings already in the cache: copied, not recomputed, and identical
    e, reused = prepare_data("movielens", raw, out=tmp_path / "copy")
    assert reused and _digest(e) == _digest(d)


def test_output_is_deterministic(tmp_path):
    raw = write_csv_layout(tmp_path / "raw")
    one = prepare("movielens", raw, out=tmp_path / "one")
    two = prepare("movielens", raw, out=tmp_path / "two", force=True)
    assert _digest(one) == _digest(two)


def test_out_replaces_an_earlier_prepared_folder_but_nothing_else(tmp_path):
    raw = write_csv_layout(tmp_path / "raw")
    out = prepare("movielens", raw, out=tmp_path / "o")
    old = json.loads((out / "stats.json").read_text())
    prepare("movielens", raw, out=out, split="loo")
    assert json.loads((out / "stats.json").read_text())["split"] == "loo" != old["split"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folders left
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(InvariRankError, match="not empty and holds no prepared data"):
        prepare("movielens", raw, out=other)
    assert (other / "notes.txt").read_text() == "keep me"


def test_unknown_setting_and_bad_values(tmp_path):
    raw = write_csv_layout(tmp_path / "raw")
    with pytest.raises(InvariRankError, match="unknown setting 'min_users'"):
        prepare("movielens", raw, min_users=3)
    with pytest.raises(InvariRankError, match="min_interactions 2: expected an integer >= 3"):
        prepare("movielens", raw, min_interactions=2)
    with pytest.raises(InvariRankError, match="dataset 'imdb'"):
        prepare("imdb", raw)
    with pytest.raises(InvariRankError, match="needs --raw-dir"):
        prepare("movielens")


def test_load_prepared_errors(tmp_path):
    with pytest.raises(InvariRankError, match="folder not found"):
        load_prepared(tmp_path / "nope")
    out = prepare("movielens", write_csv_layout(tmp_path / "raw"), out=tmp_path / "o")
    (out / "queries.parquet").unlink()
    with pytest.raises(InvariRankError, match="queries.parquet: file not found"):
        load_prepared(out)


def test_items_keep_catalogue_metadata(tmp_path):
    data = load_prepared(prepare("movielens", write_csv_layout(tmp_path / "raw"), out=tmp_path / "o"))
    titles = dict(zip(data.items["item_id"], data.items["title"]))
    assert titles["4"] == "American President, The"
    assert "26" not in titles and len(titles) == 25  # never rated
    assert data.stats["items_without_metadata"] == 0
    # a rated item missing from movies.csv keeps its id as title
    items = [i for i in ITEMS if i[0] != "3"]
    data2 = load_prepared(prepare("movielens", write_csv_layout(tmp_path / "raw2", items=items), out=tmp_path / "o2"))
    row = data2.items.set_index("item_id").loc["3"]
    assert row["title"] == "3" and pd.isna(row["year"]) and row["genres"] == []
    assert data2.stats["items_without_metadata"] == 1
