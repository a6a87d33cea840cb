"""``audit``: drive any reranker over a seeded permutation design → observation rows; ``rerank``: one order you give.

Stability: full (the package's front door: ``invarirank.audit(...)`` and ``invarirank.rerank(...)``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..candidates import check_query
from ..errors import InvariRankError
from ..types import Item, Query
from .designs import DEFAULT_LABELS, Design, design_orders
from .rerankers import REPAIR_KINDS, Presentation, Ranking, Reranker, as_reranker

__all__ = ["audit", "rerank"]


def _queries(queries: Any) -> list[Query]:
    if isinstance(queries, (str, os.PathLike)):
        from ..candidates import read_candidates

        queries = read_candidates(queries)
    if isinstance(queries, Query):
        queries = [queries]
    if isinstance(queries, (str, bytes)) or not isinstance(queries, Iterable):
        raise InvariRankError(f"audit: queries = {queries!r}; expected Query objects or a candidates file's path")
    out = list(queries)
    if not out:
        raise InvariRankError("audit: 'queries' is empty; expected at least one Query (or a candidates file)")
    seen: set[str] = set()
    for q in out:
        if not isinstance(q, Query):
            raise InvariRankError(f"audit: {type(q).__name__} in 'queries'; expected invarirank.Query objects")
        ids = [c.item_id for c in q.candidates]
        if not ids or len(set(ids)) != len(ids):
            raise InvariRankError(f"audit: query {q.query_id!r}: expected at least one candidate and distinct ids")
        if not q.ground_truth:
            raise InvariRankError(f"audit: query {q.query_id!r} has no ground truth (the observations need one)")
        check_query(q, f"audit: query {q.query_id!r}")  # the candidates file's rules (lone surrogates, ...)
        if q.query_id in seen:
            raise InvariRankError(f"audit: query id {q.query_id!r} appears twice in 'queries'")
        seen.add(q.query_id)
    return out


def _rerankers(reranker: Any) -> list[Reranker]:
    many = isinstance(reranker, (list, tuple))
    out = [as_reranker(r) for r in (reranker if many else [reranker])]
    names = [r.name for r in out]
    if len(set(names)) != len(names):
        raise InvariRankError(f"audit: two rerankers are named {names!r}; each needs its own name (its method)")
    if not out:
        raise InvariRankError("audit: no reranker given")
    return out


def audit(
    reranker: Any,
    queries: Any,
    *,
    design: str | Design = "random",
    M: int = 20,
    seed: int = 42,
    repeats: int = 1,
    pin_item: int = 0,
    pin_position: int = 0,
    labels: Sequence[str] | None = None,
    dataset: str = "",
) -> list[dict[str, Any]]:
    """Every reranker on every presented order of ``design`` of every query → observation rows (dicts of the
    observations schema: :func:`invarirank.evaluate` and :func:`invarirank.write_observations` take them as they are).

    ``reranker``: a :class:`~invarirank.audit.Reranker` (:func:`~invarirank.audit.from_order`,
    :func:`~invarirank.audit.from_scores`, :func:`~invarirank.audit.from_scorer`), a project scorer (zero-shot),
    or a list of them (each named differently: its name is the rows' ``method``; all see the same orders, so they
    compare paired). ``queries``: :class:`~invarirank.Query` objects or a candidates file. ``design`` and its
    settings (``M``, ``repeats``, ``pin_item``, ``pin_position``, ``labels``): :mod:`invarirank.audit.designs`;
    ``seed`` decides every order. Rows come by query, then reranker, then order ``t``; each holds the required
    fields plus ``design`` (and ``pin`` / ``labels``), ``k``, ``scores`` (when the reranker gives them, aligned
    with ``input``, higher = preferred), ``repairs`` (what the order rule changed, by kind; zeros for a valid
    ranking), ``passes`` and ``dataset`` when given.

    Stability: full (what ``invarirank.audit(...)`` calls: any reranker over a seeded permutation design →
    observation rows)."""
    qs = _queries(queries)
    rerankers = _rerankers(reranker)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvariRankError(f"audit: seed = {seed!r}; expected an integer >= 0")
    d = (
        design
        if isinstance(design, Design)
        else Design(design, M, repeats, pin_item, pin_position, tuple(labels) if labels else DEFAULT_LABELS)
    )
    if d.name == "label-swap":
        blind = [r.name for r in rerankers if not getattr(r, "uses_labels", False)]
        if blind:
            raise InvariRankError(
                f"audit: design 'label-swap' permutes the labels, but reranker {blind[0]!r} does not read them "
                f"(of the project's scorers only the choice scorer writes labels; declare uses_labels=True on a "
                f"callable that uses presented.labels)"
            )
    plan: list[tuple[Query, Presentation, dict[str, Any]]] = []
    for q in qs:
        ids = [c.item_id for c in q.candidates]
        for o in design_orders(q.query_id, q.k, d, seed):
            fields = dict(o.fields)
            if d.name == "pinned":
                fields["pin"] = {"item": ids[d.pin_item], "position": o.positions.index(d.pin_item)}
            items = [q.candidates[i] for i in o.positions]
            plan.append(
                (q, Presentation(items, labels=o.labels, t=o.t, key=o.key, seed=seed, positions=o.positions), fields)
            )
    by_reranker = []
    for r in rerankers:
        answers = r.rerank([(q, p) for q, p, _ in plan])
        if len(answers) != len(plan):
            raise InvariRankError(f"audit: reranker {r.name!r} answered {len(answers)} of {len(plan)} requests")
        by_reranker.append(answers)
    rows: list[dict[str, Any]] = []
    start = 0
    for q in qs:
        stop = start
        while stop < len(plan) and plan[stop][0] is q:
            stop += 1
        for r, answers in zip(rerankers, by_reranker):
            for (_, p, fields), ans in zip(plan[start:stop], answers[start:stop]):
                rows.append(_row(q, p, fields, r.name, ans, dataset))
        start = stop
    return rows


def _row(q: Query, p: Presentation, fields: dict[str, Any], method: str, ans: Ranking, dataset: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "query_id": q.query_id,
        "method": method,
        "permutation": p.t,
        "input": p.ids,
        "output": list(ans.output),
        "relevant": list(q.ground_truth),
        **fields,
        "k": q.k,
    }
    if ans.scores is not None:
        row["scores"] = [float(s) for s in ans.scores]
    row["repairs"] = {kind: int(ans.repairs.get(kind, 0)) for kind in REPAIR_KINDS}
    row["passes"] = int(ans.passes)
    if ans.parse is not None:
        row["parse"] = {kind: int(n) for kind, n in ans.parse.items()}
    if dataset:
        row["dataset"] = dataset
    return row


def repair_totals(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per method: rows, rows the order rule changed, the ids it dropped or appended by kind, and the sums of the
    rows' ``parse`` flags where they have them (a generating served reranker: unparsable, reasoning, truncated)."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        t = out.setdefault(row["method"], {"rows": 0, "repaired_rows": 0, **dict.fromkeys(REPAIR_KINDS, 0)})
        rep = row.get("repairs") or {}
        t["rows"] += 1
        t["repaired_rows"] += int(any(rep.get(k, 0) for k in REPAIR_KINDS))
        for kind in REPAIR_KINDS:
            t[kind] += int(rep.get(kind, 0))
        for kind, n in (row.get("parse") or {}).items():
            t[kind] = t.get(kind, 0) + int(n)
    return out


def rerank(reranker: Any, query: Query, presented: Sequence[str | Item] | None = None, *, seed: int = 42) -> Ranking:
    """Rerank ``query``'s candidates in the order YOU give: ``presented`` = item ids (or :class:`~invarirank.Item`
    objects) of ``query.candidates`` in the order to show them (default: as the query holds them). ``reranker`` is
    a :class:`~invarirank.audit.Reranker` or a project scorer (zero-shot). Returns one
    :class:`~invarirank.audit.Ranking` (``output`` best first; ``scores`` aligned with ``presented``).

    Stability: full (one ranking of the order you give)."""
    r = as_reranker(reranker, "rerank")
    if not isinstance(query, Query):
        raise InvariRankError(f"rerank: query = {type(query).__name__}; expected an invarirank.Query")
    check_query(query, f"rerank: query {query.query_id!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvariRankError(f"rerank: seed = {seed!r}; expected an integer >= 0")
    by_id = {c.item_id: i for i, c in enumerate(query.candidates)}
    if presented is None:
        positions = list(range(query.k))
    elif isinstance(presented, (str, bytes)) or not isinstance(presented, Iterable):
        # a string is iterable: "0123" would present the candidates "0", "1", ...
        raise InvariRankError(f"rerank: presented = {presented!r}; expected a list of item ids or Items")
    else:
        given = [x.item_id if isinstance(x, Item) else x for x in presented]
        unknown = [x for x in given if x not in by_id]
        if unknown:
            raise InvariRankError(f"rerank: {unknown[0]!r} is not a candidate of query {query.query_id!r}")
        if len(set(given)) != len(given) or not given:
            raise InvariRankError(f"rerank: 'presented' must list distinct candidates of query {query.query_id!r}")
        positions = [by_id[x] for x in given]
    labels = DEFAULT_LABELS[: len(positions)] if len(positions) <= len(DEFAULT_LABELS) else ()
    p = Presentation([query.candidates[i] for i in positions], labels=labels, t=0, seed=seed, positions=positions)
    (answer,) = r.rerank([(query, p)])
    return answer
