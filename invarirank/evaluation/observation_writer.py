"""Writing an observations file: rows validated by the reader's rules, then written atomically.

The format and its schema are stated in :mod:`invarirank.evaluation.observations`; the rows are checked with
:func:`~invarirank.evaluation._observation_rows.rows_in_memory` (the rules the reader applies), so a file written
here reads back to the same rows.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .._io import atomic_path, atomic_write_text, path_argument
from ..errors import InvariRankError
from ._observation_rows import REQUIRED_FIELDS, SCHEMA_VERSION, rows_in_memory

__all__ = ["write_observations"]


def _plain(value: Any) -> Any:
    """JSON-safe copy of an optional field: numpy values become Python ones, non-finite floats become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (str, int, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _plain(value.tolist())
    raise InvariRankError(
        f"observations: optional field value {value!r} ({type(value).__name__}) cannot be written as JSON"
    )


def _ordered(row: dict) -> dict:
    out = {"schema_version": SCHEMA_VERSION}
    for f in REQUIRED_FIELDS:
        out[f] = row[f]
    for k, v in row.items():
        if k not in out:
            out[k] = _plain(v)
    return out


def write_observations(path: str | os.PathLike, rows: Iterable[Mapping] | Any) -> Path:
    """Validate ``rows`` (dicts, row objects such as :func:`invarirank.rerank_query`'s, or a pandas DataFrame) and
    write them atomically as an observations file.

    Stability: full (the observations file).

    The format follows the suffix: ``.parquet`` → Parquet; ``.gz`` → gzip-compressed JSON Lines
    (deterministic: mtime 0); anything else → JSON Lines. Every row carries ``schema_version`` 1 first, then the
    required fields, then the optional ones in their given order. Same rows → byte-identical file.
    """
    p = path_argument(path, "write_observations: path", "observations file's path")
    if isinstance(rows, (str, os.PathLike)):
        raise InvariRankError(f"write_observations: rows = {str(rows)!r}, expected the rows to write, not a path")
    valid = rows_in_memory(rows, where=f"{p} (rows to write)")
    ordered = [_ordered(r) for r in valid]
    if p.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(ordered)
        with atomic_path(p) as tmp:
            pq.write_table(table, tmp)
        return p
    text = "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in ordered)
    atomic_write_text(p, text, compress=p.suffix.lower() == ".gz")
    return p
