"""``invarirank retrieve``: the stats table on success, one clear line and exit 2 on bad input."""

from __future__ import annotations

import json

import pytest

from invarirank.cli import main
from tests.retrieval.test_helpers import synthetic_interactions, write_prepared


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("invarirank: error: ")
    return err[0]


def test_retrieve_prints_the_stats_table(tmp_path, capsys):
    folder = write_prepared(tmp_path / "d", synthetic_interactions())
    rc = main(
        [
            "retrieve",
            "--data",
            str(folder),
            "--retriever",
            "popularity",
            "--k",
            "3",
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "coverage" in out and "recall" in out and "ndcg" in out
    for k in (15, 25, 50):
        assert any(line.split()[:1] == [str(k)] for line in out.splitlines())
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert f"kept {stats['queries_kept']}, dropped {stats['queries_dropped']}" in out
    assert (tmp_path / "out" / "candidates.jsonl").is_file()


def test_unknown_retriever_is_one_line(tmp_path, capsys):
    folder = write_prepared(tmp_path / "d", synthetic_interactions())
    assert main(["retrieve", "--data", str(folder), "--retriever", "bpr-mf", "--out", str(tmp_path / "o")]) == 2
    line = _one_error_line(capsys)
    assert "bpr-mf" in line and "lightgcn, als, popularity" in line
    assert not (tmp_path / "o").exists()


def test_k_larger_than_an_unseen_catalogue_is_one_line(tmp_path, capsys):
    pytest.importorskip("torch")  # LightGCN's module loads torch before K is checked against the catalogue
    # 30 items; each user has 8 train + 1 validation + 3 test interactions, so a test query has
    # 30 - 9 = 21 unseen items (a validation query 22)
    items = [(str(i), f"Movie {i}", None, []) for i in range(1, 31)]
    folder = write_prepared(tmp_path / "d", synthetic_interactions(n_items=30, per_user=12), items=items)
    assert (
        main(
            [
                "retrieve",
                "--data",
                str(folder),
                "--retriever",
                "lightgcn",
                "--k",
                "22",
                "--out",
                str(tmp_path / "o"),
                "--no-progress",
            ]
        )
        == 2
    )
    line = _one_error_line(capsys)
    assert "--k 22" in line and "unseen" in line and "K <= 21" in line
    assert not (tmp_path / "o").exists()
    # K equal to the smallest unseen catalogue works
    assert (
        main(
            [
                "retrieve",
                "--data",
                str(folder),
                "--retriever",
                "popularity",
                "--k",
                "21",
                "--out",
                str(tmp_path / "o"),
                "--no-progress",
            ]
        )
        == 0
    )


@pytest.mark.parametrize("ratings_or_split", ["no-train", "no-positive"])
def test_empty_training_set_is_one_line(tmp_path, capsys, ratings_or_split):
    rows = synthetic_interactions()
    if ratings_or_split == "no-train":
        rows = [(u, i, r, t, "test" if s == "train" else s) for u, i, r, t, s in rows]
    else:
        rows = [(u, i, 1.0 if s == "train" else r, t, s) for u, i, r, t, s in rows]
    folder = write_prepared(tmp_path / "d", rows)
    for retriever in ("lightgcn", "als", "popularity"):
        assert (
            main(
                [
                    "retrieve",
                    "--data",
                    str(folder),
                    "--retriever",
                    retriever,
                    "--out",
                    str(tmp_path / "o"),
                    "--no-progress",
                ]
            )
            == 2
        )
        line = _one_error_line(capsys)
        assert "empty training set" in line and "interactions.parquet" in line


def test_missing_folder_and_bad_k_are_one_line(tmp_path, capsys):
    assert main(["retrieve", "--data", str(tmp_path / "nowhere"), "--retriever", "popularity"]) == 2
    assert "nowhere" in _one_error_line(capsys)
    folder = write_prepared(tmp_path / "d", synthetic_interactions())
    (folder / "queries.parquet").unlink()
    assert main(["retrieve", "--data", str(folder), "--retriever", "popularity"]) == 2
    assert "queries.parquet" in _one_error_line(capsys)
    folder = write_prepared(tmp_path / "e", synthetic_interactions())
    assert main(["retrieve", "--data", str(folder), "--retriever", "popularity", "--k", "0"]) == 2
    assert "--k 0" in _one_error_line(capsys)
