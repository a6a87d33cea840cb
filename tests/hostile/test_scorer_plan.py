"""Hostile input, round 3, F3: what only the scorer can check (an item that renders as an empty line, a prompt over
``max_length``, more candidates than the choice scorer has labels) is checked for every query — test and
validation — before the first pass. The bad query is never the first one, so a check made only when that query is
reached would already have written a finished shard: a rejected run exits 2 with one line naming the query and
leaves no run folder, and the corrected run then goes through in the same folder (slow: loads SmolLM2-135M)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from tests.support.hostile import expect_rejected

pytestmark = pytest.mark.slow


def _lines(n_validation: int = 0) -> list[dict[str, Any]]:
    return [query_to_json(q) for q in synthetic_queries(n_test=2, n_validation=n_validation, k=6, seed=1)]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return path


def _empty_line(lines: list[dict[str, Any]], q: int = 1) -> None:
    lines[q]["candidates"][3].update(title="", year=None, genres=[])


def _long_history(lines: list[dict[str, Any]]) -> None:
    first = lines[1]["history"][0]
    lines[1]["history"] = [dict(first, item_id=f"h{j}") for j in range(500)]


def _thirty(lines: list[dict[str, Any]]) -> None:
    for d in lines:
        base = d["candidates"][0]
        d["candidates"] = [dict(base, item_id=f"c{j}", title=f"Film {j}") for j in range(30)]
        d["ground_truth"] = ["c3"]


#: (id, mutation of the lines, extra flags, fragments of the error line)
CASES: list[tuple[str, Callable[[list[dict[str, Any]]], None], list[str], list[str]]] = [
    ("span-empty-line", _empty_line, [], ["query u001", "position 4", "renders as an empty line"]),
    ("choice-empty-line", _empty_line, ["--scorer", "choice"], ["query u001", "renders as an empty line"]),
    ("span-500-history-items", _long_history, [], ["query u001", "more than max_length 4096", "truncate_history=True"]),
    (
        "span-title-over-the-limit",
        lambda lines: lines[1]["candidates"][2].update(title="ballad of " * 2000),
        [],
        ["query u001", "more than max_length 4096"],
    ),
    (
        "span-max-length-10",
        lambda lines: None,
        ["--scorer-option", "max_length=10"],
        ["query u000", "more than max_length 10"],
    ),
    ("choice-k30", _thirty, ["--scorer", "choice"], ["cannot label 30 candidates", "the largest K supported is 26"]),
]


def _argv(cands: Path, out: Path, *extra: str) -> list[Any]:
    return [
        "rerank",
        "--candidates",
        cands,
        "--m",
        "2",
        "--methods",
        "zero_shot",
        "--n-bootstrap",
        "0",
        "--out",
        out,
        "--no-progress",
        *extra,
    ]


@pytest.mark.parametrize("name,mutate,extra,needles", CASES, ids=[c[0] for c in CASES])
def test_f3_scorer_checks_come_before_any_pass(name, mutate, extra, needles, tmp_path, capsys):
    pytest.importorskip("torch")
    lines = _lines()
    bad = copy.deepcopy(lines)
    mutate(bad)
    out = tmp_path / "run"
    expect_rejected(capsys, _argv(_write(tmp_path / "bad.jsonl", bad), out, *extra), needles, out=out)
    assert not out.exists()
    if name == "choice-k30":
        return  # no corrected form of the same request
    # the corrected input goes through in the same folder: nothing left by the failure blocks it
    capsys.readouterr()
    good = copy.deepcopy(lines)
    extra_ok = [] if name == "span-max-length-10" else extra
    assert main([str(a) for a in _argv(_write(tmp_path / "good.jsonl", good), out, *extra_ok)]) == 0
    assert (out / "metrics.json").is_file() and not (out / ".work").exists()


def test_f3_validation_queries_are_checked_before_the_calibration(tmp_path, capsys):
    """A STELLA_LW run checks its validation queries too, before calibrating on them."""
    pytest.importorskip("torch")
    lines = _lines(n_validation=2)
    val = [i for i, d in enumerate(lines) if d["split"] == "validation"]
    _empty_line(lines, val[-1])
    out = tmp_path / "run"
    argv = _argv(_write(tmp_path / "bad.jsonl", lines), out, "--calibration-queries", "2", "--calibration-repeats", "1")
    argv[argv.index("zero_shot")] = "zero_shot,stella"
    expect_rejected(capsys, argv, [f"query {lines[val[-1]]['query_id']}", "renders as an empty line"], out=out)
    assert not out.exists()
