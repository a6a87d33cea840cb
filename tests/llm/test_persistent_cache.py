"""The persistent pass cache reads other workers' files, read-only, on a miss (no torch needed)."""

from __future__ import annotations

import sqlite3

import numpy as np

from invarirank.llm._persistent_cache import PersistentPassCache


def _scores(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def test_a_miss_reads_the_sibling_files_and_never_writes_them(tmp_path):
    sibling = PersistentPassCache(tmp_path / "worker-0" / "passes.sqlite3")
    sibling.put("before", _scores(1.0, 2.0), 7, "id")
    own = PersistentPassCache(tmp_path / "worker-1" / "passes.sqlite3")
    own.read_also([tmp_path / "worker-0" / "passes.sqlite3", tmp_path / "worker-2" / "passes.sqlite3"])
    assert own.read_paths == [tmp_path / "worker-0" / "passes.sqlite3"]  # the absent file is skipped

    scores, where = own.get("before")
    assert where == "disk" and scores.tolist() == [1.0, 2.0]
    sibling.put("later", _scores(3.0), 5, "id")  # written by the other worker while this one runs (WAL)
    assert own.get("later")[0].tolist() == [3.0]
    assert own.get("nowhere") is None

    own.put("mine", _scores(4.0), 3, "id")
    assert len(own) == 1 and len(sibling) == 2  # only its own file grows
    assert sibling.get("mine") is None
    own.close()
    sibling.close()


def test_a_sibling_file_that_is_not_a_cache_is_only_a_miss(tmp_path):
    other = tmp_path / "worker-0" / "passes.sqlite3"
    other.parent.mkdir()
    sqlite3.connect(other).close()  # an empty database: no passes table
    own = PersistentPassCache(tmp_path / "worker-1" / "passes.sqlite3")
    own.read_also([other])
    assert own.get("anything") is None
    own.close()


def test_a_closed_writer_leaves_a_file_the_reader_still_opens(tmp_path):
    writer = PersistentPassCache(tmp_path / "worker-0" / "passes.sqlite3")
    writer.put("k", _scores(0.5), 1, "id")
    writer.close()  # no process has it open any more (the run was stopped)
    own = PersistentPassCache(tmp_path / "worker-1" / "passes.sqlite3")
    own.read_also([tmp_path / "worker-0" / "passes.sqlite3"])
    assert own.get("k")[0].tolist() == [0.5]
    own.close()
