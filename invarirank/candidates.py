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
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Iterator

from .errors import InvariRankError
from .io import atomic_write_text
from .types import HistoryEntry, Item, Query

__all__ = ["SCHEMA_VERSION", "query_to_json", "queries_sha256", "query_from_json", "write_candidates",
           "read_candidates"]

SCHEMA_VERSION = 1


def query_to_json(query: Query) -> dict:
    """The JSON object of one candidates-file line."""
    cands = []
    for i, item in enumerate(query.candidates):
        d = item.to_json()
        if query.candidate_scores:
            d["score"] = float(query.candidate_scores[i])
        cands.append(d)
    hist = [{**h.item.to_json(), "rating": float(h.rating)} for h in query.history]
    return {"schema_version": SCHEMA_VERSION, "query_id": query.query_id, "user_id": query.user_id,
            "split": query.split, "candidates": cands, "ground_truth": list(query.ground_truth),
            "history": hist}


def queries_sha256(queries: Iterable[Query]) -> str:
    """sha256 over the queries' candidates-file JSON (keys sorted, one line each, in the given order)."""
    h = hashlib.sha256()
    for q in queries:
        h.update(json.dumps(query_to_json(q), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def query_from_json(d: dict, where: str = "") -> Query:
    """Parse one candidates-file line; raise :class:`InvariRankError` naming ``where`` on bad input."""
    try:
        version = d.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise InvariRankError(f"{where}: schema_version {version!r}, expected {SCHEMA_VERSION}")
        cands = d["candidates"]
        if not cands:
            raise InvariRankError(f"{where}: field 'candidates' is empty, expected at least one item")
        items = tuple(Item.from_json(c) for c in cands)
        scores = tuple(float(c["score"]) for c in cands) if all("score" in c for c in cands) else ()
        hist = tuple(HistoryEntry(Item.from_json(h), float(h["rating"])) for h in d.get("history", []))
        ids = [it.item_id for it in items]
        if len(set(ids)) != len(ids):
            raise InvariRankError(f"{where}: field 'candidates' repeats an item_id, expected distinct ids")
        return Query(query_id=str(d["query_id"]), user_id=str(d.get("user_id", d["query_id"])),
                     history=hist, candidates=items,
                     ground_truth=tuple(str(g) for g in d["ground_truth"]),
                     split=str(d.get("split", "test")), candidate_scores=scores)
    except KeyError as exc:
        raise InvariRankError(f"{where}: missing field {exc.args[0]!r}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InvariRankError(f"{where}: malformed query ({exc})") from None


def write_candidates(path: str | os.PathLike, queries: Iterable[Query]) -> None:
    """Write queries as a candidates file, atomically."""
    lines = [json.dumps(query_to_json(q), ensure_ascii=False) for q in queries]
    atomic_write_text(path, "\n".join(lines) + ("\n" if lines else ""))


def iter_candidates(path: str | os.PathLike) -> Iterator[Query]:
    p = Path(path)
    if not p.is_file():
        raise InvariRankError(f"{p}: no such candidates file")
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvariRankError(f"{p}:{lineno}: malformed JSON ({exc.msg})") from None
            if not isinstance(d, dict):
                raise InvariRankError(f"{p}:{lineno}: expected a JSON object")
            yield query_from_json(d, f"{p}:{lineno}")


def read_candidates(path: str | os.PathLike) -> list[Query]:
    """Read a candidates file into :class:`Query` objects (in file order)."""
    return list(iter_candidates(path))
