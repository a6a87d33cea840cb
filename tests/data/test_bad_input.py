"""Bad input: one clear error line (file, line or column, what was expected), exit code 2, no
traceback and nothing half-written — or a documented rule (duplicates, titles without a year)."""

from __future__ import annotations

import gzip
import json

import pytest

from invarirank.cli import main
from invarirank.data import load_prepared, prepare
from invarirank.errors import InvariRankError
from tests.support.data import (
    amazon_metadata,
    amazon_reviews,
    make_ratings,
    write_100k_layout,
    write_atomic_layout,
    write_csv_layout,
    write_dat_layout,
    write_jsonl,
)

pytestmark = pytest.mark.usefixtures("private_cache")


def _fails(capsys, tmp_path, args: list[str], *needles: str) -> str:
    """Run the CLI, expect exit 2 with one error line holding every needle, and no output written."""
    out = tmp_path / "out"
    code = main(["data", "prepare", *args, "--out", str(out)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("invarirank: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]  # no temporary folder left
    return lines[0]


def _api_fails(dataset, raw_dir, *needles, **kw):
    with pytest.raises(InvariRankError) as info:
        prepare(dataset, raw_dir, **kw)
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)


# --- missing files ------------------------------------------------------------------------------


def test_missing_movies_file(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    (raw / "movies.csv").unlink()
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "movies.csv: file not found",
        "ratings.csv needs movies.csv",
    )
    _api_fails("movielens", raw, "movies.csv: file not found")


def test_missing_raw_folder(tmp_path, capsys):
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(tmp_path / "nowhere")],
        "nowhere: folder not found",
        "expected MovieLens files",
    )


def test_missing_amazon_metadata(tmp_path, capsys):
    write_jsonl(tmp_path / "raw" / "Books.jsonl.gz", amazon_reviews())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "meta_Books.jsonl[.gz]: file not found",
        "--metadata",
    )
    _fails(
        capsys,
        tmp_path,
        [
            "--dataset",
            "amazon-books",
            "--reviews",
            str(tmp_path / "raw" / "Books.jsonl.gz"),
            "--metadata",
            str(tmp_path / "absent.jsonl"),
        ],
        "absent.jsonl: file not found",
    )


# --- missing columns / fields -------------------------------------------------------------------


def test_missing_column(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    text = (raw / "ratings.csv").read_text().splitlines()
    (raw / "ratings.csv").write_text("\n".join(",".join(line.split(",")[:3]) for line in text) + "\n")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "ratings.csv, line 1: missing column 'timestamp'",
        "expected columns userId, movieId, rating, timestamp",
    )


def test_missing_atomic_column(tmp_path, capsys):
    raw = write_atomic_layout(tmp_path / "raw")
    lines = (raw / "tiny.inter").read_text().splitlines()
    lines[0] = lines[0].replace("rating:float", "score:float")
    (raw / "tiny.inter").write_text("\n".join(lines) + "\n")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "tiny.inter, line 1: missing column 'rating'",
        "rating:float",
    )


def test_missing_json_field(tmp_path, capsys):
    rows = amazon_reviews()
    del rows[2]["rating"]
    write_jsonl(tmp_path / "raw" / "reviews.jsonl", rows)
    write_jsonl(tmp_path / "raw" / "metadata.jsonl", amazon_metadata())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "reviews.jsonl, line 3: missing field 'rating'",
        "user_id, parent_asin, rating, timestamp",
    )


# --- non-numeric values -------------------------------------------------------------------------


def _set_field(path, sep: str, *, line: int, column: int, value: str) -> None:
    """Overwrite one field (0-based line and column) of a delimited text file."""
    lines = path.read_text().splitlines()
    parts = lines[line].split(sep)
    parts[column] = value
    lines[line] = sep.join(parts)
    path.write_text("\n".join(lines) + "\n")


def test_non_numeric_rating_csv(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    _set_field(raw / "ratings.csv", ",", line=4, column=2, value="abc")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "ratings.csv, line 5, column 'rating': expected a number, found 'abc'",
    )
    _api_fails("movielens", raw, "line 5, column 'rating'")


def test_non_numeric_rating_u_data_and_dat(tmp_path, capsys):
    raw = write_100k_layout(tmp_path / "raw")
    _set_field(raw / "u.data", "\t", line=6, column=2, value="four")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "u.data, line 7, column 'rating': expected a number, found 'four'",
    )
    raw2 = write_dat_layout(tmp_path / "raw2")
    lines = (raw2 / "ratings.dat").read_text(encoding="latin-1").splitlines()
    lines[1] = lines[1].rsplit("::", 1)[0] + "::yesterday"
    (raw2 / "ratings.dat").write_text("\n".join(lines) + "\n", encoding="latin-1")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw2)],
        "ratings.dat, line 2, column 'Timestamp': expected an integer, found 'yesterday'",
    )


def test_non_numeric_rating_json(tmp_path, capsys):
    rows = amazon_reviews()
    rows[4]["rating"] = "five"
    write_jsonl(tmp_path / "raw" / "reviews.jsonl.gz", rows)
    write_jsonl(tmp_path / "raw" / "metadata.jsonl.gz", amazon_metadata())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "reviews.jsonl.gz, line 5, field 'rating': expected a number, found 'five'",
    )


def test_wrong_field_count(tmp_path, capsys):
    raw = write_dat_layout(tmp_path / "raw")
    lines = (raw / "ratings.dat").read_text(encoding="latin-1").splitlines()
    lines[3] = "1::2::3"
    (raw / "ratings.dat").write_text("\n".join(lines) + "\n", encoding="latin-1")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "ratings.dat, line 4: expected 4 fields separated by '::'",
        "found 3",
    )


def test_invalid_json_line(tmp_path, capsys):
    path = write_jsonl(tmp_path / "raw" / "reviews.jsonl", amazon_reviews())
    with open(path, "a") as fh:
        fh.write('{"user_id": "A", "parent_asin": \n')
    write_jsonl(tmp_path / "raw" / "metadata.jsonl", amazon_metadata())
    n = len(amazon_reviews()) + 1
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        f"reviews.jsonl, line {n}, column",
        "invalid JSON",
        "expected one JSON object per line",
    )


# --- empty files --------------------------------------------------------------------------------


def test_empty_ratings_file(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    (raw / "ratings.csv").write_text("")
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "movielens", "--raw-dir", str(raw)],
        "ratings.csv: file is empty",
        "expected MovieLens ratings",
    )
    (raw / "ratings.csv").write_text("userId,movieId,rating,timestamp\n")
    _fails(capsys, tmp_path, ["--dataset", "movielens", "--raw-dir", str(raw)], "ratings.csv: no rating rows")


def test_empty_items_file(tmp_path, capsys):
    raw = write_100k_layout(tmp_path / "raw")
    (raw / "u.item").write_text("")
    _fails(capsys, tmp_path, ["--dataset", "movielens", "--raw-dir", str(raw)], "u.item: file is empty")


def test_empty_json_files(tmp_path, capsys):
    (tmp_path / "raw").mkdir()
    with gzip.open(tmp_path / "raw" / "reviews.jsonl.gz", "wb") as fh:
        fh.write(b"\n\n")
    write_jsonl(tmp_path / "raw" / "metadata.jsonl.gz", amazon_metadata())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "reviews.jsonl.gz: no JSON lines found",
    )
    (tmp_path / "raw" / "metadata.jsonl.gz").write_bytes(b"")
    write_jsonl(tmp_path / "raw" / "reviews.jsonl.gz", amazon_reviews())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "metadata.jsonl.gz: file is empty",
    )


# --- broken gzip --------------------------------------------------------------------------------


def test_truncated_gzip(tmp_path, capsys):
    path = write_jsonl(tmp_path / "raw" / "Books.jsonl.gz", amazon_reviews(n_users=40))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    write_jsonl(tmp_path / "raw" / "meta_Books.jsonl.gz", amazon_metadata())
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "Books.jsonl.gz: broken gzip data after line",
        "expected a complete gzip file",
    )


def test_corrupt_gzip(tmp_path, capsys):
    path = write_jsonl(tmp_path / "raw" / "Books.jsonl.gz", amazon_reviews(n_users=40))
    data = bytearray(path.read_bytes())
    for k in range(30, 60):
        data[k] ^= 0xFF
    path.write_bytes(bytes(data))
    write_jsonl(tmp_path / "raw" / "meta_Books.jsonl.gz", amazon_metadata())
    _fails(
        capsys, tmp_path, ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")], "Books.jsonl.gz:", "gzip"
    )


def test_gzip_metadata_broken(tmp_path, capsys):
    write_jsonl(tmp_path / "raw" / "Books.jsonl.gz", amazon_reviews())
    path = write_jsonl(tmp_path / "raw" / "meta_Books.jsonl.gz", amazon_metadata())
    path.write_bytes(path.read_bytes()[:-12])
    _fails(
        capsys,
        tmp_path,
        ["--dataset", "amazon-books", "--raw-dir", str(tmp_path / "raw")],
        "meta_Books.jsonl.gz: broken gzip data",
    )


# --- documented rules (no error) ----------------------------------------------------------------


def test_duplicates_rule_via_cli(tmp_path, capsys):
    ratings = make_ratings()
    ratings.append(ratings[0][:2] + (1.0, ratings[0][3] + 5))
    raw = write_csv_layout(tmp_path / "raw", ratings)
    assert main(["data", "prepare", "--dataset", "movielens", "--raw-dir", str(raw), "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("duplicate rows dropped") and line.rstrip().endswith(" 1") for line in out.splitlines())
    data = load_prepared(tmp_path / "o")
    u, i = ratings[0][:2]
    rows = data.interactions[(data.interactions["user_id"] == u) & (data.interactions["item_id"] == i)]
    assert rows["rating"].tolist() == [1.0]  # the later rating wins


def test_title_without_year_rule_via_cli(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")  # item 5 is "unknown", no year
    assert main(["data", "prepare", "--dataset", "movielens", "--raw-dir", str(raw), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    items = load_prepared(tmp_path / "o").items.set_index("item_id")
    assert items.loc["5", "title"] == "unknown" and items.loc["5", "year"] is not None
    assert str(items.loc["5", "year"]) == "<NA>"
    stats = json.loads((tmp_path / "o" / "stats.json").read_text())
    assert stats["titles_without_year"] == 1


def test_out_that_is_a_file(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    target = tmp_path / "file.txt"
    target.write_text("x")
    code = main(["data", "prepare", "--dataset", "movielens", "--raw-dir", str(raw), "--out", str(target)])
    err = capsys.readouterr().err
    assert code == 2 and "file.txt: exists and is not a folder" in err and target.read_text() == "x"


def test_bad_min_interactions_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["data", "prepare", "--dataset", "ml-100k", "--min-interactions", "2"])
    assert info.value.code == 2
    assert "expected an integer >= 3" in capsys.readouterr().err


def test_error_keeps_an_existing_output(tmp_path, capsys):
    raw = write_csv_layout(tmp_path / "raw")
    out = prepare("movielens", raw, out=tmp_path / "keep")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (raw / "ratings.csv").write_text("userId,movieId,rating,timestamp\n1,2,x,3\n")
    code = main(["data", "prepare", "--dataset", "movielens", "--raw-dir", str(raw), "--out", str(out)])
    assert code == 2 and "line 2, column 'rating'" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
