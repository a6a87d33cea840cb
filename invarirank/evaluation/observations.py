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
"""

from __future__ import annotations

import dataclasses
import gc
import gzip
import json
import math
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..candidates import IdForms, lone_surrogate, look_alike
from ..errors import InvariRankError
from ..io import atomic_path, atomic_write_text, existing_file, path_argument

__all__ = [
    "SCHEMA_VERSION",
    "REQUIRED_FIELDS",
    "read_observations",
    "write_observations",
    "validate_rows",
    "rows_from_frame",
]

SCHEMA_VERSION = 1
REQUIRED_FIELDS = ("query_id", "method", "permutation", "input", "output", "relevant")
_ID_FIELDS = ("input", "output", "relevant")


def _fail(where: str, line: int, msg: str) -> None:
    raise InvariRankError(f"{where}:{line}: {msg}")


def _short(ids: Iterable[str], limit: int = 5) -> str:
    ids = sorted(ids)
    more = f", ... ({len(ids)} in all)" if len(ids) > limit else ""
    return ", ".join(repr(x) for x in ids[:limit]) + more


def _coerce_ids(value: Any, field: str, where: str, line: int) -> list[str]:
    """The list of string ids of ``field`` (integers become their decimal string); raises on anything else."""
    if not isinstance(value, (list, tuple)):
        if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 1:
            value = value.tolist()
        else:
            _fail(where, line, f"field {field!r} must be a list of item ids (strings), got {type(value).__name__}")
    out = list(value)
    for n, x in enumerate(out):
        if type(x) is not str:
            if isinstance(x, str):  # numpy.str_ and other str subclasses (pandas / numpy string columns)
                out[n] = str(x)
            elif _integer(x):
                out[n] = str(int(x))
            else:
                _fail(
                    where,
                    line,
                    f"field {field!r}: item id {x!r} at index {n} must be a string "
                    f"(or an integer), got {type(x).__name__}",
                )
    return out


def _integer(x: Any) -> bool:
    """Whether ``x`` is an integer id (Python or numpy integer; never a boolean)."""
    return (isinstance(x, int) and not isinstance(x, bool)) or (
        type(x).__module__ == "numpy" and getattr(getattr(x, "dtype", None), "kind", "") in "iu"
    )


def _valid_text(where: str, line: int, field: str, values: Iterable[str]) -> None:
    """Refuse a lone surrogate in ``values`` (the strings of ``field``), naming the field and the value escaped."""
    for v in values:
        if lone_surrogate(v):
            _fail(where, line, f"field {field!r}: {ascii(v)} holds a lone surrogate (not valid Unicode text)")


def _one_form(ids: list[str], where: str, line: int, what: str) -> None:
    """Two ids that differ only by Unicode normalisation print alike: an error showing both escaped (the
    candidates file's rule, :func:`invarirank.candidates.look_alike`)."""
    pair = look_alike(ids)
    if pair is not None:
        _fail(
            where,
            line,
            f"{what}: item ids {ascii(pair[0])} and {ascii(pair[1])} differ only by Unicode "
            f"normalisation (they print alike); expected one form (NFC) for one item",
        )


def validate_rows(records: Iterable[tuple[int, Any]], where: str, *, copy: bool = True) -> list[dict]:
    """Validate ``(line_number, record)`` pairs; return the rows as dicts with ids as strings.

    ``record`` is a parsed JSON value (anything: non-objects are rejected). Checks, in file order (the first
    problem raises, naming ``where:line``): object; required fields and their types; ``schema_version`` 1 when
    present; ``input`` non-empty and without repeats; ``output`` a permutation of ``input``; ``relevant``
    non-empty; a repeated (query, method, permutation); a ``relevant`` set that differs from the query's earlier
    lines; an ``input`` set that differs from the earlier lines of the same (query, method). With ``copy=False``
    the records themselves are normalised in place and returned (for freshly parsed files).
    """
    rows: list[dict] = []
    seen_key: dict[tuple[str, str, int], int] = {}
    relevant_of: dict[str, tuple[frozenset, int, list]] = {}
    input_of: dict[tuple[str, str], tuple[frozenset, int]] = {}
    lists_of: dict[str, tuple[frozenset, str, int]] = {}
    qid_forms = IdForms()
    for line, rec in records:
        if type(rec) is not dict:
            _fail(where, line, f"expected a JSON object, got {type(rec).__name__}")
        try:
            qid, method, perm = rec["query_id"], rec["method"], rec["permutation"]
            inp, out, rel = rec["input"], rec["output"], rec["relevant"]
        except KeyError:
            missing = next(f for f in REQUIRED_FIELDS if f not in rec)
            _fail(where, line, f"missing field {missing!r} (required: {', '.join(REQUIRED_FIELDS)})")
        if "schema_version" in rec:
            version = rec["schema_version"]
            if version != SCHEMA_VERSION or isinstance(version, bool):
                _fail(where, line, f"schema_version {version!r} is not supported, expected {SCHEMA_VERSION}")
        if type(qid) is not str:
            if isinstance(qid, str):  # numpy.str_ and other str subclasses
                qid = str(qid)
            elif _integer(qid):
                qid = str(int(qid))
            else:
                _fail(where, line, f"field 'query_id' must be a string, got {type(qid).__name__}")
        if not qid:
            _fail(where, line, "field 'query_id' is empty, expected a non-empty string")
        if type(method) is not str and isinstance(method, str):
            method = str(method)
        if type(method) is not str or not method:
            _fail(where, line, f"field 'method' must be a non-empty string, got {method!r}")
        if type(perm) is not int or perm < 0:
            if (
                type(perm).__module__ == "numpy"
                and getattr(perm, "dtype", None) is not None
                and perm.dtype.kind in "iu"
                and perm >= 0
            ):
                perm = int(perm)
            else:
                _fail(where, line, f"field 'permutation' must be an integer >= 0, got {perm!r}")
        try:
            "".join(inp)  # C-speed check that every id is a string (fails on non-lists too)
            "".join(out)
            "".join(rel)
            if type(inp) is not list or type(out) is not list or type(rel) is not list:
                raise TypeError
        except TypeError:
            inp = _coerce_ids(inp, "input", where, line)
            out = _coerce_ids(out, "output", where, line)
            rel = _coerce_ids(rel, "relevant", where, line)
        if not inp:
            _fail(where, line, "field 'input' is empty, expected at least one candidate id")
        if not out:
            _fail(where, line, "field 'output' is empty, expected a permutation of 'input'")
        if not rel:
            _fail(where, line, "field 'relevant' is empty, expected at least one ground-truth id")
        in_set = frozenset(inp)
        if len(in_set) != len(inp):
            dup = sorted({x for x in inp if inp.count(x) > 1})
            _fail(where, line, f"field 'input' repeats item id(s) {_short(dup)}, expected distinct ids")
        if len(out) != len(inp) or in_set != frozenset(out):  # (input is distinct, so out is too)
            out_set = set(out)
            absent, extra = in_set - out_set, out_set - in_set
            detail = []
            if absent:
                detail.append(f"missing {_short(absent)}")
            if extra:
                detail.append(f"not in input: {_short(extra)}")
            if len(out_set) != len(out):
                dup = sorted({x for x in out if out.count(x) > 1})
                detail.append(f"repeats {_short(dup)}")
            _fail(
                where,
                line,
                f"field 'output' is not a permutation of 'input' ({'; '.join(detail)}; {len(out)} ids vs {len(inp)})",
            )
        key = (qid, method, perm)
        first = seen_key.setdefault(key, line)
        if first != line:
            _fail(
                where,
                line,
                f"repeated (query_id, method, permutation) = ({qid!r}, {method!r}, {perm}), first seen on line {first}",
            )
        prev = relevant_of.get(qid)
        if prev is None:
            relevant_of[qid] = (frozenset(rel), line, rel)
        elif rel != prev[2] and prev[0] != frozenset(rel):  # (same list: same set, no set needed)
            _fail(
                where,
                line,
                f"field 'relevant' of query {qid!r} differs from line {prev[1]} "
                f"(the ground truth must be the same set on every line of a query)",
            )
        seen_input = input_of.get((qid, method))
        if seen_input is None:
            input_of[(qid, method)] = (in_set, line)
        elif seen_input[0] != in_set:
            _fail(
                where,
                line,
                f"field 'input' of query {qid!r}, method {method!r} is a different set of "
                f"candidates than on line {seen_input[1]} "
                f"(every presented order must hold the same items)",
            )
        other = lists_of.setdefault(qid, (in_set, method, line))
        if input_of[(qid, method)][1] == line:  # the first line of this (query, method)
            _valid_text(where, line, "method", [method])
        if other[2] == line:  # the query's first line: its ids and its name in one form each
            _valid_text(where, line, "query_id", [qid])
            _valid_text(where, line, "input", inp)
            _valid_text(where, line, "relevant", rel)
            _one_form([*inp, *rel], where, line, f"the ids of query {ascii(qid)} (input and relevant)")
            twin = qid_forms.twin(qid)
            if twin is not None:
                _fail(
                    where,
                    line,
                    f"query ids {ascii(twin)} and {ascii(qid)} print alike (they differ only by "
                    f"Unicode normalisation); expected one form (NFC) for one query",
                )
        if other[0] != in_set:  # methods are compared paired over queries: the same candidates
            _fail(
                where,
                line,
                f"query {qid!r}: method {method!r} ranks other candidates ({len(in_set)}) than method "
                f"{other[1]!r} on line {other[2]} ({len(other[0])}); methods of one query are compared "
                f"paired and must rank the same candidate list",
            )
        row = dict(rec) if copy else rec
        row["query_id"], row["method"], row["permutation"] = qid, method, perm
        row["input"], row["output"], row["relevant"] = inp, out, rel
        rows.append(row)
    return rows


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
    decoder = json.JSONDecoder(object_pairs_hook=_unique_keys)
    scan = decoder.scan_once  # type: ignore[attr-defined]   # the C scanner without json.loads' Python wrapper
    # split on "\n" only: JSON strings may legally hold U+2028 etc., which str.splitlines() would cut.
    for line, raw in enumerate(text.split("\n"), 1):
        if not raw or raw.isspace():
            continue
        try:
            obj, end = scan(raw, 0)
            if end != len(raw) and not raw[end:].isspace():
                raise ValueError("trailing data")
        except RecursionError:
            _fail(where, line, "JSON nested too deeply; expected one flat record per line")
        except (StopIteration, ValueError):
            try:  # the slow path: leading whitespace, or the precise error message
                obj = decoder.decode(raw)
            except RecursionError:
                _fail(where, line, "JSON nested too deeply; expected one flat record per line")
            except ValueError as exc:
                msg = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                col = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
                _fail(where, line, f"malformed JSON: {msg}{col}")
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

    Stability: full (the package's front door).
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


def rows_from_frame(frame: Any) -> list[tuple[int, Any]]:
    """``(row_number, dict)`` pairs of a pandas DataFrame (array cells become lists; 1-based row numbers)."""
    records = frame.to_dict("records")
    out = []
    for n, rec in enumerate(records, 1):
        for f in _ID_FIELDS:
            v = rec.get(f)
            if v is not None and not isinstance(v, (list, str)) and hasattr(v, "tolist"):
                rec[f] = v.tolist()
        for f in ("permutation",):
            v = rec.get(f)
            if v is not None and type(v).__module__ == "numpy":
                rec[f] = v.item()
        out.append((n, rec))
    return out


def _record(row: Any) -> Any:
    """A row as a JSON object: dicts as they are, a row object through its ``to_json()`` (e.g. the runner's
    ``ObservationRow``) or, for another dataclass, its fields; anything else is left for the check to reject."""
    if type(row) is dict:
        return row
    to_json = getattr(row, "to_json", None)
    if callable(to_json):
        return to_json()
    if dataclasses.is_dataclass(row) and not isinstance(row, type):
        return dataclasses.asdict(row)
    return row


def as_rows(data: Any, where: str | None = None) -> list[dict]:
    """Validated rows from a path, a pandas DataFrame, or an iterable of rows: dicts or row objects (see
    :func:`_record`); 1-based row numbers in errors."""
    if isinstance(data, (str, os.PathLike)):
        return read_observations(data)
    pd = sys.modules.get("pandas")
    if data is None or isinstance(data, (bytes, int, float, Mapping)) or not hasattr(data, "__iter__"):
        raise InvariRankError(
            f"{where or 'evaluate'}: data = {type(data).__name__}, expected an observations file's path, a pandas "
            f"DataFrame or a list of rows"
        )
    if pd is not None and isinstance(data, pd.DataFrame):
        rows = validate_rows(rows_from_frame(data), where or "<DataFrame>")
    else:
        rows = validate_rows(((n, _record(r)) for n, r in enumerate(data, 1)), where or "<rows>")
    if not rows:
        raise InvariRankError(f"{where or '<rows>'}: no observations (no rows given)")
    return rows


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

    Stability: full (the package's front door).

    The format follows the suffix: ``.parquet`` → Parquet; ``.gz`` → gzip-compressed JSON Lines
    (deterministic: mtime 0); anything else → JSON Lines. Every row carries ``schema_version`` 1 first, then the
    required fields, then the optional ones in their given order. Same rows → byte-identical file.
    """
    p = path_argument(path, "write_observations: path", "observations file's path")
    if isinstance(rows, (str, os.PathLike)):
        raise InvariRankError(f"write_observations: rows = {str(rows)!r}, expected the rows to write, not a path")
    valid = as_rows(rows, where=f"{p} (rows to write)")
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
