"""Atomic file output: everything is written to a temporary file in the target folder and renamed,
so a final file is either complete or absent (never half-written)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

__all__ = ["atomic_path", "atomic_write_text", "atomic_write_json", "dumps_json", "read_json"]


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
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            # mkstemp creates 0600 files; give the final file the usual permissions (0666 & ~umask)
            os.chmod(tmp_path, 0o666 & ~_umask())
        os.replace(tmp_path, target)
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
