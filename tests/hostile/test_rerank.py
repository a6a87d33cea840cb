"""Hostile input to ``invarirank rerank`` (issue 14): every case below is rejected with exit 2, one error line naming
the file (and line), field or parameter, no traceback, and ``--out`` left as it was (see tests/support/hostile.py).
Families: 1 unwritable places, 2 impossible parameters, 3/4 the candidates file (checked field by field, up front), 5
decoding and loading, 7 remote code and pickle weights."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from tests.support.hostile import expect_rejected, read_only
from tests.support.hostile import rerank_argv as _base

pytestmark = pytest.mark.usefixtures("private_cache")


def _good() -> list[dict[str, Any]]:
    return [query_to_json(q) for q in synthetic_queries(n_test=4, n_validation=3, k=6, seed=1)]


def _set(path: str, value: Any, line: int = 0) -> Callable[[list[dict]], None]:
    """A mutation: set ``path`` (dots and [i]) of line ``line`` to ``value``."""

    def mutate(lines: list[dict]) -> None:
        target: Any = lines[line]
        parts = path.replace("]", "").replace("[", ".").split(".")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        last = parts[-1]
        if value is _DELETE:
            del target[last]
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


_DELETE = object()


def _scores(values: list[Any]) -> Callable[[list[dict]], None]:
    def mutate(lines: list[dict]) -> None:
        for c, v in zip(lines[0]["candidates"], values):
            c["score"] = v

    return mutate


def _duplicate_query(lines: list[dict]) -> None:
    lines[1]["query_id"] = lines[0]["query_id"]


def _repeat_item(lines: list[dict]) -> None:
    lines[0]["candidates"][1]["item_id"] = lines[0]["candidates"][0]["item_id"]


def _one_candidate(lines: list[dict]) -> None:
    for d in lines:
        d["candidates"] = d["candidates"][:1]
        d["ground_truth"] = [d["candidates"][0]["item_id"]]


# (id, mutation of the parsed lines, fragments of the error line)
CANDIDATE_CASES = [
    ("ground_truth-string", _set("ground_truth", "f105"), [":1:", "'ground_truth'", "expected a list"]),
    ("ground_truth-null", _set("ground_truth", None), [":1:", "'ground_truth'", "expected a list"]),
    ("ground_truth-empty", _set("ground_truth", []), [":1:", "'ground_truth' is empty"]),
    ("ground_truth-holds-null", _set("ground_truth", [None]), [":1:", "ground_truth[]", "expected an id"]),
    ("ground_truth-missing", _set("ground_truth", _DELETE), [":1:", "missing field 'ground_truth'"]),
    ("genres-string", _set("candidates[0].genres", "Action"), [":1:", "candidates[0].genres", "expected a list"]),
    ("genres-number", _set("candidates[0].genres", [1]), [":1:", "candidates[0].genres", "expected strings"]),
    ("item_id-null", _set("candidates[0].item_id", None), [":1:", "candidates[0].item_id", "expected an id"]),
    ("item_id-object", _set("candidates[0].item_id", {"a": 1}), [":1:", "candidates[0].item_id", "expected an id"]),
    ("item_id-list", _set("candidates[0].item_id", ["x"]), [":1:", "candidates[0].item_id", "expected an id"]),
    ("item_id-bool", _set("candidates[0].item_id", True), [":1:", "candidates[0].item_id", "expected an id"]),
    ("item_id-float", _set("candidates[0].item_id", 1.5), [":1:", "candidates[0].item_id", "expected an id"]),
    ("item_id-missing", _set("candidates[0].item_id", _DELETE), [":1:", "missing field 'item_id'"]),
    ("title-null", _set("candidates[0].title", None), [":1:", "candidates[0].title", "expected a string"]),
    ("title-number", _set("candidates[0].title", 5), [":1:", "candidates[0].title", "expected a string"]),
    ("year-float", _set("candidates[0].year", 1990.5), [":1:", "candidates[0].year", "expected an integer year"]),
    ("year-bool", _set("candidates[0].year", True), [":1:", "candidates[0].year", "expected an integer year"]),
    ("year-string", _set("candidates[0].year", "1990"), [":1:", "candidates[0].year", "expected an integer year"]),
    ("query_id-null", _set("query_id", None), [":1:", "'query_id'", "expected an id"]),
    ("query_id-object", _set("query_id", {"a": 1}), [":1:", "'query_id'", "expected an id"]),
    ("user_id-list", _set("user_id", ["u"]), [":1:", "'user_id'", "expected an id"]),
    ("candidates-string", _set("candidates", "abc"), [":1:", "'candidates'", "expected a list"]),
    ("candidates-empty", _set("candidates", []), [":1:", "'candidates' is empty"]),
    ("candidate-not-object", _set("candidates[0]", "f1"), [":1:", "candidates[0]", "expected an object"]),
    ("history-object", _set("history", {"a": 1}), [":1:", "'history'", "expected a list"]),
    ("history-entry-null", _set("history[0]", None), [":1:", "history[0]", "expected an object"]),
    ("rating-string", _set("history[0].rating", "5"), [":1:", "history[0].rating", "expected a finite number"]),
    # a history entry without a rating is implicit feedback, accepted (tests/audit/test_own_candidates.py)
    ("score-string", _scores([1.0, "high", 0.5, 0.4, 0.3, 0.2]), [":1:", "candidates[1].score", "finite number"]),
    ("score-bool", _scores([True] * 6), [":1:", "candidates[0].score", "finite number"]),
    ("score-partial", _scores([1.0]), [":1:", "candidates[1].score", "every candidate or for none"]),
    ("split-number", _set("split", 1), [":1:", "'split'", "expected 'test' or 'validation'"]),
    ("split-unknown", _set("split", "train"), ["split 'train'", "expected 'test' or 'validation'"]),
    ("schema-version", _set("schema_version", 2), [":1:", "schema_version 2"]),
    ("duplicate-query_id", _duplicate_query, [":2:", "repeats line 1", "one line per query"]),
    ("repeated-item_id", _repeat_item, [":1:", "repeats item_id"]),
    ("lists-of-one", _one_candidate, ["K = 1", "shortest list", "expected K >= 2"]),
]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("name,mutate,needles", CANDIDATE_CASES, ids=[c[0] for c in CANDIDATE_CASES])
def test_bad_candidates_file(name, mutate, needles, tmp_path, capsys):
    lines = _good()
    mutate(lines)
    cands = _write(tmp_path / "cands.jsonl", lines)
    expect_rejected(capsys, _base(cands, tmp_path / "run"), [str(cands), *needles], tmp_path / "run")


def _raw_file(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "cands.jsonl"
    p.write_bytes(data)
    return p


def _good_bytes() -> bytes:
    return "".join(json.dumps(d) + "\n" for d in _good()).encode()


# (id, bytes of the file, fragments)
RAW_CASES = [
    ("not-utf8", lambda: _good_bytes().replace(b"\n", b"\n\xff\xfe", 1), [":2:", "not UTF-8"]),
    ("malformed-json", lambda: b'{"query_id": "u1",\n', [":1:", "malformed JSON"]),
    ("not-an-object", lambda: b"[1, 2]\n", [":1:", "expected a JSON object"]),
    ("empty-file", lambda: b"", ["no test queries"]),
]


@pytest.mark.parametrize("name,data,needles", RAW_CASES, ids=[c[0] for c in RAW_CASES])
def test_undecodable_candidates_file(name, data, needles, tmp_path, capsys):
    cands = _raw_file(tmp_path, data())
    expect_rejected(capsys, _base(cands, tmp_path / "run"), [str(cands), *needles], tmp_path / "run")


def test_missing_candidates_file_or_folder(tmp_path, capsys):
    expect_rejected(
        capsys,
        _base(tmp_path / "nope.jsonl", tmp_path / "run"),
        ["nope.jsonl: candidates file not found"],
        tmp_path / "run",
    )
    # a folder exists: it is named as what it is, not "not found" (issue 39 F11)
    expect_rejected(
        capsys, _base(tmp_path, tmp_path / "run"), ["is a folder, expected a candidates file"], tmp_path / "run"
    )


# (id, extra flags, fragments): the good file has lists of K = 6
PARAMETER_CASES = [
    ("k-1", ["--k", "1"], ["'K' ('k') = 1", "at least 2"]),
    ("k-above-lists", ["--k", "10"], ["has 6 candidates, fewer than K = 10"]),
    ("exposure-k-above-lists", ["--exposure-k", "7"], ["'exposure_k' = 7 is larger than K = 6", "shortest list"]),
    ("exposure-k-above-k", ["--k", "4", "--exposure-k", "5"], ["'exposure_k' = 5 is larger than K = 4"]),
    ("sweep-above-lists", ["--k-sweep", "8,10"], ["smallest K", "sample_k = 8", "K = 6"]),
    ("sweep-above-k", ["--k", "4", "--k-sweep", "5,6", "--exposure-k", "2"], ["sample_k = 5", "K = 4"]),
    ("m-0", ["--m", "0"], ["'M' ('m') = 0", "at least 1"]),
    ("queries-0", ["--queries", "0"], ["'n_queries' ('queries') = 0"]),
    ("eval-ks-0", ["--eval-ks", "0"], ["'eval_ks' = 0"]),
    ("methods-unknown", ["--methods", "bogus"], ["unknown method 'bogus'"]),
    ("seed-negative", ["--seed", "-1"], ["'seed' = -1"]),
    ("simulated-option-bad", ["--scorer-option", "bias_shape=sideways"], ["'bias_shape' = 'sideways'"]),
    ("simulated-option-nan", ["--scorer-option", "noise_sd=abc"], ["'noise_sd' = 'abc'", "finite number"]),
    ("simulated-option-unknown", ["--scorer-option", "batch_size=2"], ["unknown option 'batch_size'"]),
    ("span-batch-size-0", ["--scorer", "span", "--scorer-option", "batch_size=0"], ["'batch_size' = 0", ">= 1"]),
    ("span-max-length-text", ["--scorer", "span", "--scorer-option", "max_length=abc"], ["'max_length' = 'abc'"]),
    ("span-max-length-float", ["--scorer", "span", "--scorer-option", "max_length=2.5"], ["'max_length' = 2.5"]),
    ("span-unknown-option", ["--scorer", "span", "--scorer-option", "bogus=1"], ["unknown option 'bogus'"]),
    (
        "span-trust-remote-code-option",
        ["--scorer", "span", "--scorer-option", "trust_remote_code=true"],
        ["'trust_remote_code' cannot be set", "--trust-remote-code"],
    ),
    (
        "span-pickle-option",
        ["--scorer", "span", "--scorer-option", "allow_pickle_weights=true"],
        ["'allow_pickle_weights' cannot be set", "--allow-pickle-weights"],
    ),
    ("dry-run-k-above-lists", ["--k", "10", "--dry-run"], ["fewer than K = 10"]),
    ("dry-run-exposure-k", ["--exposure-k", "7", "--dry-run"], ["'exposure_k' = 7"]),
    ("no-such-flag", ["--bogus"], ["unrecognized arguments: --bogus"]),
    ("k-not-integer", ["--k", "ten"], ["argument --k", "invalid int value"]),
]


@pytest.mark.parametrize("name,extra,needles", PARAMETER_CASES, ids=[c[0] for c in PARAMETER_CASES])
def test_impossible_parameters(name, extra, needles, tmp_path, capsys):
    cands = _write(tmp_path / "cands.jsonl", _good())
    expect_rejected(capsys, _base(cands, tmp_path / "run", *extra), needles, tmp_path / "run")


def _config_file(tmp_path: Path, text: bytes) -> Path:
    p = tmp_path / "run.yaml"
    p.write_bytes(text)
    return p


CONFIG_CASES = [
    (
        "trust-remote-code",
        b"scorer: span\nscorer_options: {trust_remote_code: true}\n",
        ["'trust_remote_code' cannot be set", "--trust-remote-code"],
    ),
    ("not-utf8", b"m: 2\n# caf\xe9\n", ["run.yaml:2: not UTF-8"]),
    ("malformed", b"m: [2\n", ["run.yaml", "malformed YAML"]),
    ("unknown-key", b"bogus: 1\n", ["unknown setting 'bogus'"]),
    ("k-1", b"K: 1\n", ["'K' ('k') = 1"]),
]


@pytest.mark.parametrize("name,text,needles", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_file(name, text, needles, tmp_path, capsys):
    cands = _write(tmp_path / "cands.jsonl", _good())
    config = _config_file(tmp_path, text)
    expect_rejected(capsys, _base(cands, tmp_path / "run", "--config", config), needles, tmp_path / "run")


def _out_is_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file", [], ["--out", "file: exists and is not a folder"]


def _out_under_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "run", [], ["--out", "file is a file, expected a folder"]


def _out_read_only_folder(tmp_path, monkeypatch):
    (tmp_path / "ro").mkdir()
    read_only(monkeypatch, tmp_path / "ro")
    return tmp_path / "ro" / "run", [], ["--out", "ro/run", "not writable"]


def _out_read_only_run(tmp_path, monkeypatch):
    from invarirank.cli import main

    cands = tmp_path / "cands.jsonl"
    assert main([str(a) for a in _base(cands, tmp_path / "done")]) == 0
    read_only(monkeypatch, tmp_path / "done")
    return tmp_path / "done", [], ["--out", "done", "not writable"]


def _cache_is_file(tmp_path, monkeypatch):
    (tmp_path / "cachefile").write_text("x")
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cachefile"))
    return tmp_path / "run", [], ["cache folder ($INVARIRANK_CACHE)", "cachefile: exists and is not a folder"]


def _cache_read_only(tmp_path, monkeypatch):
    (tmp_path / "rocache").mkdir()
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "rocache"))
    read_only(monkeypatch, tmp_path / "rocache")
    return tmp_path / "run", [], ["cache folder ($INVARIRANK_CACHE)", "not writable"]


def _cache_dir_flag_is_file(tmp_path, monkeypatch):
    (tmp_path / "cachefile").write_text("x")
    return tmp_path / "run", ["--cache-dir", tmp_path / "cachefile"], ["--cache-dir", "exists and is not a folder"]


def _out_holds_other_run(tmp_path, monkeypatch):
    from invarirank.cli import main

    cands = tmp_path / "cands.jsonl"
    assert main([str(a) for a in _base(cands, tmp_path / "other", "--seed", "7")]) == 0
    return tmp_path / "other", [], ["finished run with a different configuration"]


PLACE_CASES = [
    _out_is_file,
    _out_under_file,
    _out_read_only_folder,
    _out_read_only_run,
    _cache_is_file,
    _cache_read_only,
    _cache_dir_flag_is_file,
    _out_holds_other_run,
]


@pytest.mark.parametrize("case", PLACE_CASES, ids=[c.__name__.strip("_") for c in PLACE_CASES])
def test_unwritable_places(case, tmp_path, capsys, monkeypatch):
    cands = _write(tmp_path / "cands.jsonl", _good())
    out, extra, needles = case(tmp_path, monkeypatch)
    expect_rejected(capsys, _base(cands, out, *extra), needles, out)


# --- model folders (family 5 and 7): need torch --------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    pytest.importorskip("torch")
    from invarirank.llm._testing import tiny_model, train_tokenizer

    tok = train_tokenizer("bytelevel")
    lm = tiny_model("llama", tok)
    folder = tmp_path_factory.mktemp("models") / "tiny"
    lm.model.save_pretrained(folder)
    tok.save_pretrained(folder)
    assert (folder / "model.safetensors").is_file()
    return folder


def _copy(folder: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(folder, to)
    return to


def _truncated(folder: Path, to: Path) -> Path:
    f = _copy(folder, to) / "model.safetensors"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    return to


def _header_cut(folder: Path, to: Path) -> Path:
    f = _copy(folder, to) / "model.safetensors"
    f.write_bytes(f.read_bytes()[:20])
    return to


def _pickle_only(folder: Path, to: Path) -> Path:
    import torch
    from safetensors.torch import load_file

    d = _copy(folder, to)
    torch.save(load_file(d / "model.safetensors"), d / "pytorch_model.bin")
    (d / "model.safetensors").unlink()
    return d


def _no_config(folder: Path, to: Path) -> Path:
    d = _copy(folder, to)
    (d / "config.json").unlink()
    return d


MODEL_CASES = [
    ("truncated-safetensors", _truncated, ["model.safetensors: not a complete safetensors file", "truncated?"]),
    ("header-cut", _header_cut, ["model.safetensors: not a complete safetensors file"]),
    ("pickle-weights", _pickle_only, ["only pickle-based weights (pytorch_model.bin)", "--allow-pickle-weights"]),
    ("no-config", _no_config, ["no config.json"]),
]


@pytest.mark.parametrize("name,make,needles", MODEL_CASES, ids=[c[0] for c in MODEL_CASES])
def test_bad_model_folders(name, make, needles, tiny_folder, tmp_path, capsys):
    cands = _write(tmp_path / "cands.jsonl", _good())
    folder = make(tiny_folder, tmp_path / name)
    argv = _base(cands, tmp_path / "run")
    argv[argv.index("simulated")] = "span"
    expect_rejected(capsys, [*argv, "--model", folder, "--device", "cpu"], [str(folder), *needles], tmp_path / "run")


def test_pickle_weights_load_only_with_the_explicit_flag(tiny_folder, tmp_path, capsys):
    """The counterpart of the pickle case: with --allow-pickle-weights the same folder runs (and scores like the
    safetensors original)."""
    from invarirank.cli import main
    from invarirank.llm import models

    cands = _write(tmp_path / "cands.jsonl", _good())
    folder = _pickle_only(tiny_folder, tmp_path / "pickled")
    argv = [str(a) for a in _base(cands, tmp_path / "run")]
    argv[argv.index("simulated")] = "span"
    try:
        assert main([*argv, "--model", str(folder), "--device", "cpu", "--allow-pickle-weights"]) == 0
    finally:
        models.allow()  # the grant is per process: reset it for other tests
    assert (
        main(
            [
                *argv[:-3],
                "--out",
                str(tmp_path / "run2"),
                "--no-progress",
                "--model",
                str(tiny_folder),
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    a = (tmp_path / "run" / "observations.jsonl").read_text().splitlines()
    b = (tmp_path / "run2" / "observations.jsonl").read_text().splitlines()
    strip = lambda rows: [{k: v for k, v in json.loads(r).items() if k != "model"} for r in rows]  # noqa: E731
    assert strip(a) == strip(b)


def test_remote_code_needs_the_flag_and_warns_naming_the_folder(tiny_folder, tmp_path, capsys, monkeypatch):
    from invarirank.llm import models

    seen = {}
    real = models._load_tokenizer

    def spy(folder, trust_remote_code):
        seen["trust"] = trust_remote_code
        return real(folder, trust_remote_code)

    monkeypatch.setattr(models, "_load_tokenizer", spy)
    models.load_model(str(tiny_folder), device="cpu", reuse=False)
    assert seen["trust"] is False and "trust_remote_code" not in capsys.readouterr().err
    models.allow(trust_remote_code=True)
    try:
        models.load_model(str(tiny_folder), device="cpu", reuse=False)
    finally:
        models.allow()
    assert seen["trust"] is True
    assert f"trust_remote_code is on: the Python code in {tiny_folder.resolve()} may run" in capsys.readouterr().err


def test_a_second_writer_of_a_run_folder_stops_at_once(tmp_path, capsys):
    """The run folder is locked while it is written: a second `invarirank rerank` on it exits 2 naming the holder
    and leaves the folder as it was (here the first writer is this test process holding the lock)."""
    import os
    import socket

    from invarirank._locks import folder_lock

    cands = _write(tmp_path / "cands.jsonl", _good())
    out = tmp_path / "run"
    with folder_lock(out):
        expect_rejected(
            capsys,
            _base(cands, out),
            [str(out), "is being written by", f"pid {os.getpid()}", socket.gethostname()],
            out,
        )
    assert main([str(a) for a in _base(cands, out)]) == 0  # once the holder is gone, the run goes on
