"""Hostile input to ``invarirank data prepare`` and ``invarirank retrieve`` (issue 14): exit 2, one error line naming
the path or parameter, no traceback, ``--out`` left as it was (see tests/support/hostile.py). The raw-file cases of
``data prepare`` (missing, malformed and inconsistent files) are tabled in tests/data/test_bad_input.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.retrieval.test_helpers import synthetic_interactions, write_prepared
from tests.support.data import write_csv_layout
from tests.support.hostile import expect_rejected, full_disk, read_only

pytestmark = pytest.mark.usefixtures("private_cache")


def _file(tmp_path: Path, name: str = "file") -> Path:
    (tmp_path / name).write_text("x")
    return tmp_path / name


def _ro(tmp_path: Path, monkeypatch, name: str = "ro") -> Path:
    (tmp_path / name).mkdir()
    read_only(monkeypatch, tmp_path / name)
    return tmp_path / name


# (id, setup(tmp_path, monkeypatch) -> (extra args, out), fragments)
DATA_CASES = [
    ("out-is-file", lambda t, m: ([], _file(t)), ["file: exists and is not a folder"]),
    ("out-under-file", lambda t, m: ([], _file(t) / "prep"), ["--out", "is a file, expected a folder"]),
    ("out-read-only", lambda t, m: ([], _ro(t, m) / "prep"), ["--out", "not writable"]),
    (
        "cache-is-file",
        lambda t, m: (m.setenv("INVARIRANK_CACHE", str(_file(t, "cache"))), ([], t / "prep"))[1],
        ["cache folder ($INVARIRANK_CACHE)", "exists and is not a folder"],
    ),
    (
        "cache-read-only",
        lambda t, m: (m.setenv("INVARIRANK_CACHE", str(_ro(t, m, "cache"))), ([], t / "prep"))[1],
        ["cache folder ($INVARIRANK_CACHE)", "not writable"],
    ),
    ("history-len-0", lambda t, m: (["--history-len", "0"], t / "prep"), ["--history-len", "integer >= 1"]),
    ("history-len-text", lambda t, m: (["--history-len", "x"], t / "prep"), ["--history-len", "integer >= 1"]),
    (
        "threshold-nan",
        lambda t, m: (["--positive-threshold", "nan"], t / "prep"),
        ["--positive-threshold", "finite number"],
    ),
    ("min-interactions-2", lambda t, m: (["--min-interactions", "2"], t / "prep"), ["integer >= 3"]),
    ("split-unknown", lambda t, m: (["--split", "random"], t / "prep"), ["--split", "invalid choice"]),
    ("raw-dir-missing", lambda t, m: (["--raw-dir", str(t / "nowhere")], t / "prep"), ["nowhere: folder not found"]),
    (  # the prepared folder, never its hidden temporary one, which is removed
        "disk-full",
        lambda t, m: (full_disk(m, lambda p: p.name == "prep"), ([], t / "prep"))[1],
        ["prep: cannot write (no space left"],
    ),
]


@pytest.mark.parametrize("name,setup,needles", DATA_CASES, ids=[c[0] for c in DATA_CASES])
def test_data_prepare(name, setup, needles, tmp_path, capsys, monkeypatch):
    raw = write_csv_layout(tmp_path / "raw")
    extra, out = setup(tmp_path, monkeypatch)
    argv = ["data", "prepare", "--dataset", "movielens", "--raw-dir", raw, "--out", out, *extra]
    expect_rejected(capsys, argv, needles, out)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


RETRIEVE_CASES = [
    ("data-missing", lambda t, m, d: (["--data", t / "nowhere"], t / "cand"), ["nowhere"]),
    ("k-0", lambda t, m, d: (["--k", "0"], t / "cand"), ["k"]),
    ("k-text", lambda t, m, d: (["--k", "x"], t / "cand"), ["argument --k", "invalid int value"]),
    ("epochs-0", lambda t, m, d: (["--epochs", "0"], t / "cand"), ["--epochs", "integer >= 1"]),
    ("retriever-unknown", lambda t, m, d: (["--retriever", "bm25"], t / "cand"), ["bm25"]),
    ("out-is-file", lambda t, m, d: ([], _file(t)), ["--out", "file: exists and is not a folder"]),
    ("out-under-file", lambda t, m, d: ([], _file(t) / "cand"), ["--out", "is a file, expected a folder"]),
    ("out-read-only", lambda t, m, d: ([], _ro(t, m) / "cand"), ["--out", "not writable"]),
    (
        "cache-is-file",
        lambda t, m, d: (m.setenv("INVARIRANK_CACHE", str(_file(t, "cache"))), ([], t / "cand"))[1],
        ["cache folder ($INVARIRANK_CACHE)", "exists and is not a folder"],
    ),
]


@pytest.mark.parametrize("name,setup,needles", RETRIEVE_CASES, ids=[c[0] for c in RETRIEVE_CASES])
def test_retrieve(name, setup, needles, tmp_path, capsys, monkeypatch):
    data = write_prepared(tmp_path / "d", synthetic_interactions())
    extra, out = setup(tmp_path, monkeypatch, data)
    argv = ["retrieve", "--data", data, "--retriever", "popularity", "--k", "3", "--out", out, "--no-progress", *extra]
    expect_rejected(capsys, argv, needles, out)
