"""MovieLens raw layouts: detection, parsing, title clean-up; every layout gives the same prepared data."""

from __future__ import annotations

import pandas as pd
import pytest

from invarirank.data import load_prepared, prepare
from invarirank.data._movielens import detect_layout, read_movielens
from invarirank.data._titles import parse_genres, split_title_year
from invarirank.errors import InvariRankError
from tests.support.data import EXPECTED_TITLES, ITEMS, LAYOUT_WRITERS, make_ratings, write_csv_layout

pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.mark.parametrize("layout", sorted(LAYOUT_WRITERS))
def test_layout_is_detected_and_read(tmp_path, layout):
    folder = LAYOUT_WRITERS[layout](tmp_path / layout)
    assert detect_layout(folder).name == layout
    raw = read_movielens(folder)
    ratings = make_ratings()
    assert raw.ratings.num_rows == len(ratings)
    assert raw.ratings.schema.names == ["user_id", "item_id", "rating", "timestamp"]
    got = list(zip(*(raw.ratings.column(c).to_pylist() for c in raw.ratings.schema.names)))
    assert got == ratings
    items = raw.items.set_index("item_id")
    assert len(items) == len(ITEMS)
    for item_id, (title, year) in EXPECTED_TITLES.items():
        assert items.loc[item_id, "title"] == title
        assert pd.isna(items.loc[item_id, "year"]) if year is None else items.loc[item_id, "year"] == year
    assert items.loc["1", "genres"] == ["Animation", "Children's", "Comedy"]
    assert items.loc["21", "genres"] == []  # "(no genres listed)" / no flag set
    assert raw.titles_without_year == 1


def test_every_layout_prepares_to_the_same_tables(tmp_path):
    results = {}
    for layout, writer in LAYOUT_WRITERS.items():
        folder = prepare("movielens", raw_dir=writer(tmp_path / layout), out=tmp_path / f"out-{layout}")
        results[layout] = load_prepared(folder)
    ref = results["csv"]
    for layout, data in results.items():
        pd.testing.assert_frame_equal(data.interactions, ref.interactions, obj=layout)
        pd.testing.assert_frame_equal(data.items, ref.items, obj=layout)
        pd.testing.assert_frame_equal(data.queries, ref.queries, obj=layout)
        assert data.stats["layout"] == f"movielens-{layout}"
    # the never-rated item is not part of the prepared items; ids sort numerically
    assert ref.items["item_id"].tolist() == [str(i) for i in range(1, 26)]
    assert ref.stats["catalogue_items"] == len(ITEMS)


def test_layout_in_single_subfolder_is_found(tmp_path):
    write_csv_layout(tmp_path / "ml-latest-small")
    assert detect_layout(tmp_path).ratings == tmp_path / "ml-latest-small" / "ratings.csv"


def test_several_subfolders_are_ambiguous(tmp_path):
    write_csv_layout(tmp_path / "a")
    write_csv_layout(tmp_path / "b")
    with pytest.raises(InvariRankError, match="several sub-folders"):
        detect_layout(tmp_path)


def test_no_layout_names_the_expected_files(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(InvariRankError, match=r"no MovieLens files found; expected ratings.csv \+ movies.csv"):
        detect_layout(tmp_path)


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("Toy Story (1995)", ("Toy Story", 1995)),
        ("  Heat (1995)  ", ("Heat", 1995)),
        (
            "City of Lost Children, The (Cité des enfants perdus, La) (1995)",
            ("City of Lost Children, The (Cité des enfants perdus, La)", 1995),
        ),
        ("unknown", ("unknown", None)),
        ("Babylon 5 (1994-1998)", ("Babylon 5 (1994-1998)", None)),
        ("1984 (1984)", ("1984", 1984)),
        ("(2000)", ("(2000)", 2000)),
        ("Year in the middle (1999) remake", ("Year in the middle (1999) remake", None)),
    ],
)
def test_title_year_rule(raw, expected):
    assert split_title_year(raw) == expected


def test_genre_rule():
    assert parse_genres("(no genres listed)", "|") == ()
    assert parse_genres("(no genres listed)", " ") == ()
    assert parse_genres("", "|") == ()
    assert parse_genres("Action|Sci-Fi", "|") == ("Action", "Sci-Fi")
    assert parse_genres("Children's Comedy", " ") == ("Children's", "Comedy")


def test_atomic_year_column_falls_back_to_title(tmp_path):
    folder = tmp_path / "atomic"
    folder.mkdir()
    (folder / "x.inter").write_text(
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n1\t1\t4\t10\n", encoding="utf-8"
    )
    (folder / "x.item").write_text(
        "item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq\n"
        "1\tLand Before Time III (1995)\tV\tAnimation\n"
        "2\tunkonwn\tunkonwn\tunknown\n"
        "3\tPlain\t1999\t\n",
        encoding="utf-8",
    )
    items = read_movielens(folder).items.set_index("item_id")
    assert items.loc["1", "title"] == "Land Before Time III" and items.loc["1", "year"] == 1995
    assert items.loc["2", "title"] == "unkonwn" and pd.isna(items.loc["2", "year"])
    assert items.loc["3", "year"] == 1999 and items.loc["3", "genres"] == []


def test_latin1_dat_titles_are_decoded(tmp_path):
    folder = LAYOUT_WRITERS["dat"](tmp_path / "dat")
    assert b"Caf\xe9" in (folder / "movies.dat").read_bytes()  # really latin-1 on disk
    items = read_movielens(folder).items.set_index("item_id")
    assert items.loc["6", "title"] == "Café au lait"
