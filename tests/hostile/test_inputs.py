"""Hostile input, round 3, F6: reuse compares the content of a run's input files, not only its settings. A candidates
file edited in place, other raw files at the same ``raw_dir`` or an edited prepared folder make the finished run a
``mismatch`` (one line naming the input, nothing overwritten); the same content is reused. Runs on the embedded data
record no ``inputs``, so the committed runs, their identities and their shards stay as they are."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from invarirank._io import read_json
from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from invarirank.runner import RunConfig, run_status
from invarirank.runner._inputs import input_hashes
from tests.support import ROOT
from tests.support.data import make_ratings, write_csv_layout
from tests.support.hostile import expect_rejected, snapshot

SIM = ["--scorer", "simulated", "--m", "2", "--methods", "zero_shot", "--n-bootstrap", "0", "--no-progress"]


def _candidates(path: Path) -> Path:
    lines = [query_to_json(q) for q in synthetic_queries(n_test=3, n_validation=0, k=6, seed=1)]
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return path


def _edit_candidates(path: Path) -> None:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    lines[0]["ground_truth"] = [lines[0]["candidates"][4]["item_id"]]
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")


def _edit_ratings(raw: Path) -> None:
    text = (raw / "ratings.csv").read_text(encoding="utf-8").splitlines()
    head, *rows = text
    rows[0] = rows[0].rsplit(",", 2)[0] + ",1.0," + rows[0].rsplit(",", 1)[1]  # one rating changed
    (raw / "ratings.csv").write_text("\n".join([head, *rows]) + "\n", encoding="utf-8")


def _candidates_case(tmp: Path) -> tuple[list[Any], Callable[[], None], str]:
    cands = _candidates(tmp / "cands.jsonl")
    return ["--candidates", cands], lambda: _edit_candidates(cands), "the content of candidates"


def _raw_case(tmp: Path) -> tuple[list[Any], Callable[[], None], str]:
    raw = write_csv_layout(tmp / "raw", ratings=make_ratings())
    return (
        ["--dataset", "movielens", "--raw-dir", raw, "--retriever", "popularity", "--k", "5"],
        lambda: _edit_ratings(raw),
        "the content of raw_dir",
    )


def _data_dir_case(tmp: Path) -> tuple[list[Any], Callable[[], None], str]:
    raw = write_csv_layout(tmp / "raw", ratings=make_ratings())
    assert main(["data", "prepare", "--dataset", "movielens", "--raw-dir", str(raw), "--out", str(tmp / "prep")]) == 0
    stats = tmp / "prep" / "stats.json"
    return (
        ["--dataset", "movielens", "--data-dir", tmp / "prep", "--retriever", "popularity", "--k", "5"],
        lambda: stats.write_text(stats.read_text() + " \n"),
        "the content of data_dir",
    )


CASES = [("candidates", _candidates_case), ("raw-dir", _raw_case), ("data-dir", _data_dir_case)]


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_f6_an_edited_input_is_not_reused(name, make, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    inputs, edit, needle = make(tmp_path)
    out = tmp_path / "run"
    argv = [str(a) for a in ["rerank", *inputs, *SIM, "--out", out]]
    assert main(argv) == 0
    assert set(read_json(out / "manifest.json")["inputs"]) == {name.replace("-", "_")}
    capsys.readouterr()
    assert main(argv) == 0  # the same content: reused
    assert "reusing the finished run" in capsys.readouterr().err
    edit()
    expect_rejected(capsys, argv, [str(out), needle, "choose another --out"], out=out)


def test_f6_a_grid_run_on_edited_candidates_is_not_reused(tmp_path, capsys):
    cands = _candidates(tmp_path / "cands.jsonl")
    grid = tmp_path / "g.yaml"
    grid.write_text(
        f"grid: inputs\nruns:\n  - {{name: r1, candidates: '{cands}', scorer: simulated, "
        f"model: simulated, M: 2, methods: [zero_shot], n_bootstrap: 0}}\n",
        encoding="utf-8",
    )
    places = ["--results-dir", tmp_path / "results", "--work-dir", tmp_path / "work"]
    config = RunConfig.from_mapping(
        {
            "name": "r1",
            "candidates": str(cands),
            "scorer": "simulated",
            "model": "simulated",
            "M": 2,
            "methods": ["zero_shot"],
            "n_bootstrap": 0,
            "grid": "inputs",
        }
    )
    from invarirank.runner import ensure_runs

    folder = ensure_runs([config], results_dir=tmp_path / "results", work_dir=tmp_path / "work", progress=False)[0]
    assert run_status(config, folder) == "complete"
    capsys.readouterr()
    assert main([str(a) for a in ["grid", grid, *places, "--dry-run"]]) == 0
    assert "complete" in capsys.readouterr().out
    before = snapshot(folder)
    _edit_candidates(cands)
    assert run_status(config, folder) == "mismatch"
    capsys.readouterr()
    assert main([str(a) for a in ["grid", grid, *places, "--dry-run"]]) == 0
    assert "mismatch" in capsys.readouterr().out
    expect_rejected(capsys, ["grid", grid, *places], ["r1", "the content of candidates", "delete the folder"])
    assert snapshot(folder) == before


def test_f6_runs_on_the_embedded_data_record_no_inputs():
    """Every committed run is on the embedded data (or the lab's generated candidates): no inputs, so its identity
    — and the fingerprint of its shards — is what it was."""
    assert input_hashes(RunConfig.from_mapping({"dataset": "ml-100k", "K": 10})) == {}
    assert input_hashes(RunConfig.from_mapping({"dataset": "synthetic", "scorer": "simulated"})) == {}
    manifests = sorted(ROOT.glob("results/*/*/manifest.json"))
    assert manifests
    for path in manifests:
        assert "inputs" not in read_json(path), path


def test_f6_an_unreadable_input_is_left_to_the_run(tmp_path):
    """A missing file gives no hash (the run itself names the file); a hash is the file's content."""
    assert input_hashes(RunConfig.from_mapping({"candidates": str(tmp_path / "nope.jsonl")})) == {}
    a = _candidates(tmp_path / "a.jsonl")
    b = tmp_path / "b.jsonl"
    b.write_bytes(a.read_bytes())
    ha = input_hashes(RunConfig.from_mapping({"candidates": str(a)}))
    assert ha == input_hashes(RunConfig.from_mapping({"candidates": str(b)}))  # content, not the path
    _edit_candidates(b)
    assert ha != input_hashes(RunConfig.from_mapping({"candidates": str(b)}))


def test_f13_k_equal_to_the_list_length_selects_the_same_queries(tmp_path, capsys):
    """Leaving --k out (the file's own lists) and giving their length keep the same queries: a query whose list
    holds no relevant item is left out either way, and counted on stderr."""
    cands = _candidates(tmp_path / "cands.jsonl")
    lines = [json.loads(x) for x in cands.read_text(encoding="utf-8").splitlines()]
    lines[1]["ground_truth"] = ["not-a-candidate"]
    cands.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    folders = []
    for extra in ([], ["--k", "6"]):
        out = tmp_path / f"run{len(extra)}"
        capsys.readouterr()
        assert main([str(a) for a in ["rerank", "--candidates", cands, *SIM, "--out", out, *extra]]) == 0
        assert "1 of 3 test queries hold no ground-truth item" in capsys.readouterr().err
        folders.append(out)
    ids = [read_json(f / "manifest.json")["queries"]["ids"] for f in folders]
    assert ids[0] == ids[1] == [lines[0]["query_id"], lines[2]["query_id"]]
    assert (folders[0] / "observations.jsonl").read_bytes() == (folders[1] / "observations.jsonl").read_bytes()


def test_f13_no_list_holding_a_relevant_item_is_an_error(tmp_path, capsys):
    cands = _candidates(tmp_path / "cands.jsonl")
    lines = [dict(json.loads(x), ground_truth=["nowhere"]) for x in cands.read_text(encoding="utf-8").splitlines()]
    cands.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    out = tmp_path / "run"
    expect_rejected(
        capsys,
        ["rerank", "--candidates", cands, *SIM, "--out", out],
        ["no test queries to rerank", "none keeps a relevant item among its candidates"],
        out=out,
    )
    assert not out.exists()


def _rows(**change: Any) -> list[dict[str, Any]]:
    items = ["caf\u00e9", "tea", "milk"]
    rows = [
        {
            "query_id": "q0",
            "method": "zero_shot",
            "permutation": t,
            "input": items[t:] + items[:t],
            "output": sorted(items),
            "relevant": ["tea"],
        }
        for t in range(2)
    ]
    for key, value in change.items():
        rows[0][key] = value
    return rows


#: U1: ids that differ only by Unicode normalisation print alike: refused with both forms escaped
U1_CASES = [
    (
        "input-nfc-and-nfd",
        _rows(input=["caf\u00e9", "cafe\u0301", "tea"], output=["tea", "caf\u00e9", "cafe\u0301"]),
        ["obs.jsonl:1", "'caf\\xe9'", "'cafe\\u0301'", "differ only by Unicode normalisation"],
    ),
    (
        "relevant-in-the-other-form",
        _rows(relevant=["cafe\u0301"]),
        ["obs.jsonl:1", "'caf\\xe9'", "'cafe\\u0301'", "input and relevant"],
    ),
    (
        "query-ids-in-two-forms",
        [
            *_rows(query_id="caf\u00e9"),
            *[dict(r, query_id="cafe\u0301", permutation=r["permutation"]) for r in _rows()],
        ],
        ["query ids", "'caf\\xe9'", "'cafe\\u0301'"],
    ),
    # an ASCII id can be the twin of a non-ASCII one (the Kelvin sign's NFC form is K): met second, still refused
    (
        "query-id-ascii-twin",
        [*_rows(query_id="u\u212a1"), *[dict(r, query_id="uK1", permutation=r["permutation"]) for r in _rows()]],
        ["query ids", "'u\\u212a1'", "'uK1'"],
    ),
]


@pytest.mark.parametrize("name,rows,needles", U1_CASES, ids=[c[0] for c in U1_CASES])
def test_u1_unicode_look_alike_ids_in_observations(name, rows, needles, tmp_path, capsys):
    obs = tmp_path / "obs.jsonl"
    obs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "m.json"
    expect_rejected(capsys, ["evaluate", obs, "--output", out, "--bootstrap", "0"], needles, out=out)
    assert not out.exists()


def test_u1_one_form_of_non_ascii_ids_is_read(tmp_path):
    from invarirank.evaluation import read_observations

    obs = tmp_path / "obs.jsonl"
    obs.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    assert [r["input"][0] for r in read_observations(obs)] == ["caf\u00e9", "tea"]
