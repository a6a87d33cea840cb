"""Amazon Reviews 2023 JSONL: file names, gzip, streaming in chunks, metadata, missing metadata rule."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

from invarirank.data import load_prepared, prepare
from invarirank.data._amazon import convert_reviews, read_metadata
from invarirank.data._amazon_files import find_amazon_files
from invarirank.errors import InvariRankError
from tests.support.data import amazon_metadata, amazon_reviews, write_jsonl

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize(
    "names",
    [
        ("reviews.jsonl", "metadata.jsonl"),
        ("reviews.jsonl.gz", "metadata.jsonl.gz"),
        ("Books.jsonl.gz", "meta_Books.jsonl.gz"),
        ("Books.jsonl", "meta_Books.jsonl"),
    ],
)
def test_file_names_are_found(tmp_path, names):
    write_jsonl(tmp_path / names[0], amazon_reviews())
    write_jsonl(tmp_path / names[1], amazon_metadata())
    assert find_amazon_files(tmp_path) == (tmp_path / names[0], tmp_path / names[1])


def test_explicit_files_win(tmp_path):
    rev = write_jsonl(tmp_path / "a" / "my_reviews.jsonl.gz", amazon_reviews())
    meta = write_jsonl(tmp_path / "b" / "my_meta.jsonl", amazon_metadata())
    assert find_amazon_files(None, rev, meta) == (rev, meta)
    # only --reviews: the matching metadata beside it
    rev2 = write_jsonl(tmp_path / "c" / "Kindle.jsonl", amazon_reviews())
    meta2 = write_jsonl(tmp_path / "c" / "meta_Kindle.jsonl", amazon_metadata())
    assert find_amazon_files(None, rev2) == (rev2, meta2)


def test_several_categories_need_an_explicit_choice(tmp_path):
    write_jsonl(tmp_path / "Kindle.jsonl.gz", amazon_reviews())
    write_jsonl(tmp_path / "Music.jsonl.gz", amazon_reviews())
    with pytest.raises(InvariRankError, match="several candidates .*--reviews"):
        find_amazon_files(tmp_path)


@pytest.mark.parametrize("fast", [True, False])
def test_stream_conversion_in_chunks(tmp_path, fast):
    rows = amazon_reviews(n_users=7)
    src = write_jsonl(tmp_path / "reviews.jsonl.gz", rows)
    out = tmp_path / "r.parquet"
    assert convert_reviews(src, out, chunk_rows=4, block_bytes=2048, fast=fast) == len(rows)
    pf = pq.ParquetFile(out)
    assert pf.metadata.num_row_groups > 1  # really written chunk by chunk
    table = pf.read()
    assert table.column("user_id").to_pylist() == [r["user_id"] for r in rows]
    assert table.column("item_id").to_pylist() == [r["parent_asin"] for r in rows]
    assert table.column("timestamp").to_pylist() == [r["timestamp"] for r in rows]  # ms, as given
    assert table.column("rating").to_pylist() == [r["rating"] for r in rows]


def test_unusual_types_fall_back_to_the_line_reader(tmp_path):
    rows = amazon_reviews(n_users=3)
    rows[1]["user_id"] = 12345  # a number where Arrow expects a string
    rows[2]["rating"] = "4.0"
    rows[3]["timestamp"] = 1.6e12
    rows[4]["user_id"] = "  padded  "
    src = write_jsonl(tmp_path / "reviews.jsonl", rows)
    out = tmp_path / "r.parquet"
    assert convert_reviews(src, out) == len(rows)
    table = pq.read_table(out)
    assert table.column("user_id").to_pylist()[1] == "12345"
    assert table.column("user_id").to_pylist()[4] == "padded"
    assert table.column("rating").to_pylist()[2] == 4.0
    assert table.column("timestamp").to_pylist()[3] == 1_600_000_000_000


def test_fast_and_line_readers_agree(tmp_path):
    rows = amazon_reviews(n_users=9)
    rows[0]["user_id"] = " spaced "
    src = write_jsonl(tmp_path / "reviews.jsonl.gz", rows)
    convert_reviews(src, tmp_path / "a.parquet", fast=True)
    convert_reviews(src, tmp_path / "b.parquet", fast=False)
    assert pq.read_table(tmp_path / "a.parquet").equals(pq.read_table(tmp_path / "b.parquet"))
    meta = amazon_metadata()
    meta[2]["title"] = "  spaced   title "
    meta[3]["categories"] = None
    del meta[4]["title"]
    mpath = write_jsonl(tmp_path / "m.jsonl", meta)
    fast = read_metadata(mpath)
    assert fast.loc[2, "title"] == "spaced title" and fast.loc[3, "genres"] == [] and fast.loc[4, "title"] == "B004"
    meta[5]["categories"] = ["Books", 7]  # not all strings: only the line reader takes it
    slow = read_metadata(write_jsonl(tmp_path / "m2.jsonl", meta))
    assert slow.loc[5, "genres"] == ["Books", "7"]
    pd.testing.assert_frame_equal(fast.drop(index=5), slow.drop(index=5))


@pytest.mark.parametrize("gz", [False, True])
def test_prepare_amazon(tmp_path, gz):
    ext = ".jsonl.gz" if gz else ".jsonl"
    reviews = amazon_reviews(n_users=6)
    write_jsonl(tmp_path / "raw" / f"Books{ext}", reviews)
    # metadata lacks B008 → kept with its id as title; a duplicate line keeps the first
    meta = amazon_metadata([f"B{k:03d}" for k in range(8)])
    meta.append(dict(meta[0], title="a later duplicate"))
    meta[3]["title"] = None
    write_jsonl(tmp_path / "raw" / f"meta_Books{ext}", meta)
    folder = prepare("amazon-books", raw_dir=tmp_path / "raw", out=tmp_path / "out")
    data = load_prepared(folder)
    s = data.stats
    assert s["min_interactions"] == 3 and s["timestamp_unit"] == "ms"
    assert s["raw_interactions"] == len(reviews)
    assert s["raw_users"] == 6 and s["users"] == 6
    items = data.items.set_index("item_id")
    assert items.loc["B000", "title"] == "Book number 0"
    assert items.loc["B001", "genres"] == ["Books", "Literature & Fiction"]
    assert items.loc["B000", "genres"] == []
    assert items.loc["B008", "title"] == "B008" and items.loc["B008", "genres"] == []
    assert items.loc["B003", "title"] == "B003"  # null title → the id
    assert items["year"].isna().all()
    assert s["items_without_metadata"] == 1
    assert data.interactions["timestamp"].min() >= 1_588_000_000_000
    assert set(data.queries["split"]) <= {"test", "validation"}


def test_min_interactions_counts_all_ratings_amazon(tmp_path):
    rows = [{"user_id": "A", "parent_asin": f"I{k}", "rating": 1.0 if k < 2 else 5.0, "timestamp": k} for k in range(3)]
    rows += [{"user_id": "B", "parent_asin": f"I{k}", "rating": 5.0, "timestamp": k} for k in range(2)]
    write_jsonl(tmp_path / "reviews.jsonl", rows)
    write_jsonl(tmp_path / "metadata.jsonl", [{"parent_asin": "I0", "title": "t", "categories": []}])
    data = load_prepared(prepare("amazon-books", raw_dir=tmp_path, out=tmp_path / "out"))
    assert data.stats["users"] == 1 and data.stats["users_dropped"] == 1
    assert data.interactions["user_id"].unique().tolist() == ["A"]
    assert data.queries["user_id"].tolist() == ["A"]  # user A's one positive is its test item (issue 21: a folder
    # without test queries is refused)


def test_read_metadata_restricts_to_wanted(tmp_path):
    path = write_jsonl(tmp_path / "m.jsonl", amazon_metadata())
    frame = read_metadata(path, {"B001", "B004"})
    assert sorted(frame["item_id"]) == ["B001", "B004"]
    assert isinstance(frame, pd.DataFrame)


def test_converted_reviews_are_reused_for_new_settings(tmp_path):
    write_jsonl(tmp_path / "reviews.jsonl.gz", amazon_reviews(n_users=5))
    write_jsonl(tmp_path / "metadata.jsonl.gz", amazon_metadata())
    prepare("amazon-books", raw_dir=tmp_path, out=tmp_path / "o1")
    converted = list((tmp_path / "cache" / "converted").glob("*.parquet"))
    assert len(converted) == 1
    stamp = converted[0].stat().st_mtime_ns
    prepare("amazon-books", raw_dir=tmp_path, out=tmp_path / "o2", split="loo")
    assert converted[0].stat().st_mtime_ns == stamp
    assert load_prepared(tmp_path / "o2").stats["split"] == "loo"
