"""A small finished simulated run for the compendium's tests (a helper module, not a test module; it belongs in
the shared ``conftest.py`` once there is one)."""

from __future__ import annotations

from pathlib import Path

from invarirank import compendium
from invarirank.runner.lab import live_run


def simulated_run(folder: Path) -> compendium.Run:
    """Four methods on five synthetic queries (K = 6, M = 4, primacy bias 2.0), read back by the compendium."""
    run = live_run("primacy", 2.0, K=6, M=4, n_queries=5, calibration_queries=4, calibration_repeats=1, seed=3,
                   out=folder, n_bootstrap=100)
    return compendium.load_run(run.path)
