"""Bounds on the work one setting may ask for, stated once for the command line, the Python front door, config
files and grids (a typo such as ``--bootstrap 1e11`` or ``--workers 1000`` would otherwise run for days or take the
machine). Plain numbers, no imports: the command line reads them when it builds its help."""

from __future__ import annotations

__all__ = ["MAX_BOOTSTRAP", "MAX_PERMUTATIONS", "MAX_THREADS_PER_CORE"]

#: the most bootstrap resamples a run or ``invarirank evaluate`` computes
MAX_BOOTSTRAP = 100_000
#: the most seeded sign flips of the paired permutation test between methods
MAX_PERMUTATIONS = 1_000_000
#: a thread or worker-CPU count above this many per core of the machine is refused (oversubscription only slows)
MAX_THREADS_PER_CORE = 4
