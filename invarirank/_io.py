"""Atomic file output: everything is written to a temporary file in the target folder and renamed,
so a final file is either complete or absent (never half-written).

Places that cannot be written (a read-only folder, a file where a folder is expected, a folder where a file is
expected, a full disk) raise :class:`~invarirank.errors.InvariRankError` naming the path and what is wrong, never a
bare ``OSError``; :func:`check_output_dir` / :func:`check_output_file` make the same checks up front, before any work.

**Special files are never replaced.** An output path that is a character device (``/dev/null``, a terminal) is
written through, in place (there is nothing to make atomic); a FIFO, socket or block device is refused (a FIFO
would block without a reader). A symbolic link is followed: the file it points to is replaced atomically, the
link stays.

**Strict readers.** :func:`loads_json` reads JSON refusing duplicate keys and nesting deeper than
:data:`MAX_JSON_DEPTH`, raising :class:`~invarirank.errors.InvariRankError` naming the file and line; YAML (config
and grid files) has its own strict reader, :func:`invarirank._yaml_reader.load_yaml`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .errors import InvariRankError

#: the deepest nesting of arrays and objects a JSON input may have (candidates, observations, metrics, manifests)
MAX_JSON_DEPTH = 64


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
    reason = {
        PermissionError: "permission denied (not writable)",
        IsADirectoryError: "is a folder, expected a file",
        NotADirectoryError: "a part of the path is a file, expected a folder",
        FileExistsError: "exists and is not a folder",
    }.get(type(exc), exc.strerror or str(exc))
    if getattr(exc, "errno", None) == 28:
        reason = "no space left on the device"
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
    kind = special_file(p)
    if kind and kind != "character device":
        raise InvariRankError(f"{what} {p}: is a {kind}, expected a regular file (it is never replaced)")
    check_output_dir(p.absolute().parent, what=f"{what} {p}: folder")
    if p.exists() and not os.access(p.absolute().parent, os.W_OK):
        raise InvariRankError(f"{what} {p}: cannot replace it (its folder is not writable)")
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def path_argument(value: Any, where: str, what: str = "path") -> Path:
    """A Python caller's path argument as a :class:`~pathlib.Path`: a non-empty string or path-like, else one
    :class:`InvariRankError` naming ``where`` (the function and parameter) instead of a ``TypeError`` from inside."""
    if isinstance(value, (str, os.PathLike)) and os.fspath(value) != "":
        return Path(value)
    raise InvariRankError(f"{where} = {value!r}: expected the {what} (a non-empty str or pathlib.Path)")


def special_file(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder (links followed):
    ``"character device"``, ``"FIFO"``, ``"socket"`` or ``"block device"``; None otherwise."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    for test, name in (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return name
    return None


def _a(what: str) -> str:
    return f"{'an' if what[:1].lower() in 'aeiou' else 'a'} {what}"


def existing_file(path: str | os.PathLike, what: str = "file") -> Path:
    """``path`` when it is an existing regular file (links followed), else one error naming it that says what is
    there instead — nothing (``not found``), a folder or a special file — so that an input that exists is never
    called "not found". ``what`` names the file expected (``"grid file"``)."""
    p = Path(path)
    if p.is_file():
        return p
    if p.is_dir():
        raise InvariRankError(f"{p}: is a folder, expected {_a(what)}")
    kind = special_file(p)
    if kind:
        raise InvariRankError(f"{p}: is a {kind}, expected a regular {what}")
    raise InvariRankError(f"{p}: {what} not found")


def existing_folder(path: str | os.PathLike, what: str = "folder") -> Path:
    """``path`` when it is an existing folder (links followed), else one error naming it that says what is there
    instead (nothing: ``not found``; a file); see :func:`existing_file`."""
    p = Path(path)
    if p.is_dir():
        return p
    if p.exists():
        raise InvariRankError(f"{p}: is {_a(special_file(p) or 'file')}, expected {_a(what)}")
    raise InvariRankError(f"{p}: {what} not found")


def inside(root: str | os.PathLike, path: str | os.PathLike, what: str = "folder") -> Path:
    """``path``, checked to stay inside ``root`` once both are resolved (``..``, symbolic links); raise
    :class:`InvariRankError` naming both otherwise. Paths built from names (``results/<grid>/<run>``) use it."""
    resolved, base = Path(path).resolve(), Path(root).resolve()
    if resolved == base or base not in resolved.parents:
        raise InvariRankError(f"{what} {path}: resolves to {resolved}, outside {base}; expected a folder inside it")
    return Path(path)


@contextmanager
def _through(target: Path) -> Iterator[Path]:
    """A character device is written in place (no temporary file, no rename); a failed write (``/dev/full``)
    is one error naming it."""
    try:
        yield target
    except OSError as exc:
        raise unwritable(target, _unnamed(exc)) from None


def _unnamed(exc: OSError) -> OSError:
    """``exc`` without the file it names: errors met on the hidden temporary file name the target instead."""
    return type(exc)(exc.errno, exc.strerror) if exc.errno is not None else exc


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``.

    On an exception the temporary file is removed and ``path`` is left untouched. Special files and links: see the
    module docstring (a character device is yielded itself and written in place).
    """
    target = Path(path)
    if target.is_dir():
        raise InvariRankError(f"{target}: cannot write (is a folder, expected a file)")
    kind = special_file(target)
    if kind == "character device":
        with _through(target) as through:
            yield through
        return
    if kind:
        raise InvariRankError(f"{target}: cannot write (is a {kind}, expected a regular file; it is never replaced)")
    if target.is_symlink():
        target = target.resolve()  # replace the file the link points to; the link stays
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise unwritable(target, _unnamed(exc) if target.parent.exists() else exc) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        try:
            yield tmp_path
        except OSError as exc:
            if exc.errno is None:
                raise
            raise unwritable(target, _unnamed(exc)) from None  # e.g. a full disk: name the target, not the temporary
        if tmp_path.exists():
            # mkstemp creates 0600 files; give the final file the usual permissions (0666 & ~umask)
            os.chmod(tmp_path, 0o666 & ~_umask())
        try:
            os.replace(tmp_path, target)
        except OSError as exc:
            raise unwritable(target, _unnamed(exc)) from None
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_folder(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder beside ``path`` (hidden: ``.<name>.<random>.tmp``); on success it replaces
    ``path`` (a folder there is removed first). On an exception the temporary folder is removed and ``path`` left as
    it was; an ``OSError`` (a full disk) is one error naming ``path``, never the temporary folder, whose files the
    body writes plainly (the rename makes them appear together)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes 0700 folders; give the usual permissions
    except OSError as exc:
        raise unwritable(target, _unnamed(exc) if target.parent.exists() else exc) from None
    try:
        yield tmp
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise unwritable(target, _unnamed(exc)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike, text: str, *, compress: bool = False) -> None:
    """Write ``text`` (UTF-8) atomically; gzip it (deterministically, mtime 0) when ``compress``."""
    with atomic_path(path) as tmp:
        if compress:
            with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                gz.write(text.encode("utf-8"))
        elif tmp == Path(path) or special_file(tmp):
            with open(tmp, "w", encoding="utf-8") as fh:  # a character device: written through
                fh.write(text)
        else:
            tmp.write_text(text, encoding="utf-8")


def dumps_json(obj: Any) -> str:
    """Canonical, human-readable JSON (2-space indent, UTF-8, trailing newline); NaN is refused."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    """Write ``obj`` as canonical JSON, atomically."""
    atomic_write_text(path, dumps_json(obj))


def read_json(path: str | os.PathLike) -> Any:
    """Read a JSON file (plain or ``.gz``) with :func:`loads_json` (duplicate keys and deep nesting refused:
    :class:`InvariRankError`, a ``ValueError``)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", encoding="utf-8") as fh:
        return loads_json(fh.read(), str(p))


class _JSONError(InvariRankError, ValueError):
    """Bad JSON (also a ``ValueError``, so callers that catch malformed JSON catch it)."""


def _no_duplicates(where: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise _JSONError(f"{where}: key {key!r} appears twice in one object; expected each key once")
            out[key] = value
        return out

    return hook


def _depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (a linear scan; the C parser would recurse)."""
    depth = deepest = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', text):
        t = token.group()
        if t in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif t in "]}":
            depth -= 1
    return deepest


def loads_json(text: str, where: str = "JSON") -> Any:
    """``json.loads`` refusing duplicate keys in an object and nesting deeper than :data:`MAX_JSON_DEPTH`
    (``where``, e.g. ``FILE:LINE``, is named; raises :class:`InvariRankError`, also a ``ValueError``). Malformed
    JSON raises ``json.JSONDecodeError`` as usual."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _depth(text) > MAX_JSON_DEPTH:
        raise _JSONError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels; expected a flat record")
    return json.loads(text, object_pairs_hook=_no_duplicates(where))


def sha256_file(path: str | os.PathLike, block: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in blocks of ``block`` bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            h.update(chunk)
    return h.hexdigest()
