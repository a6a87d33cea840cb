"""Atomic file output: everything is written to a temporary file in the target folder and renamed,
so a final file is either complete or absent (never half-written).

Places that cannot be written (a read-only folder, a file where a folder is expected, a folder where a file is
expected) raise :class:`~invarirank.errors.InvariRankError` naming the path and what is wrong, never a bare
``OSError``; :func:`check_output_dir` / :func:`check_output_file` make the same checks up front, before any work.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import InvariRankError

__all__ = ["atomic_path", "atomic_write_text", "atomic_write_json", "dumps_json", "read_json", "check_output_dir",
           "check_output_file", "unwritable", "read_utf8"]


def read_utf8(path: str | os.PathLike, what: str = "file") -> str:
    """The text of a UTF-8 file; a file that is not UTF-8 is an error naming it and the 1-based line of the first
    bad byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InvariRankError(f"{path}:{line}: not UTF-8 text; a {what} is UTF-8") from None


def unwritable(path: str | os.PathLike, exc: OSError, what: str = "") -> InvariRankError:
    """The one-line error for an ``OSError`` met while writing ``path`` (``what``: e.g. ``"--out"``)."""
    name = Path(exc.filename) if getattr(exc, "filename", None) else Path(path)
    reason = {PermissionError: "permission denied (not writable)", IsADirectoryError: "is a folder, expected a file",
              NotADirectoryError: "a part of the path is a file, expected a folder",
              FileExistsError: "exists and is not a folder"}.get(type(exc), exc.strerror or str(exc))
    label = f"{what} " if what else ""
    return InvariRankError(f"{label}{name}: cannot write ({reason})")


def _nearest_existing(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_output_dir(path: str | os.PathLike, what: str = "--out") -> Path:
    """Check, before any work, that ``path`` is (or can be created as) a writable folder; raise
    :class:`InvariRankError` naming ``what`` and the path otherwise. Creates nothing."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InvariRankError(f"{what} {p}: exists and is not a folder")
    base = _nearest_existing(p.absolute())
    if not base.is_dir():
        raise InvariRankError(f"{what} {p}: {base} is a file, expected a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise InvariRankError(f"{what} {p}: cannot write ({base} is not writable)")
    return p


def check_output_file(path: str | os.PathLike, what: str = "--output") -> Path:
    """Check, before any work, that ``path`` names a file that can be written (atomically) in a writable
    folder; raise :class:`InvariRankError` naming ``what`` and the path otherwise. Creates nothing."""
    p = Path(path)
    if p.is_dir():
        raise InvariRankError(f"{what} {p}: is a folder, expected a file name")
    check_output_dir(p.absolute().parent, what=f"{what} {p}: folder")
    if p.exists() and not os.access(p.absolute().parent, os.W_OK):
        raise InvariRankError(f"{what} {p}: cannot replace it (its folder is not writable)")
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``.

    On an exception the temporary file is removed and ``path`` is left untouched.
    """
    target = Path(path)
    if target.is_dir():
        raise InvariRankError(f"{target}: cannot write (is a folder, expected a file)")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise unwritable(target, exc) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            # mkstemp creates 0600 files; give the final file the usual permissions (0666 & ~umask)
            os.chmod(tmp_path, 0o666 & ~_umask())
        try:
            os.replace(tmp_path, target)
        except OSError as exc:
            raise unwritable(target, exc) from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike, text: str, *, compress: bool = False) -> None:
    """Write ``text`` (UTF-8) atomically; gzip it (deterministically, mtime 0) when ``compress``."""
    with atomic_path(path) as tmp:
        if compress:
            with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                gz.write(text.encode("utf-8"))
        else:
            tmp.write_text(text, encoding="utf-8")


def dumps_json(obj: Any) -> str:
    """Canonical, human-readable JSON (2-space indent, UTF-8, trailing newline); NaN is refused."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as canonical JSON, atomically."""
    atomic_write_text(path, dumps_json(obj))


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file (plain or ``.gz``)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def sha256_file(path: str | os.PathLike, block: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in blocks of ``block`` bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()
