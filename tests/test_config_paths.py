"""The one path rule (:meth:`invarirank.runner.RunConfig.with_absolute_paths`): ``~`` and environment variables
expanded, a relative ``raw_dir``/``data_dir``/``candidates`` taken against the root given (the project root in a
grid, the working directory in a run with ``out``), an unset ``$VAR`` left for the grid's check to name."""

from __future__ import annotations

from pathlib import Path

from invarirank.runner import RunConfig
from invarirank.runner.inputs import input_hashes


def test_relative_paths_are_taken_against_the_root_and_absolute_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("IR_UNSET", raising=False)
    config = RunConfig(raw_dir="raw/../ml", data_dir="$IR_DATA/prepared", candidates="~/c.jsonl")
    assert config.relative_paths() == ["raw_dir"]
    done = config.with_absolute_paths(tmp_path / "root")
    assert (done.raw_dir, done.data_dir, done.candidates) == (
        str(tmp_path / "root" / "ml"), str(tmp_path / "data" / "prepared"), str(tmp_path / "home" / "c.jsonl"))
    assert done.relative_paths() == [] and done.with_absolute_paths(Path("/elsewhere")) == done
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
    assert input_hashes(RunConfig(candidates="sub/c.jsonl")) == {}       # not here: the run reports it
