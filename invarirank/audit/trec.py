"""TREC run files: a writer for any observations, and an importer back to observation rows.

Stability: full. The layout (one run = three files beside each other)::

    RUN                  u17 Q0 B00X12 1 3 zero_shot@0       QUERY_ID Q0 ITEM_ID RANK SCORE TAG
    RUN.presented.jsonl  {"query_id": "u17", "tag": "zero_shot@0", "input": ["12", "7", "B00X12"]}
    RUN.qrels            u17 0 7 1                            QUERY_ID 0 ITEM_ID RELEVANCE

* **RUN** — the standard six whitespace-separated columns, one line per ranked item. RANK is 1-based; SCORE is
  ``K + 1 - RANK`` (an integer, strictly decreasing down a list): trec_eval and ranx order a list by score, not by
  rank, and a method's own scores need not follow its output (bootstrapping aggregates three passes), so the
  written score is the one that reproduces the output exactly. TAG is ``METHOD@T``: one list per (query, method,
  presented order ``t``, 0-based). Tools that read one list per query per file (trec_eval) would merge a query's lists;
  for them, write the rows of one method and one order per file (filter the rows first).
* **RUN.presented.jsonl** — the presented order of every list (the convention this project adds: TREC has no
  place for it), one JSON object per (query, tag).
* **RUN.qrels** — the ground truth as TREC qrels (RELEVANCE 1 for every relevant id).

Import (:func:`read_trec_run`): a list's output is its lines by descending SCORE (equal scores by ascending RANK,
then file order), completed by the order rule of :mod:`invarirank.audit.rerankers` (unknown ids dropped,
duplicates dropped, missing candidates appended in presented order — a run cut at a top-k depth — every change
counted in the row's ``repairs``). A TAG of the form ``METHOD@T`` gives the method and the permutation; any other
tag is the method, with permutation 0 (one list per query and tag). Every presented order of the side file
needs its list in the run (an unanswered order is an error, not a row left out). Without a presented-order file, a
candidates file gives the presented order of every list (the first stage's order: a run of one order per query).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, existing_file
from ..errors import InvariRankError
from ..evaluation.observations import as_rows, read_text
from .rerankers import REPAIR_KINDS, complete_ranking

__all__ = ["write_trec_run", "read_trec_run"]

_TAG = re.compile(r"^(?P<method>.+)@(?P<t>\d+)$")


def presented_path(run: str | os.PathLike) -> Path:
    """``RUN.presented.jsonl`` beside ``run``."""
    return Path(run).with_name(Path(run).name + ".presented.jsonl")


def qrels_path(run: str | os.PathLike) -> Path:
    """``RUN.qrels`` beside ``run``."""
    return Path(run).with_name(Path(run).name + ".qrels")


def _token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise InvariRankError(f"TREC run: {what} {value!r} is empty or holds whitespace; a TREC column cannot")
    return value


def write_trec_run(path: str | os.PathLike, rows: Any) -> Path:
    """Write observation rows (a file, a DataFrame or rows; validated) as a TREC run with its presented-order and
    qrels files (module docstring); returns the run's path. Every method and order gets its own tag.

    Stability: full (a TREC run file and its sidecars, written and read back)."""
    valid = as_rows(rows, where=f"{path} (rows to write)")
    run_lines: list[str] = []
    presented: list[str] = []
    qrels: list[str] = []
    relevant_of: dict[str, list[str]] = {}
    for row in valid:
        qid, method = _token(row["query_id"], "query id"), _token(row["method"], "method")
        tag = f"{method}@{row['permutation']}"
        k = len(row["output"])
        for rank, item in enumerate(row["output"], 1):
            run_lines.append(f"{qid} Q0 {_token(item, 'item id')} {rank} {k + 1 - rank} {tag}\n")
        presented.append(json.dumps({"query_id": qid, "tag": tag, "input": row["input"]}, ensure_ascii=False) + "\n")
        relevant_of.setdefault(qid, list(dict.fromkeys(row["relevant"])))
    for qid, rel in relevant_of.items():
        qrels.extend(f"{qid} 0 {_token(item, 'relevant id')} 1\n" for item in rel)
    p = Path(path)
    atomic_write_text(qrels_path(p), "".join(qrels))
    atomic_write_text(presented_path(p), "".join(presented))
    atomic_write_text(p, "".join(run_lines))
    return p


def _lines(path: Path, columns: int, what: str) -> Iterable[tuple[int, list[str]]]:
    existing_file(path, f"{what.split(':')[0]} file")
    for n, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != columns:
            raise InvariRankError(
                f"{path}:{n}: expected {columns} whitespace-separated columns ({what}), got {len(parts)}"
            )
        yield n, parts


def _number(text: str, where: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InvariRankError(f"{where}: column {what} {text!r} is not a number") from None


def read_qrels(path: str | os.PathLike, min_relevance: float = 1) -> dict[str, list[str]]:
    """A TREC qrels file → the relevant ids of each query (RELEVANCE >= ``min_relevance``), in file order."""
    out: dict[str, list[str]] = {}
    for n, (qid, _, item, rel) in _lines(Path(path), 4, "qrels: QUERY_ID 0 ITEM_ID RELEVANCE"):
        if _number(rel, f"{path}:{n}", "RELEVANCE") >= min_relevance:
            out.setdefault(qid, [])
            if item not in out[qid]:
                out[qid].append(item)
    return out


def _presented(path: Path) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for n, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            key, ids = (str(rec["query_id"]), str(rec["tag"])), [str(x) for x in rec["input"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise InvariRankError(
                f"{path}:{n}: expected a JSON object with query_id, tag and input (a list of ids) ({exc})"
            ) from None
        if key in out:
            raise InvariRankError(f"{path}:{n}: query {key[0]!r}, tag {key[1]!r} given twice")
        out[key] = ids
    return out


def read_trec_run(
    path: str | os.PathLike,
    *,
    presented: str | os.PathLike | None = None,
    qrels: str | os.PathLike | None = None,
    candidates: str | os.PathLike | None = None,
    min_relevance: float = 1,
) -> list[dict[str, Any]]:
    """A TREC run → observation rows (module docstring), validated. ``presented`` defaults to
    ``RUN.presented.jsonl`` and ``qrels`` to ``RUN.qrels`` when they exist; ``candidates`` (a candidates file)
    gives the presented order and the ground truth instead. Rows come in the run's order of first appearance of
    each (query, tag); each carries ``repairs`` (the order rule's counts).

    Stability: full (a TREC run file and its sidecars, written and read back)."""
    p = Path(path)
    lists: dict[tuple[str, str], list[tuple[float, float, int, str]]] = {}
    for n, (qid, _, item, rank, score, tag) in _lines(p, 6, "run: QUERY_ID Q0 ITEM_ID RANK SCORE TAG"):
        where = f"{p}:{n}"
        lists.setdefault((qid, tag), []).append(
            (-_number(score, where, "SCORE"), _number(rank, where, "RANK"), n, item)
        )
    if not lists:
        raise InvariRankError(f"{p}: the run holds no lines")
    inputs: dict[tuple[str, str], list[str]] = {}
    truth: dict[str, list[str]] = {}
    if candidates is not None:
        from ..candidates import read_candidates

        by_query = {q.query_id: q for q in read_candidates(candidates)}
        for qid, tag in lists:
            if qid not in by_query:
                raise InvariRankError(f"{p}: query {qid!r} is not in the candidates file {candidates}")
            inputs[(qid, tag)] = [c.item_id for c in by_query[qid].candidates]
            truth[qid] = list(by_query[qid].ground_truth)
    else:
        side = Path(presented) if presented is not None else presented_path(p)
        if not side.exists():
            raise InvariRankError(
                f"{side}: presented-order file not found; give presented= (RUN.presented.jsonl) or candidates="
            )
        existing_file(side, "presented-order file")
        inputs = _presented(side)
    if qrels is not None or candidates is None:
        truth = read_qrels(qrels if qrels is not None else qrels_path(p), min_relevance)
    if candidates is None:
        unanswered = [key for key in inputs if key not in lists]
        if unanswered:
            raise InvariRankError(
                f"{p}: no list for query {unanswered[0][0]!r}, tag {unanswered[0][1]!r} of the presented-order file "
                f"({len(unanswered)} presented orders unanswered); expected one list for every presented order"
            )
    rows = []
    for (qid, tag), entries in lists.items():
        if (qid, tag) not in inputs:
            raise InvariRankError(f"{p}: no presented order for query {qid!r}, tag {tag!r}")
        if qid not in truth:
            raise InvariRankError(f"{p}: query {qid!r} has no relevant item in the qrels")
        m = _TAG.match(tag)
        method, t = (m["method"], int(m["t"])) if m else (tag, 0)
        ranked = [item for *_, item in sorted(entries)]
        output, counts = complete_ranking(ranked, inputs[(qid, tag)], who=f"{p}: query {qid!r}, tag {tag!r}")
        rows.append(
            {
                "query_id": qid,
                "method": method,
                "permutation": t,
                "input": inputs[(qid, tag)],
                "output": output,
                "relevant": truth[qid],
                "repairs": {kind: counts[kind] for kind in REPAIR_KINDS},
            }
        )
    return as_rows(rows, where=str(p))
