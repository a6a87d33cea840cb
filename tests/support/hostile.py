"""The hostile-input harness (issue 14): a rejected input exits 2 with one line ``invarirank: error: ...`` on stderr
that holds every expected fragment, shows no traceback and leaves ``--out`` exactly as it was. One table of cases per
entry point lives in ``tests/hostile/test_<entry>.py``; each case is one row."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from invarirank.cli import main


def snapshot(path: Path | None) -> Any:
    """The bytes under ``path`` (None when absent; a file's bytes; a folder's {relative path: bytes})."""
    if path is None or not path.exists():
        return None
    if path.is_file():
        return path.read_bytes()
    return {str(p.relative_to(path)): (p.read_bytes() if p.is_file() else None) for p in sorted(path.rglob("*"))}


def expect_rejected(capsys, argv: Sequence[str], needles: Sequence[str], out: Path | None = None) -> str:
    """Run ``invarirank ARGV`` in-process and check the promise for rejected input; return the error line. An
    uncaught exception (a traceback for the user) fails the test by propagating."""
    capsys.readouterr()
    before = snapshot(out)
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert code == 2, (code, captured.err)
    assert "Traceback" not in captured.err
    assert len(lines) == 1 and lines[0].startswith("invarirank: error: "), captured.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert snapshot(out) == before, f"{out} changed"
    return lines[0]


def read_only(monkeypatch, folder: Path) -> None:
    """Make ``folder`` (and what is under it) look read-only to this process, also when tests run as root (root
    ignores permission bits): ``os.access`` answers no and creating a file there raises ``PermissionError``."""
    import tempfile

    root = str(folder.absolute())
    under = lambda p: os.path.abspath(os.fspath(p)).startswith(root)  # noqa: E731
    real_access, real_mkstemp, real_mkdir = os.access, tempfile.mkstemp, os.mkdir

    def access(p, mode, *a, **kw):
        return False if under(p) and mode & os.W_OK else real_access(p, mode, *a, **kw)

    def mkstemp(*a, dir=None, **kw):
        if dir is not None and under(dir):
            raise PermissionError(13, "Permission denied", str(dir))
        return real_mkstemp(*a, dir=dir, **kw)

    def mkdir(p, *a, **kw):
        if under(p):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real_mkdir(p, *a, **kw)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "mkdir", mkdir)


def rerank_argv(cands: Path, out: Path, *extra: Any) -> list[Any]:
    """The smallest ``invarirank rerank`` of a candidates file into ``out`` (simulated scorer, zero-shot, M = 2, no
    bootstrap, no progress), with ``extra`` flags after it: what the hostile tables vary one flag at a time."""
    return [
        "rerank",
        "--candidates",
        cands,
        "--scorer",
        "simulated",
        "--m",
        "2",
        "--methods",
        "zero_shot",
        "--n-bootstrap",
        "0",
        "--out",
        out,
        "--no-progress",
        *extra,
    ]


def full_disk(monkeypatch, hit: Callable[[Path], bool], nth: int = 1) -> None:
    """The disk fills when the ``nth`` file ``hit`` accepts is put in place: ``os.replace`` raises ``ENOSPC``
    naming the temporary source, as a write cut short does (every writer ends in a rename)."""
    real, seen = os.replace, [0]

    def replace(src, dst, *args, **kwargs):
        if hit(Path(dst)):
            seen[0] += 1
            if seen[0] == nth:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(src), None, os.fspath(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
