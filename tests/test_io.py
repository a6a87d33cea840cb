"""Atomic writes: complete or absent, usual permissions, deterministic gzip."""

from __future__ import annotations

import os
import stat

import pytest

from invarirank._io import atomic_path, atomic_write_json, atomic_write_text, read_json


def test_atomic_write_is_complete_or_absent(tmp_path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_final_file_has_usual_permissions(tmp_path):
    target = tmp_path / "a.txt"
    atomic_write_text(target, "x")
    mode = stat.S_IMODE(os.stat(target).st_mode)
    mask = os.umask(0)
    os.umask(mask)
    assert mode == 0o666 & ~mask


def test_gzip_output_is_deterministic_and_readable(tmp_path):
    atomic_write_text(tmp_path / "a.json.gz", '{"a": 1}', compress=True)
    first = (tmp_path / "a.json.gz").read_bytes()
    atomic_write_text(tmp_path / "a.json.gz", '{"a": 1}', compress=True)
    assert (tmp_path / "a.json.gz").read_bytes() == first
    assert read_json(tmp_path / "a.json.gz") == {"a": 1}


def test_json_refuses_nan(tmp_path):
    with pytest.raises(ValueError):
        atomic_write_json(tmp_path / "n.json", {"x": float("nan")})
    assert not (tmp_path / "n.json").exists()
