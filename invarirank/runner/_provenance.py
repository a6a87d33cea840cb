"""Do stored rows come from these queries? A check by content, the same on every machine.

A run's fingerprint hashes its test and validation queries as candidates-file JSON, and that JSON carries the first
stage's float scores. LightGCN trained with the same seed on another CPU gives the same candidates in the same order
(checked on every committed evidence run) but scores that differ in their last bits, so the hash of the queries —
and with it the fingerprint — differs from one kind of CPU to another, although nothing that reaches a prompt does.
:func:`rows_reproduce` checks what does matter, from the rows themselves: every row's presented order is the run's
seeded order (:func:`invarirank._orders.presented_orders`) of exactly the loaded query's candidates, in their
first-stage order, and its ground truth is the query's. A committed shard whose fingerprint differs only in the
hashes of the queries is resumed when its rows pass this check (:mod:`._shards`), and the reference rows of a
finished run are derived only from candidates that pass it (``scripts/add_references.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._orders import presented_orders
from ..types import Query

#: the fingerprint parts that hash the queries themselves (candidates-file JSON, scores included)
QUERY_PARTS = frozenset({"queries", "validation"})


def rows_reproduce(
    rows: Iterable[Mapping[str, Any]], queries: Mapping[str, Query], *, M: int, seed: int, noise_floor: bool = False
) -> str | None:
    """``None`` when every row is reproduced by ``queries`` (query id → query) under the run's ``M``, ``seed`` and
    ``noise_floor``; else the first row that is not, in words ("query u39, zero_shot, order 3: ...")."""
    orders: dict[str, dict[int, tuple[int, ...]]] = {}
    for row in rows:
        qid = str(row.get("query_id"))
        where = f"query {qid}, {row.get('method')}, order {row.get('permutation')}"
        q = queries.get(qid)
        if q is None:
            return f"{where}: not among the run's queries"
        if qid not in orders:
            orders[qid] = {o.t: o.positions for o in presented_orders(qid, q.k, M, seed, noise_floor=noise_floor)}
        positions = orders[qid].get(row.get("permutation"))  # type: ignore[arg-type]
        if positions is None:
            return f"{where}: no such presented order (M = {M})"
        if list(row.get("input") or []) != [q.candidates[i].item_id for i in positions]:
            return f"{where}: its presented order is not the run's order of these candidates"
        if sorted(row.get("relevant") or []) != sorted(q.ground_truth):
            return f"{where}: its ground truth is not the query's"
    return None
