"""Validated observation rows: the checks of the observations file's schema, whatever the rows came from.

The schema and the checks are stated in :mod:`invarirank.evaluation.observations` (the file's contract); here they
are applied to ``(line_number, record)`` pairs — parsed JSON lines, Parquet rows, a pandas DataFrame's rows or
rows given in memory — so that the reader, the writer and :func:`invarirank.evaluate` share one rule and one error
form, ``WHERE:LINE: message`` (:class:`~invarirank.errors.InvariRankError`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvariRankError

if TYPE_CHECKING:
    from ..candidates import IdForms

SCHEMA_VERSION = 1
REQUIRED_FIELDS = ("query_id", "method", "permutation", "input", "output", "relevant")
_ID_FIELDS = ("input", "output", "relevant")


def fail_at(where: str, line: int, msg: str) -> None:
    """Raise the error of line ``line`` (1-based) of ``where``: ``WHERE:LINE: msg``."""
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
            fail_at(where, line, f"field {field!r} must be a list of item ids (strings), got {type(value).__name__}")
    out = list(value)
    for n, x in enumerate(out):
        if type(x) is not str:
            if isinstance(x, str):  # numpy.str_ and other str subclasses (pandas / numpy string columns)
                out[n] = str(x)
            elif _integer(x):
                out[n] = str(int(x))
            else:
                fail_at(
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
    from ..candidates import lone_surrogate  # (here: the fast reader's files need none of the id rules' module)

    for v in values:
        if lone_surrogate(v):
            fail_at(where, line, f"field {field!r}: {ascii(v)} holds a lone surrogate (not valid Unicode text)")


def _one_form(ids: list[str], where: str, line: int, what: str) -> None:
    """Two ids that differ only by Unicode normalisation print alike: an error showing both escaped (the
    candidates file's rule, :func:`invarirank.candidates.look_alike`)."""
    from ..candidates import look_alike

    pair = look_alike(ids)
    if pair is not None:
        fail_at(
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
    ids_of: dict[str, dict[str, str]] = {}
    lists_of: dict[str, tuple[frozenset, str, int]] = {}
    from ..candidates import IdForms  # (imported here: see _valid_text)

    qid_forms = IdForms()
    for line, rec in records:
        if type(rec) is not dict:
            fail_at(where, line, f"expected a JSON object, got {type(rec).__name__}")
        try:
            qid, method, perm = rec["query_id"], rec["method"], rec["permutation"]
            inp, out, rel = rec["input"], rec["output"], rec["relevant"]
        except KeyError:
            missing = next(f for f in REQUIRED_FIELDS if f not in rec)
            fail_at(where, line, f"missing field {missing!r} (required: {', '.join(REQUIRED_FIELDS)})")
        if "schema_version" in rec:
            version = rec["schema_version"]
            if version != SCHEMA_VERSION or isinstance(version, bool):
                fail_at(where, line, f"schema_version {version!r} is not supported, expected {SCHEMA_VERSION}")
        if type(qid) is not str:
            if isinstance(qid, str):  # numpy.str_ and other str subclasses
                qid = str(qid)
            elif _integer(qid):
                qid = str(int(qid))
            else:
                fail_at(where, line, f"field 'query_id' must be a string, got {type(qid).__name__}")
        if not qid:
            fail_at(where, line, "field 'query_id' is empty, expected a non-empty string")
        if type(method) is not str and isinstance(method, str):
            method = str(method)
        if type(method) is not str or not method:
            fail_at(where, line, f"field 'method' must be a non-empty string, got {method!r}")
        if type(perm) is not int or perm < 0:
            if (
                type(perm).__module__ == "numpy"
                and getattr(perm, "dtype", None) is not None
                and perm.dtype.kind in "iu"
                and perm >= 0
            ):
                perm = int(perm)
            else:
                fail_at(where, line, f"field 'permutation' must be an integer >= 0, got {perm!r}")
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
            fail_at(where, line, "field 'input' is empty, expected at least one candidate id")
        if not out:
            fail_at(where, line, "field 'output' is empty, expected a permutation of 'input'")
        if not rel:
            fail_at(where, line, "field 'relevant' is empty, expected at least one ground-truth id")
        in_set = frozenset(inp)
        if len(in_set) != len(inp):
            dup = sorted({x for x in inp if inp.count(x) > 1})
            fail_at(where, line, f"field 'input' repeats item id(s) {_short(dup)}, expected distinct ids")
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
            fail_at(
                where,
                line,
                f"field 'output' is not a permutation of 'input' ({'; '.join(detail)}; {len(out)} ids vs {len(inp)})",
            )
        key = (qid, method, perm)
        first = seen_key.setdefault(key, line)
        if first != line:
            fail_at(
                where,
                line,
                f"repeated (query_id, method, permutation) = ({qid!r}, {method!r}, {perm}), first seen on line {first}",
            )
        prev = relevant_of.get(qid)
        if prev is None:
            relevant_of[qid] = (frozenset(rel), line, rel)
        elif rel != prev[2] and prev[0] != frozenset(rel):  # (same list: same set, no set needed)
            fail_at(
                where,
                line,
                f"field 'relevant' of query {qid!r} differs from line {prev[1]} "
                f"(the ground truth must be the same set on every line of a query)",
            )
        seen_input = input_of.get((qid, method))
        if seen_input is not None:  # a later line of this (query, method): the same set as its first line, which
            if seen_input[0] != in_set:  # was checked against the query's other methods (so this one need not be)
                fail_at(
                    where,
                    line,
                    f"field 'input' of query {qid!r}, method {method!r} is a different set of "
                    f"candidates than on line {seen_input[1]} "
                    f"(every presented order must hold the same items)",
                )
        else:
            input_of[(qid, method)] = (in_set, line)
            _first_line(where, line, qid, method, inp, rel, in_set, lists_of, qid_forms)
        # One string object per id of a query: a parsed file holds a new copy of an id at each occurrence (about
        # 55 bytes each, 3 × K a row); sharing them cuts the rows' memory about threefold, and later lookups hash
        # and compare identical objects. (Every id of the row is one of the query's: the checks above.)
        ids = ids_of.get(qid)
        if ids is None:
            ids = ids_of[qid] = dict(zip(inp, inp))
            for x in rel:
                ids.setdefault(x, x)
        else:
            get = ids.__getitem__
            inp, out, rel = list(map(get, inp)), list(map(get, out)), list(map(get, rel))
        row = dict(rec) if copy else rec
        row["query_id"], row["method"], row["permutation"] = qid, method, perm
        row["input"], row["output"], row["relevant"] = inp, out, rel
        rows.append(row)
    return rows


def _first_line(
    where: str,
    line: int,
    qid: str,
    method: str,
    inp: list[str],
    rel: list[str],
    in_set: frozenset,
    lists_of: dict[str, tuple[frozenset, str, int]],
    qid_forms: IdForms,
) -> None:
    """The checks of a (query, method)'s first line: its method's name, and on the query's first line its ids and
    name in one form each; its candidates the same as the query's other methods' (``lists_of``: the query's first
    line's set, method and line number, recorded here)."""
    _valid_text(where, line, "method", [method])
    other = lists_of.setdefault(qid, (in_set, method, line))
    if other[2] == line:  # the query's first line
        _valid_text(where, line, "query_id", [qid])
        _valid_text(where, line, "input", inp)
        _valid_text(where, line, "relevant", rel)
        _one_form([*inp, *rel], where, line, f"the ids of query {ascii(qid)} (input and relevant)")
        twin = qid_forms.twin(qid)
        if twin is not None:
            fail_at(
                where,
                line,
                f"query ids {ascii(twin)} and {ascii(qid)} print alike (they differ only by "
                f"Unicode normalisation); expected one form (NFC) for one query",
            )
    if other[0] != in_set:  # methods are compared paired over queries: the same candidates
        fail_at(
            where,
            line,
            f"query {qid!r}: method {method!r} ranks other candidates ({len(in_set)}) than method "
            f"{other[1]!r} on line {other[2]} ({len(other[0])}); methods of one query are compared "
            f"paired and must rank the same candidate list",
        )


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


def rows_in_memory(data: Any, where: str | None = None) -> list[dict]:
    """Validated rows from a pandas DataFrame or an iterable of rows: dicts or row objects (see :func:`_record`);
    1-based row numbers in errors. (A path is read by :func:`invarirank.evaluation.observations.as_rows`.)"""
    pd = sys.modules.get("pandas")
    if (
        data is None
        or isinstance(data, (str, os.PathLike, bytes, int, float, Mapping))
        or not hasattr(data, "__iter__")
    ):
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
