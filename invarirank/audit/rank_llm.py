"""rank_llm's request and result files → observation rows.

Stability: full. rank_llm (castorini/rank_llm) writes its records as JSON Lines (``write_in_jsonl_format``) or one
JSON array (``write_in_json_format``); both are read. Its shapes, from its ``data.py``::

    request  {"query": {"text": "...", "qid": "u17"}, "candidates": [{"docid": "12", "score": 3.1, "doc": {...}}, ...]}
    result   {"query": {"text": "...", "qid": "u17"}, "candidates": [...the same docids, reranked...], ...}

* the **presented order** is the request's ``candidates`` list, in its order (rank_llm writes the candidates into
  the prompt in that order; shuffle them yourself, seeded, before writing the requests — rank_llm's own shuffle is
  not seeded and leaves no record);
* the **output** is the result's ``candidates`` list, best first, completed by the order rule of
  :mod:`invarirank.audit.rerankers` (counted in ``repairs``);
* the i-th result of a query answers the i-th request of that query (rank_llm keeps the request order), and is
  presented order ``t = i`` (0-based); a request without a result, or a result without a request, is an error;
  every other field (``invocations_history``, ...) is ignored;
* docids and qids that are JSON integers become their decimal strings; the ground truth comes from a TREC qrels file
  (RELEVANCE >= ``min_relevance``), since rank_llm keeps it outside its records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._io import existing_file
from ..errors import InvariRankError
from ..evaluation.observations import as_rows, read_text
from .rerankers import REPAIR_KINDS, complete_ranking
from .trec import read_qrels

__all__ = ["read_rank_llm"]


def read_records(path: str | os.PathLike) -> list[tuple[str, Any]]:
    """``(where, record)`` of a JSON Lines file or of one JSON array (``where`` = ``FILE:LINE`` or ``FILE[i]``)."""
    p = Path(path)
    existing_file(p)
    text = read_text(p)
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise InvariRankError(f"{p}: malformed JSON ({exc})") from None
        return [(f"{p}[{i}]", rec) for i, rec in enumerate(data)]
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip():
            try:
                out.append((f"{p}:{n}", json.loads(line)))
            except ValueError as exc:
                raise InvariRankError(f"{p}:{n}: malformed JSON ({exc})") from None
    return out


def _id(value: Any, where: str, what: str) -> str:
    if type(value) is str and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise InvariRankError(f"{where}: {what} {value!r} must be a non-empty string or an integer")


def _query_and_ids(where: str, rec: Any) -> tuple[str, list[str]]:
    if (
        not isinstance(rec, dict)
        or not isinstance(rec.get("query"), dict)
        or not isinstance(rec.get("candidates"), list)
    ):
        raise InvariRankError(f"{where}: expected an object with 'query' (with 'qid') and 'candidates' (a list)")
    qid = _id(rec["query"].get("qid"), where, "query.qid")
    ids = []
    for i, c in enumerate(rec["candidates"]):
        if not isinstance(c, dict) or "docid" not in c:
            raise InvariRankError(f"{where}: candidates[{i}] has no 'docid'")
        ids.append(_id(c["docid"], where, f"candidates[{i}].docid"))
    return qid, ids


def read_rank_llm(
    results: str | os.PathLike,
    *,
    requests: str | os.PathLike,
    qrels: str | os.PathLike,
    method: str = "rank_llm",
    min_relevance: float = 1,
) -> list[dict[str, Any]]:
    """rank_llm's ``results`` with their ``requests`` and a qrels file → validated observation rows (module
    docstring), in the results' order; each row carries ``repairs``.

    Stability: full (rank_llm's records → observation rows)."""
    presented: dict[str, list[list[str]]] = {}
    for where, rec in read_records(requests):
        qid, ids = _query_and_ids(where, rec)
        if not ids or len(set(ids)) != len(ids):
            raise InvariRankError(f"{where}: the request's candidates must be distinct and non-empty")
        presented.setdefault(qid, []).append(ids)
    truth = read_qrels(qrels, min_relevance)
    used: dict[str, int] = {}
    rows = []
    for where, rec in read_records(results):
        qid, ranked = _query_and_ids(where, rec)
        t = used.get(qid, 0)
        if t >= len(presented.get(qid, [])):
            raise InvariRankError(f"{where}: result {t + 1} of query {qid!r} has no request ({requests} holds {t})")
        if qid not in truth:
            raise InvariRankError(f"{where}: query {qid!r} has no relevant item in the qrels {qrels}")
        used[qid] = t + 1
        output, counts = complete_ranking(ranked, presented[qid][t], who=where)
        rows.append(
            {
                "query_id": qid,
                "method": method,
                "permutation": t,
                "input": presented[qid][t],
                "output": output,
                "relevant": truth[qid],
                "repairs": {kind: counts[kind] for kind in REPAIR_KINDS},
            }
        )
    if not rows:
        raise InvariRankError(f"{results}: no results")
    unanswered = {
        qid: len(orders) - used.get(qid, 0) for qid, orders in presented.items() if len(orders) > used.get(qid, 0)
    }
    if unanswered:
        qid, n = next(iter(unanswered.items()))
        raise InvariRankError(f"{results}: {n} request(s) of query {qid!r} in {requests} have no result")
    return as_rows(rows, where=str(results))
