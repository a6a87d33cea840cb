"""The folder lock (:mod:`invarirank._locks`): two writers on one folder — exactly one runs, the other exits at once
with one line naming the holder; a killed writer's stale lock is taken over; another host's lock is reported."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from invarirank._locks import LOCK_NAME, folder_lock, lock_holder
from invarirank.errors import InvariRankError
from tests.support import ROOT  # noqa: E402

# a writer: takes the lock, appends its pid to FOLDER/writers, holds the lock HOLD seconds (or until killed)
WRITER = """
import os, sys, time
from invarirank.errors import InvariRankError
from invarirank._locks import folder_lock
folder, hold = sys.argv[1], float(sys.argv[2])
try:
    with folder_lock(folder):
        with open(os.path.join(folder, "writers"), "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        print("locked", flush=True)
        time.sleep(hold)
except InvariRankError as exc:
    print(f"invarirank: error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


def _writer(folder: Path, hold: float) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder), str(hold)],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_two_writers_on_one_folder_exactly_one_runs(tmp_path):
    folder = tmp_path / "run"
    first = _writer(folder, 3.0)
    assert first.stdout.readline().strip() == "locked"  # the first holds the lock now
    t0 = time.monotonic()
    second = _writer(folder, 3.0)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2 and time.monotonic() - t0 < 2.5  # at once, not after the holder finished
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"is being written by pid {first.pid} on {socket.gethostname()}" in lines[0] and str(folder) in lines[0]
    first.wait(timeout=60)
    assert first.returncode == 0
    assert (folder / "writers").read_text().split() == [str(first.pid)]  # exactly one wrote


def test_a_killed_writers_stale_lock_is_taken_over(tmp_path):
    folder = tmp_path / "run"
    victim = _writer(folder, 600.0)
    assert victim.stdout.readline().strip() == "locked"
    assert lock_holder(folder)["pid"] == victim.pid
    with pytest.raises(InvariRankError, match=f"pid {victim.pid}"):
        with folder_lock(folder):
            pass
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=60)
    assert lock_holder(folder)["pid"] == victim.pid  # the stale record is still there
    with folder_lock(folder):
        assert lock_holder(folder)["pid"] == os.getpid()
        assert lock_holder(folder)["host"] == socket.gethostname()
    with folder_lock(folder):  # released on exit
        pass


def test_a_lock_of_another_host_is_reported_never_taken_over(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    record = {"pid": 4242, "host": "gpu-node-7", "started": "2026-01-01T00:00:00+00:00"}
    (folder / LOCK_NAME).write_text(json.dumps(record))
    with pytest.raises(InvariRankError) as info:
        with folder_lock(folder):
            raise AssertionError("the body must not run")
    message = str(info.value)
    assert (
        "pid 4242 on gpu-node-7" in message
        and "another host" in message
        and f"delete {folder / LOCK_NAME}" in message
        and "\n" not in message
    )
    assert json.loads((folder / LOCK_NAME).read_text()) == record  # untouched


def test_the_lock_is_released_when_the_body_raises(tmp_path):
    with pytest.raises(ValueError):
        with folder_lock(tmp_path / "run"):
            raise ValueError("boom")
    with folder_lock(tmp_path / "run") as d:
        assert d == tmp_path / "run"


def test_a_rejected_run_leaves_no_folder_it_created(tmp_path):
    """Nothing written: the run folder and the empty folders above it that the lock made are removed (a grid's
    runs/<grid>/ stayed behind); a folder that holds something else, or existed before, stays."""
    with pytest.raises(ValueError):
        with folder_lock(tmp_path / "runs" / "grid" / "run"):
            raise ValueError("refused before the first pass")
    assert not (tmp_path / "runs").exists()
    (tmp_path / "runs" / "grid" / "other").mkdir(parents=True)
    with pytest.raises(ValueError):
        with folder_lock(tmp_path / "runs" / "grid" / "run"):
            raise ValueError("refused")
    assert sorted(p.name for p in (tmp_path / "runs" / "grid").iterdir()) == ["other"]
