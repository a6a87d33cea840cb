"""One writer per folder: an OS lock (``fcntl.flock``) on ``FOLDER/.lock`` that dies with its holder.

``with folder_lock(run_dir): ...`` holds an exclusive, non-blocking ``flock`` on ``run_dir/.lock`` while the body
writes the folder, and records its holder in the file as JSON: ``{"pid": ..., "host": ..., "started": ...}``
(``started``: UTC, ISO 8601, seconds). A second writer does not wait: it raises
:class:`~invarirank.errors.InvariRankError` at once, one line naming the folder and the holder (the CLI exits 2).

Because the kernel drops an ``flock`` when its holder dies (``kill -9`` included), a lock file left by a dead
process on this host is simply taken over. A lock file whose holder is another host (a shared file system, where
``flock`` may not reach across machines) is never taken over: it is reported, with the instruction to delete the
file once that run is known to be gone. The lock file stays after a clean exit (its ``flock`` is released), so the
folder records who wrote it last; it is not one of a run's result files.

Where it is held: the run folder, for as long as a process writes it — :func:`invarirank.runner.ensure_runs`, from
before a run's first shard until its merge (the shards of a run are written only by the workers of the driver that
holds its lock).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .errors import InvariRankError

#: the lock file inside a locked folder
LOCK_NAME = ".lock"


def _host() -> str:
    return socket.gethostname()


def lock_holder(folder: str | os.PathLike) -> dict[str, Any] | None:
    """The holder recorded in ``folder``'s lock file (pid, host, started), or None when there is none or it
    cannot be read. A record does not mean the lock is held: only a live ``flock`` does."""
    try:
        data = json.loads((Path(folder) / LOCK_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another process (no holder recorded)"
    return f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('started')}"


@contextmanager
def folder_lock(folder: str | os.PathLike, what: str = "run folder") -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created if missing) for the body; see the module docstring.

    Raises :class:`InvariRankError` at once when another live process holds it, or when the lock file records a
    holder on another host whose run may still be going on. A folder this call created is removed again when the
    body fails before writing anything into it, so rejected input leaves no trace (nor do the empty folders above
    it that this call created: a grid's ``runs/<grid>/``)."""
    d = Path(folder)
    created = [p for p in (d, *d.parents) if not p.exists()]  # the folders this call makes, deepest first
    failed = True
    try:
        with _held(d, what):
            yield d
            failed = False
    finally:
        if created and failed and d.is_dir() and [p.name for p in d.iterdir()] == [LOCK_NAME]:
            (d / LOCK_NAME).unlink(missing_ok=True)
            for p in created:
                try:
                    p.rmdir()
                except OSError:  # not empty: another writer uses it
                    break


@contextmanager
def _held(d: Path, what: str) -> Iterator[None]:
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InvariRankError(f"{d}: cannot create its lock file ({exc.strerror})") from None
    try:
        previous = lock_holder(d)
        if previous and previous.get("host") not in (None, _host()):
            raise InvariRankError(
                f"{d}: {what} is locked by {_describe(previous)}, another host; this host cannot tell whether that "
                f"run is alive; delete {d / LOCK_NAME} once it is known to be gone"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise InvariRankError(
                f"{d}: {what} is being written by {_describe(lock_holder(d))}; wait for it to "
                f"finish (or stop it) and run again"
            ) from None
        # the flock is ours: a recorded holder is dead (the kernel released its lock) or was ourselves earlier
        record = {
            "pid": os.getpid(),
            "host": _host(),
            "started": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
        os.fsync(fd)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock
