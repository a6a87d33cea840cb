"""Hostile input, round 3 (issue 21): one table per family. A rejected input exits 2 with one line naming the input, no
traceback, and leaves the output (and any input or special file) as it was (see tests/support/hostile.py); an
accepted one gives the right answer. Families: F1 special files, F2 names that leave their root, F4 dry run = real
run, F7 evaluate's default output, F8 closed fields, F9 degenerate settings, F10 paired lists, F11 duplicate keys and
YAML 1.1 forms, F12 the prepared threshold, F13 useless outputs, F14 silent coercion, F15 retrieve onto its input,
T1-T7 tracebacks, H1 bounds on work, U1 messages."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from invarirank.errors import InvariRankError
from invarirank.evaluation import METRICS_SCHEMA_VERSION
from tests.support import ROOT
from tests.support.hostile import expect_rejected, snapshot
from tests.support.hostile import rerank_argv as _rerank

pytestmark = pytest.mark.usefixtures("private_cache")


# --------------------------------------------------------------------------------------------- shared inputs
def _rows(k: int = 6, queries: int = 3, m: int = 3, method: str = "zero_shot") -> list[dict[str, Any]]:
    items = [f"i{j}" for j in range(k)]
    rows = []
    for q in range(queries):
        for t in range(m):
            order = items[t:] + items[:t]
            rows.append(
                {
                    "query_id": f"q{q}",
                    "method": method,
                    "permutation": t,
                    "input": order,
                    "output": sorted(order),
                    "relevant": [items[q % k]],
                }
            )
    return rows


def _jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cands(tmp_path: Path, lines: list[dict] | None = None) -> Path:
    lines = (
        lines
        if lines is not None
        else [query_to_json(q) for q in synthetic_queries(n_test=4, n_validation=3, k=6, seed=1)]
    )
    return _jsonl(tmp_path / "cands.jsonl", lines)


RUN = "{dataset: synthetic, scorer: simulated, model: simulated, retriever: none, M: 2, n_queries: 2, K: 6}"


def _grid_args(tmp_path: Path, text: str | bytes, *extra: Any) -> list[Any]:
    grid = tmp_path / "g.yaml"
    grid.write_bytes(text.encode() if isinstance(text, str) else text)
    return [
        "grid",
        grid,
        "--results-dir",
        tmp_path / "results",
        "--work-dir",
        tmp_path / "work",
        *extra,
    ]


# --------------------------------------------------------------------------------------------- F1 special files
def test_f1_fifo_output_is_refused_and_stays_a_fifo(tmp_path, capsys):
    obs = _jsonl(tmp_path / "obs.jsonl", _rows())
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    expect_rejected(capsys, ["evaluate", obs, "--output", fifo], ["--output", "fifo", "is a FIFO"])
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def _null_device(tmp_path: Path) -> Path:
    """A private character device like /dev/null (so a regression cannot replace the machine's own), or skip."""
    dev = tmp_path / "null"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (OSError, AttributeError):
        pytest.skip("cannot create a character device here (needs CAP_MKNOD)")
    return dev


@pytest.mark.parametrize("writer", ["evaluate", "library"])
def test_f1_character_device_is_written_through(writer, tmp_path, capsys):
    from invarirank._io import atomic_write_json

    obs = _jsonl(tmp_path / "obs.jsonl", _rows())
    dev = _null_device(tmp_path)
    before = os.stat(dev)
    if writer == "evaluate":
        assert main(["evaluate", str(obs), "--output", str(dev), "--bootstrap", "0"]) == 0
    else:
        atomic_write_json(dev, {"a": 1})
    after = os.stat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "cache") == ["null", "obs.jsonl"]


def test_f1_library_writer_refuses_fifo_and_follows_links(tmp_path):
    from invarirank._io import atomic_write_json, atomic_write_text

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InvariRankError, match="is a FIFO"):
        atomic_write_json(fifo, {"a": 1})
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


def test_t5_full_disk_names_the_file(tmp_path, monkeypatch):
    from invarirank._io import atomic_write_text

    def full(self, *a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(InvariRankError, match=r"out\.json: cannot write \(no space left on the device\)"):
        atomic_write_text(tmp_path / "out.json", "x")
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------------- F2 names
NAME_CASES = [
    ("grid-dot", "grid: '.'\nruns:\n  - " + RUN + "\n", ["field 'grid' must be a simple name"]),
    ("grid-dotdot", "grid: '..'\nruns:\n  - " + RUN + "\n", ["field 'grid' must be a simple name"]),
    ("grid-hidden", "grid: .work\nruns:\n  - " + RUN + "\n", ["field 'grid' must be a simple name"]),
    ("run-dotdot", "grid: g\nruns:\n  - " + RUN[:-1] + ", name: '..'}\n", ["name '..'", "may not start with '.'"]),
    ("run-dot", "grid: g\nruns:\n  - " + RUN[:-1] + ", name: '.'}\n", ["name '.'"]),
    ("lab-grid-dotdot", "grid: g\nruns:\n  - " + RUN + "\nlab: {grid: '..'}\n", ["lab:", "grid '..'"]),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
@pytest.mark.parametrize("name,text,needles", NAME_CASES, ids=[c[0] for c in NAME_CASES])
def test_f2_names_that_leave_the_results_folder(name, text, needles, dry, tmp_path, capsys):
    (tmp_path / "results" / "shards").mkdir(parents=True)  # a user's folder a '..' run once deleted
    (tmp_path / "results" / "shards" / "keep").write_text("keep")
    argv = _grid_args(tmp_path, text, *(["--dry-run"] if dry else []))
    expect_rejected(capsys, argv, needles, tmp_path / "results")
    assert not (tmp_path / "work").exists() and not (tmp_path / "build").exists()


def test_f2_run_folder_resolving_outside_results(tmp_path, capsys):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "g").symlink_to(outside)
    argv = _grid_args(tmp_path, "grid: g\nruns:\n  - " + RUN + "\n", "--dry-run")
    expect_rejected(capsys, argv, ["its folder", "outside"], tmp_path / "results")


def test_f2_run_config_names():
    from invarirank.runner import RunConfig

    for bad in (".", "..", ".hidden"):
        with pytest.raises(InvariRankError, match="may not start with '.'"):
            RunConfig.from_mapping({"name": bad})
    assert RunConfig.from_mapping({"name": "a.b-c_1"}).run_name == "a.b-c_1"


def test_f2_inside():
    from invarirank._io import inside

    assert inside("/tmp", "/tmp/a/b") == Path("/tmp/a/b")
    for bad in ("/tmp/..", "/tmp/a/../..", "/tmp"):
        with pytest.raises(InvariRankError, match="outside"):
            inside("/tmp", bad)


# --------------------------------------------------------------------------------------------- F7 evaluate's output
@pytest.mark.parametrize("marker", ["manifest.json", "run.json", "shard.json", ".lock", ".work"])
def test_f7_default_output_never_enters_a_run_folder(marker, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    obs = _jsonl(run / "observations.jsonl", _rows())
    (run / "metrics.json").write_text('{"the run": "own metrics"}')
    (run / marker).mkdir() if marker == ".work" else (run / marker).write_text("{}")
    expect_rejected(capsys, ["evaluate", obs], ["lies in a run folder", marker, "--output"], run)


def test_f7_default_output_outside_a_run_folder_and_explicit_output(tmp_path, capsys):
    obs = _jsonl(tmp_path / "obs.jsonl", _rows())
    assert main(["evaluate", str(obs), "--bootstrap", "0"]) == 0
    assert json.loads((tmp_path / "metrics.json").read_text())["schema_version"] == METRICS_SCHEMA_VERSION
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    obs2 = _jsonl(run / "observations.jsonl", _rows())
    assert main(["evaluate", str(obs2), "--bootstrap", "0", "--output", str(run / "metrics.json")]) == 0  # asked
    assert (run / "metrics.json").is_file()


# --------------------------------------------------------------------------------------------- F8 closed fields
def _cand_mutation(change):
    def make(tmp_path):
        lines = [query_to_json(q) for q in synthetic_queries(n_test=4, n_validation=3, k=6, seed=1)]
        change(lines[0])
        return _cands(tmp_path, lines)

    return make


CANDIDATE_CASES = [
    ("line-histroy", _cand_mutation(lambda d: d.update(histroy=d.pop("history"))), [":1:", "unknown field 'histroy'"]),
    (
        "candidate-genre",
        _cand_mutation(lambda d: d["candidates"][2].update(genre=["x"])),
        [":1:", "candidates[2]: unknown field 'genre'", "'extra'"],
    ),
    (
        "history-ratng",
        _cand_mutation(lambda d: d["history"][0].update(ratng=5)),
        [":1:", "history[0]:", "unknown field 'ratng'"],
    ),
    ("history-score", _cand_mutation(lambda d: d["history"][0].update(score=5)), ["history[0]:", "'score'"]),
    (
        "duplicate-key",
        lambda t: (
            _cands(t).write_text(
                _cands(t).read_text().replace('"split": "test"', '"split": "test", "split": "validation"', 1)
            )
            and t / "cands.jsonl"
        ),
        [":1:", "key 'split' appears twice"],
    ),
    (
        "deeply-nested",
        lambda t: (
            (t / "cands.jsonl").write_text(_cands(t).read_text() + '{"extra": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
            and t / "cands.jsonl"
        ),
        ["nested deeper than 64"],
    ),
    (
        "unicode-forms",
        _cand_mutation(
            lambda d: (d["candidates"][0].update(item_id="caf\u00e9"), d["candidates"][1].update(item_id="cafe\u0301"))
        ),
        ["differ only by Unicode normalisation", "'caf\\xe9'", "'cafe\\u0301'"],
    ),
]


@pytest.mark.parametrize("name,make,needles", CANDIDATE_CASES, ids=[c[0] for c in CANDIDATE_CASES])
def test_f8_f11_t1_u1_candidates(name, make, needles, tmp_path, capsys):
    cands = make(tmp_path)
    data = cands.read_bytes()
    expect_rejected(capsys, _rerank(cands, tmp_path / "run"), needles, tmp_path / "run")
    assert cands.read_bytes() == data


def test_f8_extra_holds_free_data(tmp_path):
    from invarirank.candidates import read_candidates

    lines = [query_to_json(q) for q in synthetic_queries(n_test=2, n_validation=1, k=4, seed=1)]
    plain = read_candidates(_cands(tmp_path, lines))
    lines[0]["extra"] = {"source": "mine", "deep": [1, {"a": None}]}
    lines[0]["candidates"][0]["extra"] = "anything"
    lines[0]["history"][0]["extra"] = [1, 2]
    (tmp_path / "x").mkdir()
    assert read_candidates(_cands(tmp_path / "x", lines)) == plain


def test_f8_observations_stay_open_to_extra_fields(tmp_path):
    from invarirank.evaluation import evaluate

    rows = _rows()
    plain = evaluate(_jsonl(tmp_path / "a.jsonl", rows), n_bootstrap=0)
    for r in rows:
        r.update(my_reranker_field={"x": 1}, latency_ms=3.5)
    assert evaluate(_jsonl(tmp_path / "b.jsonl", rows), n_bootstrap=0) == plain


# --------------------------------------------------------------------------------------------- grid files
GRID_CASES = [
    # F8 closed fields
    (
        "data-unknown-field",
        f"grid: g\nruns:\n  - {RUN}\ndata: [{{dataset: ml-100k, retreivers: [als]}}]\n",
        ["data[0]: unknown field 'retreivers'"],
    ),
    (
        "estimate-unknown-field",
        f"grid: g\nruns:\n  - {RUN}\nestimate: {{history_tokns: 4}}\n",
        ["estimate: unknown field 'history_tokns'"],
    ),
    (
        "entry-unknown-field",
        "grid: g\nruns:\n  - {K: 6, scorer: simulated, mthods: [sgs]}\n",
        ["runs[0]", "unknown setting 'mthods'"],
    ),
    # F11 duplicate keys and YAML 1.1 forms
    (
        "duplicate-k",
        "grid: g\nruns:\n  - K: 6\n    K: 8\n    scorer: simulated\n",
        ["g.yaml:4:", "key 'K' appears twice", "first on line 3"],
    ),
    ("duplicate-runs", f"grid: g\nruns:\n  - {RUN}\nruns:\n  - {RUN}\n", ["g.yaml:4:", "key 'runs' appears twice"]),
    ("octal-k", "grid: g\nruns:\n  - {K: 010, scorer: simulated}\n", ["g.yaml:3:", "'010'", "YAML 1.1 and 1.2"]),
    ("sexagesimal", "grid: g\nruns:\n  - {K: 6, M: 1:30, scorer: simulated}\n", ["g.yaml:3:", "'1:30'"]),
    ("yes-boolean", "grid: g\ninclude_simulated: yes\nruns:\n  - " + RUN + "\n", ["g.yaml:2:", "'yes'"]),
    # T2 alias bomb
    (
        "alias-bomb",
        "grid: g\n"
        + "".join(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}" if i else "1"] * 9) + "]\n" for i in range(8))
        + "runs:\n  - "
        + RUN
        + "\n",
        ["expands to more than 100,000 values"],
    ),
    # T3 estimate / data fields
    ("estimate-list", f"grid: g\nruns:\n  - {RUN}\nestimate: [1, 2]\n", ["estimate: must be a mapping"]),
    (
        "estimate-text",
        f"grid: g\nruns:\n  - {RUN}\nestimate: {{effective_tflops: fast}}\n",
        ["'effective_tflops' = 'fast'", "positive number"],
    ),
    (
        "estimate-params",
        f"grid: g\nruns:\n  - {RUN}\nestimate: {{parameters_billion: [7]}}\n",
        ["'parameters_billion'"],
    ),
    ("data-k-text", f"grid: g\nruns:\n  - {RUN}\ndata: [{{dataset: ml-100k, K: [a]}}]\n", ["data[0]: field 'K'"]),
    ("data-not-list", f"grid: g\nruns:\n  - {RUN}\ndata: {{dataset: ml-100k}}\n", ["data: must be a list"]),
    # F14 silent coercion
    (
        "include-simulated-string",
        f"grid: g\ninclude_simulated: 'false'\nruns:\n  - {RUN}\n",
        ["'include_simulated' = 'false'", "true or false"],
    ),
    ("out-in-entry", "grid: g\nruns:\n  - " + RUN[:-1] + ", out: runs/x}\n", ["runs[0]: field 'out' cannot be set"]),
    ("out-in-defaults", f"grid: g\ndefaults: {{out: x}}\nruns:\n  - {RUN}\n", ["defaults: field 'out'"]),
    ("out-in-lab", f"grid: g\nruns:\n  - {RUN}\nlab: {{out: x}}\n", ["lab: field 'out'"]),
    # T6 values that would reach torch unchecked
    ("seed-2-64", "grid: g\nruns:\n  - " + RUN[:-1] + ", seed: 18446744073709551616}\n", ["'seed'", "2^32 - 1"]),
    ("device-gpu0", "grid: g\nruns:\n  - " + RUN[:-1] + ", device: gpu0}\n", ["'device' = 'gpu0'"]),
    # H1
    (
        "n-bootstrap-huge",
        "grid: g\nruns:\n  - " + RUN[:-1] + ", n_bootstrap: 100000000000}\n",
        ["'n_bootstrap'", "above the limit 100,000"],
    ),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
@pytest.mark.parametrize("name,text,needles", GRID_CASES, ids=[c[0] for c in GRID_CASES])
def test_grid_files(name, text, needles, dry, tmp_path, capsys):
    argv = _grid_args(tmp_path, text, *(["--dry-run"] if dry else []))
    expect_rejected(capsys, argv, needles, tmp_path / "results")
    assert not (tmp_path / "work").exists() and not (tmp_path / "build").exists()


FLAG_CASES = [
    ("only-unknown", ["--only", "no-such-run"], ["--only 'no-such-run'", "not a run of"]),
    ("seconds-per-pass-negative", ["--dry-run", "--seconds-per-pass", "-1"], ["--seconds-per-pass -1"]),
    ("seconds-per-pass-nan", ["--dry-run", "--seconds-per-pass", "nan"], ["--seconds-per-pass nan"]),
    ("connect-timeout-nan", ["--connect-timeout", "nan"], ["--connect-timeout nan"]),
    ("workers-0", ["--workers", "0"], ["--workers 0"]),
    # F4: the dry run rejects what the real run rejects
    ("dry-shard-queries-0", ["--dry-run", "--shard-queries", "0"], ["--shard-queries 0"]),
    ("dry-executor-unknown", ["--dry-run", "--executor", "slurm"], ["--executor 'slurm'"]),
    ("dry-connect-timeout-inf", ["--dry-run", "--connect-timeout", "inf"], ["--connect-timeout inf"]),
]


@pytest.mark.parametrize("name,extra,needles", FLAG_CASES, ids=[c[0] for c in FLAG_CASES])
def test_f14_grid_flags(name, extra, needles, tmp_path, capsys):
    argv = _grid_args(tmp_path, f"grid: g\nruns:\n  - {RUN}\n", *extra)
    expect_rejected(capsys, argv, needles, tmp_path / "results")


def test_f11_config_file_duplicates_and_octal(tmp_path, capsys):
    cands = _cands(tmp_path)
    for text, needles in (
        ("m: 2\nm: 3\n", ["run.yaml:2:", "key 'm' appears twice"]),
        ("m: 010\n", ["run.yaml:1:", "'010'"]),
        ("noise_floor: on\n", ["run.yaml:1:", "'on'"]),
    ):
        (tmp_path / "run.yaml").write_text(text)
        expect_rejected(
            capsys, _rerank(cands, tmp_path / "run", "--config", tmp_path / "run.yaml"), needles, tmp_path / "run"
        )


def test_f11_yaml_12_numbers_are_read_as_12():
    from invarirank._yaml_reader import load_yaml

    assert load_yaml("a: 1e-3\nb: 0o17\nc: 0x1F\nd: 10\ne: true\nf: -2.5\n", "t.yaml") == {
        "a": 0.001,
        "b": 15,
        "c": 31,
        "d": 10,
        "e": True,
        "f": -2.5,
    }


def test_committed_grid_files_still_load():
    from invarirank.grid import load_grid

    root = ROOT
    for grid in sorted((root / "configs").glob("grid-*.yaml")):
        assert load_grid(grid).runs, grid


# --------------------------------------------------------------------------------------------- evaluate
def _obs(rows_of):
    def make(tmp_path):
        return _jsonl(tmp_path / "obs.jsonl", rows_of())

    return make


def _mixed_lists() -> list[dict]:
    return _rows(k=6, method="a") + _rows(k=4, method="b")


def _duplicate_key_line(tmp_path: Path) -> Path:
    p = _jsonl(tmp_path / "obs.jsonl", _rows())
    p.write_text(p.read_text().replace('"method": "zero_shot"', '"method": "zero_shot", "method": "other"', 1))
    return p


def _deep_line(tmp_path: Path) -> Path:
    p = _jsonl(tmp_path / "obs.jsonl", _rows())
    p.write_text(p.read_text() + '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    return p


def _fifo_input(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "obs.jsonl")
    return tmp_path / "obs.jsonl"


def _long_lists(tmp_path: Path) -> Path:
    return _jsonl(tmp_path / "obs.jsonl", _rows(k=1001, queries=1, m=1))


EVALUATE_CASES = [
    # F9 degenerate settings asked for
    ("exposure-k-equal-k", _obs(_rows), ["--exposure-k", "6"], ["--exposure-k 6 is equal to K = 6", "obs.jsonl"]),
    ("buckets-1", _obs(_rows), ["--buckets", "1"], ["--buckets 1", "not defined with one bucket"]),
    # F10 paired comparisons over other lists
    (
        "methods-rank-other-lists",
        _obs(_mixed_lists),
        [],
        ["query 'q0'", "method 'b'", "method 'a'", "same candidate list"],
    ),
    # F11 duplicate keys, T1 nesting
    ("duplicate-key", _duplicate_key_line, [], [":1:", "key 'method' appears twice"]),
    ("deeply-nested", _deep_line, [], [":10:", "nested too deeply"]),
    # H1 bounds on work
    ("bootstrap-1e11", _obs(_rows), ["--bootstrap", "100000000000"], ["--bootstrap", "limit 100,000"]),
    ("permutations-1e13", _obs(_rows), ["--permutations", "10000000000000"], ["--permutations", "limit 1,000,000"]),
    ("gpi-k-above-limit", _long_lists, ["--bootstrap", "0"], ["K = 1001", "limit K <= 1000"]),
    # U1 messages
    ("empty-name", lambda t: Path(""), [], ["FILE '' is empty"]),
    ("fifo-input", _fifo_input, [], ["obs.jsonl: is a FIFO"]),
]


@pytest.mark.parametrize("name,make,extra,needles", EVALUATE_CASES, ids=[c[0] for c in EVALUATE_CASES])
def test_evaluate(name, make, extra, needles, tmp_path, capsys):
    obs = make(tmp_path)
    argv = ["evaluate", "" if obs == Path("") else obs, *extra, "--output", tmp_path / "m.json"]
    expect_rejected(capsys, argv, needles, tmp_path)


def test_h1_gpi_bound_in_the_library():
    import numpy as np

    from invarirank.evaluation._consistency import MAX_GPI_K, gpi_local_search

    with pytest.raises(InvariRankError, match=f"limit K <= {MAX_GPI_K}"):
        gpi_local_search(np.zeros((1, MAX_GPI_K + 1, MAX_GPI_K + 1), dtype=np.int64))
    order, mass = gpi_local_search(np.zeros((1, 3, 3), dtype=np.int64))
    assert order.tolist() == [[0, 1, 2]] and mass.tolist() == [0]


def test_h1_bounds_agree():
    from invarirank._limits import MAX_BOOTSTRAP
    from invarirank.commands import _evaluate as evaluate

    assert evaluate.MAX_BOOTSTRAP == MAX_BOOTSTRAP


def test_f9_committed_k5_run_still_re_evaluates(tmp_path):
    """The committed K = 5 run (exposure cut-off 5 = K, the documented default) re-evaluates to its own metrics."""
    from invarirank.store import refresh_metrics

    committed = ROOT / "results" / "evidence" / "smollm2-span-k5"
    if not committed.is_dir():
        pytest.skip("no committed K = 5 run in this checkout")
    run = Path(shutil.copytree(committed, tmp_path / "smollm2-span-k5"))
    (run / "metrics.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                **{k: v for k, v in json.loads((committed / "metrics.json").read_text()).items() if k == "settings"},
            }
        )
    )
    refresh_metrics(run)
    assert json.loads((run / "metrics.json").read_text()) == json.loads((committed / "metrics.json").read_text())


# --------------------------------------------------------------------------------------------- U1 bare commands
@pytest.mark.parametrize("argv", [[], ["data"]], ids=["bare", "data-without-action"])
def test_u1_no_command_is_a_usage_error(argv, capsys):
    code = main(argv)
    assert code == 2


# --------------------------------------------------------------------------------------------- F4 dry = real
def test_f4_dry_run_accepts_the_synthetic_data_set(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [
        "rerank",
        "--dataset",
        "synthetic",
        "--scorer",
        "simulated",
        "--queries",
        "2",
        "--m",
        "2",
        "--k",
        "6",
        "--methods",
        "zero_shot",
        "--dry-run",
    ]
    assert main(argv) == 0
    assert "passes" in capsys.readouterr().out
    assert {p.name for p in tmp_path.iterdir()} <= {"cache"}  # nothing left in the working folder


# --------------------------------------------------------------------------------------------- data and first stage
def test_f13_threshold_that_leaves_no_queries(tmp_path, capsys):
    from tests.support.data import write_csv_layout

    raw = write_csv_layout(tmp_path / "raw")
    argv = [
        "data",
        "prepare",
        "--dataset",
        "movielens",
        "--raw-dir",
        raw,
        "--out",
        tmp_path / "prep",
        "--positive-threshold",
        "100",
    ]
    expect_rejected(capsys, argv, ["no test queries", "--positive-threshold 100"], tmp_path / "prep")
    assert not (tmp_path / "prep").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_f6_other_files_are_not_labelled_ml100k(tmp_path, capsys):
    from tests.support.data import write_csv_layout

    raw = write_csv_layout(tmp_path / "raw")
    argv = ["data", "prepare", "--dataset", "ml-100k", "--raw-dir", raw, "--out", tmp_path / "prep"]
    expect_rejected(capsys, argv, ["is not the embedded ML-100K file", "--dataset movielens"], tmp_path / "prep")


def _prepared(tmp_path: Path, stats: Any = None) -> Path:
    """A prepared folder in which every third rating is a 3 (a positive at threshold 3, not at 4)."""
    from tests.retrieval.test_helpers import synthetic_interactions, write_prepared

    rows = [
        (u, i, 3.0 if n % 3 == 0 else r, ts, split) for n, (u, i, r, ts, split) in enumerate(synthetic_interactions())
    ]
    data = write_prepared(tmp_path / "d", rows)
    if stats is not None:
        (data / "stats.json").write_text(json.dumps(stats))
    return data


STATS = {"users": 24, "test_queries": 24, "positive_threshold": 3.0}

RETRIEVE_CASES = [
    ("out-is-data", lambda t: (_prepared(t, STATS), ["--out", t / "d"]), ["--out", "is the prepared data folder"]),
    ("epochs-huge", lambda t: (_prepared(t), ["--epochs", "100000000"]), ["--epochs", "limit 10,000"]),
    ("seed-2-64", lambda t: (_prepared(t), ["--seed", str(2**64)]), ["--seed", "2^32 - 1"]),
    (
        "device-gpu0",
        lambda t: (_prepared(t), ["--retriever", "lightgcn", "--device", "gpu0"]),
        ["--device 'gpu0'", "not a device name"],
    ),
    ("foreign-stats-list", lambda t: (_prepared(t, [1, 2]), []), ["stats.json", "not the stats of a prepared"]),
    (
        "foreign-stats-retrieval",
        lambda t: (_prepared(t, {"retriever": "als", "k": 25}), []),
        ["stats.json", "not the stats of a prepared"],
    ),
    (
        "stats-threshold-text",
        lambda t: (_prepared(t, {**STATS, "positive_threshold": "high"}), []),
        ["'positive_threshold' = 'high'"],
    ),
]


@pytest.mark.parametrize("name,setup,needles", RETRIEVE_CASES, ids=[c[0] for c in RETRIEVE_CASES])
def test_retrieve(name, setup, needles, tmp_path, capsys):
    if name == "device-gpu0":  # LightGCN's device is checked where torch reads it: skip where torch is missing
        pytest.importorskip("torch")
    data, extra = setup(tmp_path)
    argv = [
        "retrieve",
        "--data",
        data,
        "--retriever",
        "popularity",
        "--k",
        "3",
        "--out",
        tmp_path / "cand",
        "--no-progress",
        *extra,
    ]
    before = snapshot(data)
    expect_rejected(capsys, argv, needles, tmp_path / "cand")
    assert snapshot(data) == before


def test_f12_first_stage_uses_the_prepared_threshold(tmp_path):
    from invarirank.retrieval import retrieve
    from invarirank.retrieval._data import load_retrieval_data

    data = _prepared(tmp_path, STATS)
    result = retrieve(data, retriever="popularity", k=3, out=tmp_path / "cand", progress=False)
    assert result.stats["settings"]["positive_threshold"] == 3.0
    assert load_retrieval_data(data, 3.0).n_positives > load_retrieval_data(data, 4.0).n_positives


# --------------------------------------------------------------------------------------------- T4 report
def _run_folder(tmp_path: Path) -> Path:
    cands = _cands(tmp_path)
    assert main([str(a) for a in _rerank(cands, tmp_path / "run")]) == 0
    return tmp_path / "run"


def _edit(name: str, change):
    def make(run: Path) -> None:
        p = run / name
        p.write_text(json.dumps(change(json.loads(p.read_text()))))

    return make


REPORT_CASES = [
    ("metrics-list", _edit("metrics.json", lambda m: [m]), ["metrics.json: expected a JSON object"]),
    (
        "metrics-empty",
        _edit("metrics.json", lambda m: {}),
        [f"metrics.json: schema_version None, expected schema_version {METRICS_SCHEMA_VERSION}"],
    ),
    (
        "metrics-without-methods",
        _edit("metrics.json", lambda m: {"schema_version": m["schema_version"]}),
        ["metrics.json: field 'methods'"],
    ),
    (
        "method-without-overall",
        _edit("metrics.json", lambda m: {**m, "methods": {"zero_shot": {}}}),
        ["method 'zero_shot' has no 'overall'"],
    ),
    (
        "schema-9",
        _edit("metrics.json", lambda m: {**m, "schema_version": 9}),
        [f"metrics.json: schema_version 9, expected schema_version {METRICS_SCHEMA_VERSION}"],
    ),
    ("manifest-list", _edit("manifest.json", lambda m: [m]), ["manifest.json: expected a JSON object"]),
    (
        "manifest-queries-text",
        _edit("manifest.json", lambda m: {**m, "queries": "all"}),
        ["manifest.json: field 'queries' must be an object"],
    ),
    (
        "metrics-duplicate-key",
        lambda run: (run / "metrics.json").write_text('{"schema_version": 2, "schema_version": 1}'),
        ["key 'schema_version' appears twice"],
    ),
]


@pytest.mark.parametrize("name,damage,needles", REPORT_CASES, ids=[c[0] for c in REPORT_CASES])
def test_t4_report_trusts_no_shape(name, damage, needles, tmp_path, capsys):
    run = _run_folder(tmp_path)
    damage(run)
    expect_rejected(capsys, ["report", run], needles, run)


def test_t1_deeply_nested_amazon_review(tmp_path, capsys):
    from tests.support.data import amazon_metadata, amazon_reviews, write_jsonl

    raw = tmp_path / "raw"
    rev = write_jsonl(raw / "reviews.jsonl", amazon_reviews())
    rev.write_text(rev.read_text() + '{"user_id": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    write_jsonl(raw / "metadata.jsonl", amazon_metadata())
    argv = ["data", "prepare", "--dataset", "amazon-books", "--raw-dir", raw, "--out", tmp_path / "prep"]
    expect_rejected(capsys, argv, ["reviews.jsonl, line 25", "nested too deeply"], tmp_path / "prep")
