"""Bounds on the work one setting may ask for, stated once for the command line, the Python front door, config
files and grids (a typo such as ``--bootstrap 1e11`` or ``--workers 1000`` would otherwise run for days or take the
machine). Plain numbers and two small checks; nothing heavy is imported: the command line reads them when it builds its
help."""

from __future__ import annotations

__all__ = ["MAX_BOOTSTRAP", "MAX_PERMUTATIONS", "MAX_THREADS_PER_CORE", "machine_cpus", "check_threads"]

#: the most bootstrap resamples a run or ``invarirank evaluate`` computes
MAX_BOOTSTRAP = 100_000
#: the most seeded sign flips of the paired permutation test between methods
MAX_PERMUTATIONS = 1_000_000
#: a thread or worker-CPU count above this many per core of the machine is refused (oversubscription only slows)
MAX_THREADS_PER_CORE = 4


def machine_cpus() -> int:
    """The CPUs this process may use (its affinity mask; ``os.cpu_count()`` where there is none)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


def check_threads(value: int, what: str) -> int:
    """``value`` threads, refused (one line naming ``what``) above :data:`MAX_THREADS_PER_CORE` per CPU of this
    machine: thousands of threads hang or crash the numeric libraries and never run faster."""
    from .errors import InvariRankError

    limit = MAX_THREADS_PER_CORE * machine_cpus()
    if value > limit:
        raise InvariRankError(
            f"{what} {value}: more than {MAX_THREADS_PER_CORE} threads per CPU of this machine "
            f"({machine_cpus()} CPUs); expected at most {limit}"
        )
    return value
