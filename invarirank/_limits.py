"""Bounds on the work one setting may ask for, stated once for the command line, the Python front door, config
files and grids (a typo such as ``--bootstrap 1e11`` or ``--workers 1000`` would otherwise run for days or take the
machine). Plain numbers and two small checks; nothing heavy is imported: the command line reads them when it builds its
help."""

from __future__ import annotations

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


def local_ray_cpus(workers: int | None, cpus_per_worker: float, machine: int | None = None) -> tuple[int, int | None]:
    """``(num_cpus, workers)`` for a local Ray on a machine of ``machine`` CPUs (default: this one's): never more
    CPUs than the machine has, so ``--workers 1000`` cannot start a thousand worker processes on two cores. Workers
    that do not fit are dropped with one note on stderr (``workers`` × ``cpus_per_worker`` capped at the machine); a
    worker larger than the machine is an error."""
    import math
    import sys

    from .errors import InvariRankError

    machine = machine or machine_cpus()
    if cpus_per_worker > machine:
        raise InvariRankError(
            f"--cpus-per-worker {cpus_per_worker:g}: more than the {machine} CPUs of this machine; expected at most "
            f"{machine} for a local Ray"
        )
    if workers is None:
        return machine, None
    fit = int(machine // cpus_per_worker)
    if workers > fit:
        print(
            f"invarirank: note: --workers {workers} x --cpus-per-worker {cpus_per_worker:g} is more than the "
            f"{machine} CPUs of this machine; a local Ray starts {fit} workers",
            file=sys.stderr,
        )
        workers = fit
    return min(machine, max(1, math.ceil(workers * cpus_per_worker))), workers
