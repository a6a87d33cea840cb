"""The observations file: the public contract between reranking and evaluation.

One row per (query, method, presented order). JSON Lines (plain, or gzip-compressed — detected from the
content, ``.jsonl.gz`` by convention) or Parquet (``.parquet``)::

    {"schema_version": 1, "query_id": "u17", "method": "zero_shot", "permutation": 0,
     "input": ["12", "7", "B00X12"], "output": ["7", "12", "B00X12"], "relevant": ["7", "X9"]}

Fields (required unless marked optional):

- ``schema_version`` (optional on read, always written): the integer 1.
- ``query_id``: string — the query (one user's test case).
- ``method``: non-empty string — the reranking method; methods are evaluated independently.
- ``permutation``: integer >= 0 — which presented order this is (0-based). (query, method, permutation) is unique.
- ``input``: the candidate ids in the **presented** order (distinct, non-empty). Every row of one (query, method)
  presents the same set of candidates.
- ``output``: the complete ranking returned, best first — a permutation of ``input``.
- ``relevant``: the ground truth (non-empty); it may hold ids that are not candidates; duplicates collapse; it is
  the same set on every row of a query (across methods too).
- any other field (model, dataset, k, scores, passes, seconds, ...) is kept and ignored by the metrics.

Ids are strings. As a convenience, JSON **integers** given as ids (or as ``query_id``) are read as their decimal
string (``17`` → ``"17"``), so ``7`` in ``input`` and ``"7"`` in ``output`` are the same item; any other type
(float, boolean, null, list, object) is rejected. Blank lines are skipped. Every problem raises
:class:`~invarirank.errors.InvariRankError` with ``FILE:LINE: message`` (the physical, 1-based line number; for
Parquet files and in-memory rows, the 1-based row number), which the CLI prints as one line before exiting 2.

This module reads the file (:func:`read_observations`); the checks live in
:mod:`~invarirank.evaluation._observation_rows` (shared with rows given in memory) and the writer in
:mod:`~invarirank.evaluation.observation_writer`; all three public functions are importable from here.
"""

from __future__ import annotations

import gc
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._io import existing_file, path_argument
from ..errors import InvariRankError
from ._observation_rows import fail_at, rows_in_memory, validate_rows
from .observation_writer import write_observations

__all__ = ["read_observations", "write_observations"]


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook: a key given twice in one object is an error (json keeps the last one silently)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = ""
        for key, _ in pairs:  # the first key met a second time
            if key in seen:
                break
            seen.add(key)
        raise ValueError(f"key {key!r} appears twice in one object; expected each key once")
    return out


def _iter_json_lines(text: str, where: str) -> Iterable[tuple[int, Any]]:
    plain = json.JSONDecoder().scan_once  # type: ignore[attr-defined]   # the C scanner, dicts built in C
    strict = json.JSONDecoder(object_pairs_hook=_unique_keys)
    # split on "\n" only: JSON strings may legally hold U+2028 etc., which str.splitlines() would cut.
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw or raw.isspace():
            continue
        try:
            obj, end = plain(raw, 0)
            if end != len(raw) and not raw[end:].isspace():
                raise ValueError("trailing data")
            # A repeated key is an error, but the C scanner keeps the last one silently. A line with one "{" holds
            # one object, whose every key is followed by a ":"; as many ":" as keys means no key came twice.
            # Anything else (nested objects, ":" inside strings, not an object) is parsed again with the check.
            if type(obj) is not dict or raw.count("{") != 1 or raw.count(":") != len(obj):
                obj = strict.scan_once(raw, 0)[0]  # type: ignore[attr-defined]
        except RecursionError:
            fail_at(where, line, "JSON nested too deeply; expected one flat record per line")
        except (StopIteration, ValueError):
            try:  # the slow path: leading whitespace, or the precise error message
                obj = strict.decode(raw)
            except RecursionError:
                fail_at(where, line, "JSON nested too deeply; expected one flat record per line")
            except ValueError as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                col = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
                fail_at(where, line, f"malformed JSON: {msg}{col}")
        yield line, obj


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many small containers (rows hold no reference
    cycles; reference counting frees them). Saves ~25% of parsing time; the previous state is restored."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_text(p: Path) -> str:
    """The text of a plain or gzip-compressed UTF-8 file (a leading byte-order mark dropped); errors name the file."""
    data = p.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InvariRankError(f"{p}: not a readable gzip file ({exc})") from None
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark is dropped
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InvariRankError(f"{p}:{line}: not UTF-8 text ({exc.reason})") from None


def _parquet_records(p: Path) -> list[tuple[int, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        raise InvariRankError(f"{p}: reading Parquet needs pyarrow (pip install pyarrow)") from None
    try:
        table = pq.read_table(p)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise InvariRankError(f"{p}: not a readable Parquet file ({exc})") from None
    return list(enumerate(table.to_pylist(), 1))


def _is_parquet(p: Path) -> bool:
    if p.suffix.lower() == ".parquet":
        return True
    with open(p, "rb") as fh:
        return fh.read(4) == b"PAR1"


def read_observations(path: str | os.PathLike) -> list[dict]:
    """Read and validate an observations file (``.jsonl``, ``.jsonl.gz`` or ``.parquet``).

    Returns one dict per row, in file order, with ids as strings (see the module docstring for the schema and
    the checks). Raises :class:`InvariRankError` naming ``FILE:LINE`` on the first problem.

    Memory: the file is read whole, not streamed, because the metrics need every row of a query and the checks
    compare rows across the file (a query's rows need not be adjacent). The peak is about 30 MB plus six times
    the **uncompressed** size of a JSON Lines file, gzip or not (measured: 100 MB for 11.8 MB, 376 MB for 59 MB;
    a query's rows share one string object per id), on rows of K = 25; shorter rows take more for their size
    (``book/reference/benchmarks.md``). ``invarirank evaluate`` reads a JSON Lines file into integer codes
    without keeping its rows (:mod:`~invarirank.evaluation._code_reader`; at most about 70 MB plus five times, 322 MB
    for 59 MB), and falls back to this reader, about nine times, for a file it leaves to it. A larger file is split by
    query into files evaluated apart, or evaluated on a larger machine.

    Stability: full (the observations file).
    """
    p = path_argument(path, "read_observations: path", "observations file's path")
    existing_file(p, "observations file")
    with gc_paused():
        if _is_parquet(p):
            records: Iterable[tuple[int, Any]] = _parquet_records(p)
        else:
            records = _iter_json_lines(read_text(p), str(p))
        rows = validate_rows(records, str(p), copy=False)
    if not rows:
        raise InvariRankError(f"{p}: no observations (the file holds no rows)")
    return rows


def as_rows(data: Any, where: str | None = None) -> list[dict]:
    """Validated rows from an observations file's path (:func:`read_observations`), a pandas DataFrame, or an
    iterable of rows: dicts or row objects (:func:`~invarirank.evaluation._observation_rows.rows_in_memory`);
    1-based row numbers in errors."""
    if isinstance(data, (str, os.PathLike)):
        return read_observations(data)
    return rows_in_memory(data, where)
