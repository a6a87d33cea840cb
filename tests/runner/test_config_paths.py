"""The one path rule (:meth:`invarirank.runner.RunConfig.with_absolute_paths`): ``~`` and environment variables
expanded, a relative ``raw_dir``/``data_dir``/``candidates`` taken against the root given (the project root in a
grid, the working directory in a run with ``out``), an unset ``$VAR`` an error naming the setting (the grid's
check names the run too)."""

from __future__ import annotations

from pathlib import Path

from invarirank.runner import RunConfig
from invarirank.runner._inputs import input_hashes


def test_relative_paths_are_taken_against_the_root_and_absolute_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IR_UNSET", raising=False)
    config = RunConfig(raw_dir="raw/../ml", data_dir="$IR_DATA/prepared")  # (a candidates file excludes both)
    assert config.relative_paths() == ["raw_dir"]
    done = config.with_absolute_paths(tmp_path / "root")
    assert (done.raw_dir, done.data_dir) == (str(tmp_path / "root" / "ml"), str(tmp_path / "data" / "prepared"))
    assert done.relative_paths() == [] and done.with_absolute_paths(Path("/elsewhere")) == done
    assert RunConfig(candidates="~/c.jsonl").with_absolute_paths(tmp_path / "root").candidates == str(
        tmp_path / "home" / "c.jsonl"
    )
    unset = RunConfig(raw_dir="$IR_UNSET/raw").with_absolute_paths(tmp_path)
    assert unset.raw_dir == "$IR_UNSET/raw" and unset.relative_paths() == []
    assert RunConfig().with_absolute_paths(tmp_path) == RunConfig()


def test_a_run_s_inputs_are_hashed_where_it_reads_them(tmp_path, monkeypatch):
    """A run with ``out`` reads a relative candidates file in the working directory: its inputs are that file's
    hash, from any working directory the same file is named from."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.jsonl").write_text('{"query_id": "q"}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    here = input_hashes(RunConfig(candidates="sub/c.jsonl"))
    monkeypatch.chdir(tmp_path / "sub")
    assert input_hashes(RunConfig(candidates="c.jsonl")) == here
    assert input_hashes(RunConfig(candidates=str(tmp_path / "sub" / "c.jsonl"))) == here and "candidates" in here
    assert input_hashes(RunConfig(candidates="sub/c.jsonl")) == {}  # not here: the run reports it


def _toy_candidates(path: Path) -> None:
    from invarirank.candidates import write_candidates
    from invarirank.llm._testing import toy_split_queries

    write_candidates(path, toy_split_queries(n_test=2, k=4))


def test_a_run_in_place_reads_the_path_its_inputs_hash_names(tmp_path, monkeypatch):
    """A run with ``out`` expands ``~`` and ``$VAR`` in its path settings before it reads them, as the hash of its
    inputs does: a candidates file named ``$IR_CANDS/c.jsonl`` or ``~/c.jsonl`` is the file it names (the run
    used to look for a file literally called ``$IR_CANDS/c.jsonl`` in the working directory)."""
    from invarirank.runner import run_experiment

    _toy_candidates(tmp_path / "c.jsonl")
    monkeypatch.setenv("IR_CANDS", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    settings = dict(scorer="simulated", K=4, M=2, methods=["zero_shot"], exposure_k=2, n_bootstrap=10)
    metrics = []
    for n, given in enumerate(("$IR_CANDS/c.jsonl", "${IR_CANDS}/c.jsonl", "~/c.jsonl", "c.jsonl")):
        out = tmp_path / f"run{n}"
        run_experiment(RunConfig(candidates=given, out=str(out), **settings), progress=False)
        metrics.append((out / "metrics.json").read_bytes())
    assert len(set(metrics)) == 1


def test_a_run_in_place_names_an_unset_variable_of_a_path(tmp_path, monkeypatch):
    import pytest

    from invarirank.errors import InvariRankError
    from invarirank.runner import run_experiment

    monkeypatch.delenv("IR_UNSET", raising=False)
    monkeypatch.chdir(tmp_path)
    config = RunConfig(
        candidates="$IR_UNSET/c.jsonl",
        scorer="simulated",
        K=4,
        M=2,
        methods=["zero_shot"],
        exposure_k=2,
        out=str(tmp_path / "run"),
    )
    with pytest.raises(
        InvariRankError,
        match=r"setting 'candidates' = '\$IR_UNSET/c.jsonl' uses the environment "
        r"variable IR_UNSET, which is not set",
    ):
        run_experiment(config, progress=False)
    assert not (tmp_path / "run").exists()


def test_the_command_line_names_the_yaml_file_or_the_flag_of_an_unset_variable(tmp_path, monkeypatch, capsys):
    """``invarirank rerank``: the error names where the path was given — the YAML file, or the flag (a quoted
    ``'$V/c.jsonl'`` reaches it unexpanded) — before any work, dry run included."""
    from invarirank.cli import main

    monkeypatch.delenv("IR_UNSET", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text("candidates: $IR_UNSET/c.jsonl\nscorer: simulated\n", encoding="utf-8")
    for args, where in (
        (["--config", "cfg.yaml"], "cfg.yaml"),
        (["--candidates", "$IR_UNSET/c.jsonl"], "--candidates"),
        (["--config", "cfg.yaml", "--dry-run"], "cfg.yaml"),
    ):
        capsys.readouterr()
        assert main(["rerank", *args, "--scorer", "simulated", "--out", "run"]) != 0
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"invarirank: error: {where}: setting 'candidates' = '$IR_UNSET/c.jsonl' uses the environment "
            f"variable IR_UNSET, which is not set"
        ], err
    assert not (tmp_path / "run").exists()
