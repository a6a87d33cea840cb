"""Executing the book's notebooks with papermill, and their fingerprints.

A notebook whose fingerprint (its source, its parameters, the files of its run(s) and the package's source) did
not change since its last successful execution is not executed again. The output only appears once the
execution succeeded; a failed notebook's partial output goes to ``<build>/_failed/`` and never reaches the book.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._io import unwritable
from ..errors import RunFailed


def check_kernel(name: str) -> None:
    """Raise :class:`~invarirank.errors.InvariRankError` unless a Jupyter kernel ``name`` is installed here:
    ``invarirank book`` checks it before its first page, rather than failing on papermill's error after some pages
    have been executed."""
    from ..errors import InvariRankError

    try:
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        raise InvariRankError("executing the notebooks needs papermill and jupyter_client (make setup)") from None
    specs = KernelSpecManager().find_kernel_specs()
    if name not in specs:
        raise InvariRankError(
            f"--kernel {name!r}: no such Jupyter kernel here; expected one of {', '.join(sorted(specs)) or '(none)'}"
        )


def fingerprint(*parts: Any, files: Iterable[Path] = ()) -> str:
    """sha256 over ``parts`` (as JSON) and the names and bytes of ``files`` (a missing file counts as missing)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\0")
    for f in sorted({Path(x) for x in files}):
        h.update(str(f.name).encode("utf-8"))
        h.update(f.read_bytes() if f.is_file() else b"<missing>")
    return h.hexdigest()


def package_files() -> list[Path]:
    """The package's Python sources (a change re-executes every notebook)."""
    pkg = Path(__file__).resolve().parents[1]
    return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)


def _stored_fingerprint(path: Path) -> str | None:
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (nb.get("metadata", {}).get("invarirank") or {}).get("fingerprint")


def execute_notebook(
    source: str | os.PathLike,
    output: str | os.PathLike,
    parameters: Mapping[str, Any],
    *,
    title: str | None = None,
    fingerprint: str | None = None,
    force: bool = False,
    cwd: str | os.PathLike | None = None,
    kernel: str = "python3",
    failed_dir: str | os.PathLike | None = None,
) -> bool:
    """Execute ``source`` with papermill into ``output``; return False when skipped (same fingerprint).

    ``title`` replaces the first Markdown heading (papermill cannot parameterise Markdown). The output only
    appears once the execution succeeded (written to a temporary file and renamed); on failure the partial
    notebook goes to ``failed_dir`` and :class:`~invarirank.errors.RunFailed` names the notebook and the error.
    """
    import nbformat
    import papermill

    src, out = Path(source), Path(output)
    if fingerprint and not force and out.is_file() and _stored_fingerprint(out) == fingerprint:
        print(f"grid: {out} is up to date", file=sys.stderr)
        return False
    nb = nbformat.read(src, as_version=4)
    if title:
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
                lines = cell.source.lstrip().splitlines()
                cell.source = "\n".join([f"# {title}", *lines[1:]])
                break
    nb.metadata.setdefault("invarirank", {})
    nb.metadata["invarirank"]["fingerprint"] = fingerprint
    nb.metadata["invarirank"]["parameters"] = json.loads(json.dumps(dict(parameters), default=str))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_in = out.with_name(f".{out.stem}.in.ipynb")
    tmp_out = out.with_name(f".{out.stem}.tmp.ipynb")
    nbformat.write(nb, tmp_in)
    print(f"book: executing {src.name} -> {out}", file=sys.stderr, flush=True)
    try:
        papermill.execute_notebook(
            str(tmp_in),
            str(tmp_out),
            parameters=dict(parameters),
            kernel_name=kernel,
            cwd=str(cwd) if cwd else None,
            progress_bar=False,
            log_output=False,
            request_save_on_cell_execute=False,
        )
    except Exception as exc:  # papermill raises PapermillExecutionError (or kernel errors)
        failed = Path(failed_dir) if failed_dir else out.parent / "_failed"
        failed.mkdir(parents=True, exist_ok=True)
        if tmp_out.is_file():
            os.replace(tmp_out, failed / out.name)
        out.unlink(missing_ok=True)
        ename = getattr(exc, "ename", type(exc).__name__)
        evalue = str(getattr(exc, "evalue", exc)).strip().splitlines()
        raise RunFailed(
            f"notebook {src} ({out.name}) failed: {ename}: "
            f"{evalue[-1] if evalue else ''} (partial output: {failed / out.name})"
        ) from None
    finally:
        tmp_in.unlink(missing_ok=True)
    try:
        _hide_injected_parameters(tmp_out)
        os.replace(tmp_out, out)
    except OSError as exc:  # a full disk: name the page, not its hidden temporary file
        tmp_out.unlink(missing_ok=True)
        raise unwritable(out, type(exc)(exc.errno, exc.strerror)) from None
    return True


def _hide_injected_parameters(path: Path) -> None:
    """Collapse papermill's injected-parameters cell in the book (tag ``hide-cell``)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "hide-cell" not in tags:
            cell.metadata["tags"] = [*tags, "hide-cell"]
    nbformat.write(nb, path)
