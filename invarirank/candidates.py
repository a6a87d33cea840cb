"""The candidates file: the documented artefact between the first stage and the reranker.

JSON Lines, one line per query, every line carrying ``schema_version``::

    {"schema_version": 1, "query_id": "u17", "user_id": "17", "split": "test",
     "candidates": [{"item_id": "50", "title": "Star Wars", "year": 1977,
                     "genres": ["Action", "Sci-Fi"], "score": 4.31}, ...],
     "ground_truth": ["50", "181"],
     "history": [{"item_id": "1", "title": "Toy Story", "year": 1995,
                  "genres": ["Animation"], "rating": 5.0}, ...]}

``candidates`` are in retrieval order (best first; ``score`` is the first-stage score and optional);
``history`` is newest first; ``year`` may be null; ``genres`` holds genres (MovieLens) or categories
(Amazon). Users may write this file themselves to rerank their own candidates
(``invarirank rerank --candidates FILE``).

The fields are closed: a key this schema does not name (a misspelt ``histroy`` or ``genre``) is an error naming the
line and the key, never silently an empty history or no genres. Free data goes under ``extra`` (any JSON value), on
a line, a candidate or a history entry; it is read and ignored. A key given twice in one object is an error too.

The file may be gzip-compressed (detected from its content) and may start with a UTF-8 byte-order mark, as the
observations file may. Text with a lone surrogate (a ``"\\ud800"`` escape: not Unicode) is refused at reading,
naming the field.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import json
import math
import os
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ._io import atomic_write_text, existing_file, loads_json, path_argument
from .errors import InvariRankError
from .types import HistoryEntry, Item, Query

__all__ = ["read_candidates"]

SCHEMA_VERSION = 1
#: the fields of a line, of a candidate and of a history entry (``extra``: free data, ignored)
LINE_FIELDS = frozenset(
    {"schema_version", "query_id", "user_id", "split", "candidates", "ground_truth", "history", "extra"}
)
ITEM_FIELDS = frozenset({"item_id", "title", "year", "genres", "extra"})
CANDIDATE_FIELDS = ITEM_FIELDS | {"score"}
HISTORY_FIELDS = ITEM_FIELDS | {"rating"}


def query_to_json(query: Query) -> dict:
    """The JSON object of one candidates-file line."""
    cands = []
    for i, item in enumerate(query.candidates):
        d = item.to_json()
        if query.candidate_scores:
            d["score"] = float(query.candidate_scores[i])
        cands.append(d)
    # a history entry without a rating (implicit feedback) is written without the field
    hist = [{**h.item.to_json(), **({} if h.rating is None else {"rating": float(h.rating)})} for h in query.history]
    return {
        "schema_version": SCHEMA_VERSION,
        "query_id": query.query_id,
        "user_id": query.user_id,
        "split": query.split,
        "candidates": cands,
        "ground_truth": list(query.ground_truth),
        "history": hist,
    }


def queries_sha256(queries: Iterable[Query]) -> str:
    """sha256 over the queries' candidates-file JSON (keys sorted, one line each, in the given order)."""
    h = hashlib.sha256()
    for q in queries:
        h.update(json.dumps(query_to_json(q), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


class _Bad(Exception):
    """A field of one line is wrong (the message, without the file and line)."""


def lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone UTF-16 surrogate (JSON's ``"\\ud800"`` escape decodes to one): it is not
    Unicode text and cannot be written as UTF-8, so a file holding one would fail only when results are written.
    The one rule of the candidates and observations readers, which refuse such text at reading."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _text(value: str, field: str) -> str:
    """``value``, or an error naming ``field`` when it holds a lone surrogate (:func:`lone_surrogate`)."""
    if lone_surrogate(value):
        raise _Bad(f"field {field!r} = {ascii(value)} holds a lone surrogate (not valid Unicode text)")
    return value


def _id(value: Any, field: str) -> str:
    """An id: a string, or a JSON integer read as its decimal string (as the observations reader does)."""
    if type(value) is str and value:
        return _text(value, field)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _Bad(f"field {field!r} = {_shown(value)}, expected an id (a non-empty string or an integer)")


def _shown(value: Any) -> str:
    text = (
        json.dumps(value, ensure_ascii=False) if not isinstance(value, float) or math.isfinite(value) else repr(value)
    )
    return text if len(text) <= 40 else text[:37] + "..."


def _list(value: Any, field: str) -> list:
    if type(value) is not list:
        raise _Bad(f"field {field!r} = {_shown(value)}, expected a list")
    return value


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Bad(f"field {field!r} = {_shown(value)}, expected a finite number")
    return float(value)


class IdForms:
    """Ids met one at a time, kept by their NFC form: the one rule for ids that print alike (candidates files,
    observations files). Two different ids with one NFC form print as the same text, so no message could tell
    them apart; an ASCII id can have a non-ASCII twin (the Kelvin sign's NFC form is ``K``)."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}

    def twin(self, x: str) -> str | None:
        """The first id met before ``x`` that differs from it only by Unicode normalisation, else ``None``."""
        first = self._first.setdefault(unicodedata.normalize("NFC", x), x)
        return None if first == x else first


def look_alike(ids: Iterable[str]) -> tuple[str, str] | None:
    """The first two different ids of ``ids`` that differ only by Unicode normalisation (:class:`IdForms`), else
    ``None``."""
    ids = list(ids)
    if all(x.isascii() for x in ids):  # ASCII ids are their own NFC forms
        return None
    forms = IdForms()
    for x in ids:
        twin = forms.twin(x)
        if twin is not None:
            return twin, x
    return None


def _distinct_forms(ids: list[str], field: str) -> None:
    """Ids that differ only by Unicode normalisation: an error showing both escaped."""
    pair = look_alike(ids)
    if pair is not None:
        raise _Bad(
            f"field {field!r}: item_id {ascii(pair[0])} and {ascii(pair[1])} differ only by Unicode "
            f"normalisation (they print alike); expected one form (NFC) for one item"
        )


def _closed(d: dict, allowed: frozenset[str], where: str) -> None:
    """A key outside ``allowed`` is an error naming it (``where``: the object, e.g. ``candidates[3]``)."""
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise _Bad(
            f"{where}unknown field {unknown[0]!r}; expected some of {', '.join(sorted(allowed))} (free data "
            f"goes under 'extra')"
        )


def _item(d: Any, field: str, allowed: frozenset[str] = CANDIDATE_FIELDS) -> Item:
    """One candidate or history item: ``item_id`` (id), ``title`` (string), ``year`` (integer or null, optional),
    ``genres`` (list of strings, optional); no field outside ``allowed``."""
    if type(d) is not dict:
        raise _Bad(f"{field} = {_shown(d)}, expected an object with 'item_id' and 'title'")
    _closed(d, allowed, f"{field}: ")
    if "item_id" not in d:
        raise _Bad(f"{field}: missing field 'item_id'")
    item_id = _id(d["item_id"], f"{field}.item_id")
    title = d.get("title")
    if type(title) is not str:
        raise _Bad(f"field '{field}.title' = {_shown(title)}, expected a string (the text the model reads)")
    _text(title, f"{field}.title")
    year = d.get("year")
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)):
        raise _Bad(f"field '{field}.year' = {_shown(year)}, expected an integer year or null")
    genres = d.get("genres")
    genres = [] if genres is None else _list(genres, f"{field}.genres")
    for g in genres:
        if type(g) is not str:
            raise _Bad(f"field '{field}.genres' holds {_shown(g)}, expected strings")
        _text(g, f"{field}.genres")
    return Item(item_id, title, year, tuple(genres))


def _query(d: dict) -> Query:
    _closed(d, LINE_FIELDS, "")
    version = d.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise _Bad(f"schema_version {version!r}, expected {SCHEMA_VERSION}")
    for name in ("query_id", "candidates", "ground_truth"):
        if name not in d:
            raise _Bad(f"missing field {name!r}")
    query_id = _id(d["query_id"], "query_id")
    user_id = _id(d["user_id"], "user_id") if d.get("user_id") is not None else query_id
    split = d.get("split", "test")
    if type(split) is not str or lone_surrogate(split):
        raise _Bad(f"field 'split' = {_shown(split)}, expected 'test' or 'validation'")
    cands = _list(d["candidates"], "candidates")
    if not cands:
        raise _Bad("field 'candidates' is empty, expected at least one item")
    items = tuple(_item(c, f"candidates[{i}]") for i, c in enumerate(cands))
    ids = [it.item_id for it in items]
    if len(set(ids)) != len(ids):
        repeated = next(x for x in ids if ids.count(x) > 1)
        raise _Bad(f"field 'candidates' repeats item_id {repeated!r}, expected distinct ids")
    _distinct_forms(ids, "candidates")
    with_score = [i for i, c in enumerate(cands) if "score" in c]
    if with_score and len(with_score) != len(cands):
        raise _Bad(
            f"field 'candidates[{next(i for i in range(len(cands)) if i not in with_score)}].score' is "
            f"missing; give a score for every candidate or for none"
        )
    scores = tuple(_number(c["score"], f"candidates[{i}].score") for i, c in enumerate(cands)) if with_score else ()
    truth = _list(d["ground_truth"], "ground_truth")
    if not truth:
        raise _Bad("field 'ground_truth' is empty, expected at least one relevant item id")
    ground_truth = tuple(_id(g, "ground_truth[]") for g in truth)
    history = [] if d.get("history") is None else _list(d["history"], "history")
    hist = []
    for i, h in enumerate(history):
        item = _item(h, f"history[{i}]", HISTORY_FIELDS)
        # no rating (absent or null): implicit feedback; the prompts then omit the rating
        rating = None if h.get("rating") is None else _number(h["rating"], f"history[{i}].rating")
        hist.append(HistoryEntry(item, rating))
    return Query(
        query_id=query_id,
        user_id=user_id,
        history=tuple(hist),
        candidates=items,
        ground_truth=ground_truth,
        split=split,
        candidate_scores=scores,
    )


def query_from_json(d: dict, where: str = "") -> Query:
    """Parse and check one candidates-file line, field by field (types, not coercion: a string where a list is
    expected, a null id or title, a float or boolean year are errors); raise :class:`InvariRankError` naming
    ``where`` (``FILE:LINE``) and the field."""
    if type(d) is not dict:
        raise InvariRankError(f"{where}: expected a JSON object, got {type(d).__name__}")
    try:
        return _query(d)
    except _Bad as exc:
        raise InvariRankError(f"{where}: {exc}") from None


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number or string it holds (``json.dumps``' fallback); anything else is refused."""
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        return value.item()
    raise TypeError(f"{type(value).__name__} {value!r} is not JSON data")


def check_query(query: Query, where: str) -> None:
    """Check a :class:`~invarirank.types.Query` built in Python by the candidates file's rules (the line it would
    be written as, read back by :func:`query_from_json`): distinct non-empty ids, at least one candidate and one
    relevant id, text that is valid Unicode, a score for every candidate or none, ``Item`` / ``HistoryEntry``
    objects; numpy scalars count as the numbers and strings they hold. Raises :class:`InvariRankError` naming
    ``where`` and the field; returns nothing (the query is used as given)."""
    try:
        line = json.loads(json.dumps(query_to_json(query), default=_plain))
    except (AttributeError, TypeError, ValueError) as exc:
        raise InvariRankError(
            f"{where}: cannot be read as a candidates-file line ({exc}); expected invarirank.types.Item candidates "
            f"and HistoryEntry history entries"
        ) from None
    query_from_json(line, where)


def write_candidates(path: str | os.PathLike, queries: Iterable[Query]) -> None:
    """Write queries as a candidates file, atomically."""
    lines = [json.dumps(query_to_json(q), ensure_ascii=False) for q in queries]
    atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def _lines(fh: Any, p: Path) -> Iterator[bytes]:
    """The lines of an open (plain or gzip) file; a broken gzip stream is an error naming the file."""
    try:
        yield from fh
    except (OSError, EOFError, zlib.error) as exc:
        raise InvariRankError(f"{p}: not a readable gzip file ({exc})") from None


def _numbered_queries(p: Path) -> Iterator[tuple[int, Query]]:
    existing_file(p, "candidates file")
    with open(p, "rb") as probe:
        gzipped = probe.read(2) == b"\x1f\x8b"
    with gzip.open(p, "rb") if gzipped else open(p, "rb") as fh:
        for lineno, raw in enumerate(_lines(fh, p), 1):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):  # a leading byte-order mark, as in observations
                raw = raw[len(codecs.BOM_UTF8) :]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvariRankError(
                    f"{p}:{lineno}: not UTF-8 text (byte {exc.start + 1} of the line); a "
                    f"candidates file is UTF-8 JSON Lines"
                ) from None
            if not line.strip():
                continue
            try:
                d = loads_json(line, f"{p}:{lineno}")
            except json.JSONDecodeError as exc:
                raise InvariRankError(f"{p}:{lineno}: malformed JSON ({exc.msg})") from None
            yield lineno, query_from_json(d, f"{p}:{lineno}")


def read_candidates(path: str | os.PathLike) -> list[Query]:
    """Read and check a whole candidates file, up front (in file order): every line field by field (types, not
    coercion: see the module docstring), then the file (a ``query_id`` on two lines is an error naming both lines),
    so bad input is reported before any scoring. Returns the queries, test and validation lines alike (``split``);
    errors name ``FILE:LINE`` (1-based physical lines; blank lines are skipped).

    Stability: full (a candidates file → queries).
    """
    queries: list[Query] = []
    first_line: dict[str, int] = {}
    forms: dict[str, tuple[str, int]] = {}
    p = path_argument(path, "read_candidates: path", "candidates file's path")
    for lineno, q in _numbered_queries(p):
        if q.query_id in first_line:
            raise InvariRankError(
                f"{p}:{lineno}: query_id {q.query_id!r} repeats line {first_line[q.query_id]}; "
                f"expected one line per query"
            )
        form = unicodedata.normalize("NFC", q.query_id)
        if form in forms and forms[form][0] != q.query_id:
            raise InvariRankError(
                f"{p}:{lineno}: query_id {ascii(q.query_id)} differs from {ascii(forms[form][0])} "
                f"on line {forms[form][1]} only by Unicode normalisation (they print alike); "
                f"expected distinct ids to look distinct"
            )
        forms.setdefault(form, (q.query_id, lineno))
        first_line[q.query_id] = lineno
        queries.append(q)
    return queries
