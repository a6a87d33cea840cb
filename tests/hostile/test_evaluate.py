"""Hostile input to ``invarirank evaluate`` (issue 14): exit 2, one error line naming the file (and line), field or
parameter, no traceback, and the metrics file (``--output``) left as it was (see tests/support/hostile.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile import expect_rejected, read_only


def _rows(k: int = 6, queries: int = 3, m: int = 3) -> list[dict[str, Any]]:
    items = [f"i{j}" for j in range(k)]
    rows = []
    for q in range(queries):
        for t in range(m):
            order = items[t:] + items[:t]
            rows.append(
                {
                    "query_id": f"q{q}",
                    "method": "zero_shot",
                    "permutation": t,
                    "input": order,
                    "output": sorted(order),
                    "relevant": [items[q % k]],
                }
            )
    return rows


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _mutated(field: str, value: Any, line: int = 0):
    def make(tmp_path: Path) -> Path:
        rows = _rows()
        rows[line][field] = value
        return _write(tmp_path / "obs.jsonl", rows)

    return make


def _raw(data: bytes):
    def make(tmp_path: Path) -> Path:
        p = tmp_path / "obs.jsonl"
        p.write_bytes(data)
        return p

    return make


def _good(tmp_path: Path) -> Path:
    return _write(tmp_path / "obs.jsonl", _rows())


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "obsdir").mkdir()
    return tmp_path / "obsdir"


# (id, the observations file, extra flags, fragments); the good file has K = 6
CASES = [
    ("relevant-string", _mutated("relevant", "i0"), [], [":1:", "'relevant'", "list of item ids"]),
    ("input-null-id", _mutated("input", [None, "i1"]), [], [":1:", "'input'", "must be a string"]),
    ("permutation-negative", _mutated("permutation", -1), [], [":1:", "'permutation'"]),
    ("output-not-permutation", _mutated("output", ["i0"]), [], [":1:", "output"]),
    ("method-empty", _mutated("method", ""), [], [":1:", "'method'"]),
    ("missing-field", _mutated("relevant", None), [], [":1:", "relevant"]),
    ("not-utf8", _raw(json.dumps(_rows()[0]).encode() + b"\n\xff\n"), [], [":2:"]),
    ("malformed-json", _raw(b"{\n"), [], [":1:"]),
    ("empty-file", _raw(b""), [], ["no observations"]),
    ("file-is-folder", lambda tmp: _folder(tmp), [], ["obsdir: is a folder"]),
    ("file-missing", lambda tmp: tmp / "nope.jsonl", [], ["nope.jsonl: observations file not found"]),
    ("exposure-k-above-k", _good, ["--exposure-k", "7"], ["--exposure-k 7 is larger than K = 6", "obs.jsonl"]),
    ("buckets-above-k", _good, ["--buckets", "7"], ["--buckets 7 is larger than K = 6"]),
    ("k-zero", _good, ["--k", "0"], ["argument --k", "cut-offs >= 1"]),
    ("k-text", _good, ["--k", "a,b"], ["argument --k", "comma-separated integers"]),
    ("exposure-k-zero", _good, ["--exposure-k", "0"], ["--exposure-k: expected an integer >= 1"]),
    ("buckets-zero", _good, ["--buckets", "0"], ["--buckets: expected an integer >= 1"]),
    ("bootstrap-negative", _good, ["--bootstrap", "-1"], ["--bootstrap: expected an integer >= 0"]),
    ("exact-max-k-too-big", _good, ["--exact-max-k", "99"], ["--exact-max-k: expected an integer from 0 to 16"]),
    ("seed-negative", _good, ["--seed", "-1"], ["--seed: expected an integer >= 0"]),
]


@pytest.mark.parametrize("name,make,extra,needles", CASES, ids=[c[0] for c in CASES])
def test_bad_observations_and_settings(name, make, extra, needles, tmp_path, capsys):
    obs = make(tmp_path)
    expect_rejected(capsys, ["evaluate", obs, *extra, "--output", tmp_path / "m.json"], needles, tmp_path / "m.json")


def _out_folder(tmp_path, monkeypatch):
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "keep.txt").write_text("keep")
    return tmp_path / "outdir", ["outdir: is a folder, expected a file name"]


def _out_under_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "m.json", ["--output", "file: exists and is not a folder"]


def _out_read_only(tmp_path, monkeypatch):
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "m.json").write_text("{}")
    read_only(monkeypatch, tmp_path / "ro")
    return tmp_path / "ro" / "m.json", ["--output", "ro", "not writable"]


def _out_is_input(tmp_path, monkeypatch):
    return tmp_path / "obs.jsonl", ["would overwrite the observations file"]


PLACES = [_out_folder, _out_under_file, _out_read_only, _out_is_input]


@pytest.mark.parametrize("case", PLACES, ids=[c.__name__.strip("_") for c in PLACES])
def test_unwritable_output(case, tmp_path, capsys, monkeypatch):
    obs = _good(tmp_path)
    data = obs.read_bytes()
    out, needles = case(tmp_path, monkeypatch)
    expect_rejected(capsys, ["evaluate", obs, "--output", out], needles, out)
    assert obs.read_bytes() == data


def test_default_exposure_k_on_short_lists_is_kept_with_a_note(tmp_path, capsys):
    """The documented defaults on lists shorter than them: kept (the numbers of earlier versions), one note line."""
    from invarirank.cli import main

    obs = _write(tmp_path / "obs.jsonl", _rows(k=4))
    assert main(["evaluate", str(obs), "--output", str(tmp_path / "m.json")]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("invarirank: note:")]
    assert len(notes) == 1 and "default --exposure-k 5 is larger than K = 4" in notes[0]
    assert json.loads((tmp_path / "m.json").read_text())["settings"]["exposure_k"] == 5
