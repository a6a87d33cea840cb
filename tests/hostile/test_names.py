"""Hostile input, round 4 (issue 39) F11: a message never calls an input that exists "not found" — a folder given
where a file is expected, a file where a folder is, a FIFO — and names what is there instead; a missing one is
still "not found". One row per entry point (the command line, then the Python front door)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import invarirank as ir
from invarirank.errors import InvariRankError
from tests.support.hostile import expect_rejected, rerank_argv
from tests.support.runner import toy_candidates

pytestmark = pytest.mark.usefixtures("private_cache")


def _places(tmp_path: Path) -> dict[str, Path]:
    """A folder, a file and (where the system has them) a FIFO to hand where the other kind is expected."""
    folder, file = tmp_path / "a_folder.yaml", tmp_path / "a_file"
    folder.mkdir()
    file.write_text("x\n", encoding="utf-8")
    places = {"folder": folder, "file": file, "cands": toy_candidates(tmp_path)}
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "a_fifo")
        places["fifo"] = tmp_path / "a_fifo"
    return places


# (id, argv from the places, the place named, fragments besides it)
CLI = [
    ("grid-folder", lambda p: ["grid", p["folder"], "--dry-run"], "folder", ["is a folder", "grid file"]),
    (
        "config-folder",
        lambda p: [*rerank_argv(p["cands"], p["file"].parent / "o", "--config", p["folder"])],
        "folder",
        ["is a folder", "config file"],
    ),
    (
        "candidates-folder",
        lambda p: rerank_argv(p["folder"], p["file"].parent / "o"),
        "folder",
        ["is a folder", "candidates file"],
    ),
    ("candidates-fifo", lambda p: rerank_argv(p["fifo"], p["file"].parent / "o"), "fifo", ["FIFO", "candidates"]),
    (
        "trec-run-folder",
        lambda p: ["import", "trec", p["folder"], "--out", p["file"].parent / "o.jsonl"],
        "folder",
        ["is a folder", "run file"],
    ),
    ("report-file", lambda p: ["report", p["file"]], "file", ["is a file", "run folder"]),
    (
        "callable-folder",
        lambda p: [
            "audit",
            "--callable",
            f"{p['folder']}.py:f",
            "--returns",
            "order",
            "--candidates",
            p["cands"],
            "--out",
            p["file"].parent / "o",
        ],
        None,
        ["is a folder"],
    ),
]


@pytest.mark.parametrize("case,argv,named,needles", CLI, ids=[c[0] for c in CLI])
def test_an_existing_input_of_the_wrong_kind_is_never_not_found(tmp_path, capsys, case, argv, named, needles):
    places = _places(tmp_path)
    if case == "callable-folder":
        (tmp_path / "a_folder.yaml.py").mkdir()
    if named == "fifo" and "fifo" not in places:
        pytest.skip("no FIFOs here")
    line = expect_rejected(capsys, argv(places), [*needles, *([str(places[named])] if named else [])])
    assert "not found" not in line and "no such" not in line, line


FRONT_DOOR = [
    ("read_candidates", lambda p: ir.read_candidates(p["folder"]), ["is a folder", "candidates file"]),
    ("read_observations", lambda p: ir.read_observations(p["folder"]), ["is a folder", "observations file"]),
    ("evaluate-path", lambda p: ir.evaluate(p["folder"]), ["is a folder", "observations file"]),
]


@pytest.mark.parametrize("case,call,needles", FRONT_DOOR, ids=[c[0] for c in FRONT_DOOR])
def test_the_front_door_names_what_is_there(tmp_path, case, call, needles):
    places = _places(tmp_path)
    with pytest.raises(InvariRankError) as err:
        call(places)
    message = str(err.value)
    for needle in needles:
        assert needle in message, (needle, message)
    assert "not found" not in message and str(places["folder"]) in message


@pytest.mark.parametrize("what", ["grid", "candidates", "report"])
def test_a_missing_input_is_still_not_found(tmp_path, capsys, what):
    nope = tmp_path / "nope"
    argv = {
        "grid": ["grid", nope, "--dry-run"],
        "candidates": rerank_argv(nope, tmp_path / "o"),
        "report": ["report", nope],
    }[what]
    expect_rejected(capsys, argv, [f"{nope}: ", "not found"])
