"""One whole process timed: wall seconds and the CPU seconds (user + system) it used."""

from __future__ import annotations

import resource
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path


def timed_run(
    command: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> tuple[subprocess.CompletedProcess, float, float]:
    """``(completed process, wall seconds, CPU seconds)`` of ``command`` run to its end (output captured)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(list(command), cwd=cwd, env=dict(env), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
