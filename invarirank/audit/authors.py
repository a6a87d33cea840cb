"""The paper authors' harness output (github.com/ejbito/InvariRank) → observation rows.

Stability: full. Two layouts of that repository are read, JSON Lines or one JSON array, told apart per record:

* **a harness result** — ``RankingResult.to_dict()`` of its ``PermutationSuite`` / ``CallableReranker``
  (``invarirank/contracts.py`` there)::

      {"user_id": "u1", "split": "test", "permutation": [2, 0, 1],
       "items": [{"candidate_index": 0, "item_id": "a", "score": 2.0, "input_position": 1, "relevance": 1, ...}, ...],
       "metadata": {"method": "my_score_model", ...}}

  ``items`` is the output, best first; the presented order is the items by ``input_position`` (0-based); the
  method is ``metadata.method``; a user's results of one method are presented orders t = 0, 1, ... in file order.
* **a ranked-list record** of its experiments (``docs/ranked_lists_schema.md`` there): one record per user with
  ``permutations`` = ``[{"permutation_index": t, "input": {"item_ids": [...], "relevance": [...]},
  "output_ranking": {"item_ids": [...]}}, ...]``; the method is the record's ``method`` when present.

The ground truth is the items whose ``relevance`` is at least ``min_relevance`` (graded labels: 1 keeps every
positive), or a TREC qrels file when given (the harness leaves ``relevance`` empty when the sample had none).
Output lists are completed by the order rule of :mod:`invarirank.audit.rerankers` (counted in ``repairs``); the
harness itself refuses incomplete ones, so its files need none.
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import InvariRankError
from ..evaluation.observations import as_rows
from .rank_llm import read_records
from .rerankers import REPAIR_KINDS, complete_ranking
from .trec import read_qrels

__all__ = ["read_authors"]


def _ids(values: Any, where: str, what: str) -> list[str]:
    if not isinstance(values, list):
        raise InvariRankError(f"{where}: {what} must be a list of item ids")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise InvariRankError(f"{where}: {what} holds {v!r}; expected string ids")
        out.append(str(v))
    return out


def _relevant(ids: list[str], labels: Any, min_relevance: float) -> list[str]:
    if not isinstance(labels, list) or len(labels) != len(ids):
        return []
    return [
        i for i, r in zip(ids, labels) if isinstance(r, (int, float)) and not isinstance(r, bool) and r >= min_relevance
    ]


def _harness(where: str, rec: dict, method: str, min_relevance: float) -> tuple[str, str, list, list, list]:
    items = rec["items"]
    if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
        raise InvariRankError(f"{where}: 'items' must be a list of objects")
    try:
        by_input = sorted(items, key=lambda x: int(x["input_position"]))
        output = _ids([x["item_id"] for x in items], where, "items[].item_id")
        inp = _ids([x["item_id"] for x in by_input], where, "items[].item_id")
    except (KeyError, TypeError, ValueError):
        raise InvariRankError(f"{where}: every item needs 'item_id' and an integer 'input_position'") from None
    name = (rec.get("metadata") or {}).get("method") or method
    rel = _relevant(output, [x.get("relevance") for x in items], min_relevance)
    return str(rec.get("user_id", "")), str(name), inp, output, rel


def read_authors(
    path: str | os.PathLike,
    *,
    method: str = "authors",
    qrels: str | os.PathLike | None = None,
    min_relevance: float = 1,
) -> list[dict[str, Any]]:
    """The authors' harness results or ranked-list records in ``path`` → validated observation rows (module
    docstring), in file order; each row carries ``repairs``.

    Stability: full (the paper authors' result files → observation rows)."""
    truth = read_qrels(qrels, min_relevance) if qrels is not None else None
    lists: list[tuple[str, str, str, int | None, list, list, list]] = []
    for where, rec in read_records(path):
        if isinstance(rec, dict) and "items" in rec:
            qid, name, inp, out, rel = _harness(where, rec, method, min_relevance)
            lists.append((where, qid, name, None, inp, out, rel))
        elif isinstance(rec, dict) and isinstance(rec.get("permutations"), list):
            qid, name = str(rec.get("user_id", "")), str(rec.get("method") or method)
            for j, perm in enumerate(rec["permutations"]):
                w = f"{where} permutations[{j}]"
                try:
                    inp = _ids(perm["input"]["item_ids"], w, "input.item_ids")
                    out = _ids(perm["output_ranking"]["item_ids"], w, "output_ranking.item_ids")
                    t = int(perm.get("permutation_index", j))
                except (KeyError, TypeError, ValueError):
                    raise InvariRankError(f"{w}: expected input.item_ids and output_ranking.item_ids") from None
                lists.append((w, qid, name, t, inp, out, _relevant(inp, perm["input"].get("relevance"), min_relevance)))
        else:
            raise InvariRankError(
                f"{where}: neither a harness result ('items') nor a ranked-list record ('permutations')"
            )
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], int] = {}
    for where, qid, name, given, inp, out, rel in lists:
        if not qid:
            raise InvariRankError(f"{where}: no 'user_id' (the query id)")
        t = seen.get((qid, name), 0) if given is None else given
        seen[(qid, name)] = max(seen.get((qid, name), 0), t + 1)
        relevant = truth.get(qid, []) if truth is not None else rel
        if not relevant:
            raise InvariRankError(
                f"{where}: user {qid!r} has no relevant item (relevance >= {min_relevance:g}); give a qrels file"
            )
        output, counts = complete_ranking(out, inp, who=where)
        rows.append(
            {
                "query_id": qid,
                "method": name,
                "permutation": t,
                "input": inp,
                "output": output,
                "relevant": relevant,
                "repairs": {kind: counts[kind] for kind in REPAIR_KINDS},
            }
        )
    if not rows:
        raise InvariRankError(f"{path}: no records")
    return as_rows(rows, where=str(path))
