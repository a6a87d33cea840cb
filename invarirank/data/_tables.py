"""Low-level readers for delimited text files, with one-line errors that name the file, the line or
column, and what was expected (``InvariRankError``).

Delimited files are parsed by pyarrow (fast enough for MovieLens-32M's 32 M lines) with every column
read as text; numeric columns are then converted by :func:`numeric_column`, which reports the first
offending line when a value is not a number. Line numbers are 1-based physical lines, assuming the
file has no blank lines before the offending row (pyarrow skips blank lines).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..errors import InvariRankError


def require_file(path: Path, what: str) -> Path:
    """Check that ``path`` is a non-empty regular file; ``what`` says what it should contain."""
    path = Path(path)
    if not path.exists():
        raise InvariRankError(f"{path}: file not found; expected {what}")
    if not path.is_file():
        raise InvariRankError(f"{path}: not a regular file; expected {what}")
    if path.stat().st_size == 0:
        raise InvariRankError(f"{path}: file is empty; expected {what}")
    return path


def decode_text(data: bytes, path: Path, encodings: Sequence[str]) -> str:
    """Decode ``data`` with the first encoding that works (e.g. UTF-8, then latin-1)."""
    for enc in encodings:
        try:
            return data.decode(enc)
        except UnicodeDecodeError:
            continue
    raise InvariRankError(f"{path}: cannot decode the file as {' or '.join(encodings)}")


def read_header(
    path: Path, delimiter: str, encodings: Sequence[str] = ("utf-8", "latin-1"), quote: bool = True
) -> list[str]:
    """The field names on the first line of ``path``."""
    with open(path, "rb") as fh:
        first = fh.readline()
    text = decode_text(first, path, encodings).lstrip("\ufeff").rstrip("\r\n")
    if not text.strip():
        raise InvariRankError(f"{path}, line 1: empty header line; expected the column names")
    if quote:
        return [f.strip() for f in next(csv.reader([text], delimiter=delimiter))]
    return [f.strip() for f in text.split(delimiter)]


def _locate_field_count_error(
    lines: Iterable[str], delimiter: str, n_fields: int, quote: bool, first_line: int
) -> tuple[int, int] | None:
    """(line number, field count) of the first non-blank line whose field count is not ``n_fields``."""
    for offset, line in enumerate(lines):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        fields = next(csv.reader([line], delimiter=delimiter)) if quote else line.split(delimiter)
        if len(fields) != n_fields:
            return first_line + offset, len(fields)
    return None


def read_delimited(
    source: Path,
    *,
    delimiter: str,
    column_names: Sequence[str],
    header: bool,
    include: Sequence[str],
    encodings: Sequence[str] = ("utf-8", "latin-1"),
    quote: bool = True,
    data: bytes | None = None,
    shown_delimiter: str | None = None,
) -> pa.Table:
    """Read a delimited file into a table of string columns named ``column_names``.

    ``header``: the first line holds the names (they must equal ``column_names`` in number; the caller
    has checked them with :func:`read_header`). ``include``: the columns to keep. ``data``: the file's
    bytes after a pre-processing step (e.g. ``::`` replaced by a tab), read instead of the file.
    """
    path = Path(source)
    n_fields = len(column_names)
    last_exc: Exception | None = None
    for enc in encodings:
        read_opts = pacsv.ReadOptions(
            column_names=list(column_names),
            skip_rows=1 if header else 0,
            encoding=enc.replace("-", ""),
            block_size=1 << 24,
        )
        parse_opts = pacsv.ParseOptions(
            delimiter=delimiter, quote_char='"' if quote else False, newlines_in_values=False
        )
        conv_opts = pacsv.ConvertOptions(
            column_types={c: pa.string() for c in column_names},
            include_columns=list(include),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        )
        stream = pa.BufferReader(data) if data is not None else str(path)
        try:
            return pacsv.read_csv(stream, read_options=read_opts, parse_options=parse_opts, convert_options=conv_opts)
        except pa.ArrowInvalid as exc:
            last_exc = exc
            message = str(exc)
            if "UTF8" in message or "utf8" in message.lower():
                continue  # try the next encoding
            break
    # locate the offending line for a clear message
    message = str(last_exc).splitlines()[0] if last_exc else "unknown error"
    raw = data if data is not None else path.read_bytes()
    text = decode_text(raw, path, ("utf-8", "latin-1"))
    lines = io.StringIO(text)
    if header:
        lines.readline()
    found = _locate_field_count_error(lines, delimiter, n_fields, quote, 2 if header else 1)
    sep = shown_delimiter or delimiter
    if found:
        line, got = found
        raise InvariRankError(
            f"{path}, line {line}: expected {n_fields} fields separated by {sep!r} "
            f"({', '.join(column_names)}), found {got}"
        )
    if "UTF8" in message or "utf8" in message.lower():
        raise InvariRankError(f"{path}: cannot decode the file as {' or '.join(encodings)}")
    raise InvariRankError(f"{path}: cannot parse as {sep!r}-separated text: {message}")


def numeric_column(
    table: pa.Table, name: str, *, path: Path, shown_name: str, first_line: int, kind: str
) -> np.ndarray:
    """Convert a string column to float64 (``kind="float"``) or int64 (``kind="int"``).

    Integers may be written as integral floats (``"881250949.0"``); the value must be finite.
    ``first_line``: the physical line number of row 0 (2 with a header line, else 1).
    """
    column = table.column(name)
    if column.num_chunks != 1:
        column = column.combine_chunks()
    else:
        column = column.chunk(0)
    trimmed = pc.utf8_trim_whitespace(column)
    try:
        values = pc.cast(trimmed, pa.float64()).to_numpy(zero_copy_only=False)
        bad = ~np.isfinite(values)
        if kind == "int":
            bad |= values != np.floor(values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = None
        bad = None
    if values is None or bad.any():
        if bad is None:
            # find the first string that does not parse as a number
            py = trimmed.to_pylist()
            bad = np.zeros(len(py), dtype=bool)
            for i, v in enumerate(py):
                try:
                    f = float(v)
                    ok = np.isfinite(f) and (kind != "int" or f == int(f))
                except (TypeError, ValueError):
                    ok = False
                if not ok:
                    bad[i] = True
                    break
        i = int(np.argmax(bad))
        value = trimmed[i].as_py()
        expected = "an integer" if kind == "int" else "a number"
        raise InvariRankError(
            f"{path}, line {first_line + i}, column {shown_name!r}: expected {expected}, found {value!r}"
        )
    if kind == "int":
        if values.size and (np.abs(values).max() >= 2**53):
            # beyond exact float range: parse as integers directly
            return pc.cast(trimmed, pa.int64()).to_numpy(zero_copy_only=False)
        return values.astype(np.int64)
    return values.astype(np.float64, copy=False)
