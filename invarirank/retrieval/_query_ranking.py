"""Ranking the queries with trained embeddings: which items a query may get (its ``exclude`` list and the user's
items of the earlier splits), the top-K unseen items of every test and validation query (descending dot-product
score, ties to the lower item id), the retrieval metrics of those lists, and the queries whose top-K holds a
ground-truth item (relevant items are never injected).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvariRankError
from ..types import HistoryEntry, Query
from ._candidates import top_k_unseen
from ._data import RetrievalData
from ._metrics import DEFAULT_KS, retrieval_metrics


def _exclusions(data: RetrievalData, row: dict) -> np.ndarray:
    """Item indices a query must never get: its ``exclude`` list ∪ the user's seen items of the splits
    before the query's target segment."""
    user = str(row["user_id"])
    parts = [data.seen_train.get(user, np.empty(0, np.int64))]
    if row["split"] == "test":
        parts.append(data.seen_validation.get(user, np.empty(0, np.int64)))
    listed = row.get("exclude")
    if listed is not None:
        ids = [data.item_index[str(i)] for i in listed if str(i) in data.item_index]
        parts.append(np.asarray(ids, dtype=np.int64))
    return np.unique(np.concatenate(parts).astype(np.int64))


def select_queries(data: RetrievalData, k: int) -> dict[str, list[tuple[dict, np.ndarray]]]:
    """The test and validation query rows (``queries.parquet`` order) with their excluded item indices.

    Raises :class:`InvariRankError` on a bad row or when K exceeds the unseen catalogue of a query.
    """
    path = data.data_dir / "queries.parquet"
    by_split: dict[str, list[tuple[dict, np.ndarray]]] = {"test": [], "validation": []}
    for n, row in enumerate(data.queries.to_dict("records")):
        split = str(row["split"])
        if split not in by_split:
            raise InvariRankError(f"{path}: row {n}: split {split!r}; expected test or validation")
        if str(row["user_id"]) not in data.user_index:
            raise InvariRankError(f"{path}: query {row['query_id']}: user {row['user_id']!r} has no interactions")
        if len(row["ground_truth"]) == 0:
            continue  # the contract lists only queries with a ground truth; tolerate others
        by_split[split].append((row, _exclusions(data, row)))
    too_small = [
        (data.n_items - ex.size, split, row["query_id"])
        for split, pairs in by_split.items()
        for row, ex in pairs
        if data.n_items - ex.size < k
    ]
    if too_small:
        unseen, split, qid = min(too_small, key=lambda t: t[0])
        raise InvariRankError(
            f"--k {k} is larger than the unseen catalogue of {len(too_small)} queries (smallest: {split} "
            f"query {qid} with {unseen} unseen items of {data.n_items}); expected K <= {unseen}"
        )
    return by_split


def rank_queries(
    data: RetrievalData,
    users: np.ndarray,
    items: np.ndarray,
    k: int,
    ks: tuple[int, ...] = DEFAULT_KS,
    selected: dict[str, list[tuple[dict, np.ndarray]]] | None = None,
    progress: bool = False,
) -> dict[str, list[dict]]:
    """Top-max(K, ks) unseen items of every test and validation query.

    Returns ``{"test": [...], "validation": [...]}``, each a list (in ``queries.parquet`` order) of
    dicts with ``row`` (the query row), ``top`` (item indices, best first) and ``scores``.
    ``selected`` is :func:`select_queries`'s result (computed when not given).
    """
    if selected is None:
        selected = select_queries(data, k)
    kmax = max(int(k), *ks)
    out: dict[str, list[dict]] = {}
    for split, pairs in selected.items():
        uidx = [data.user_index[str(row["user_id"])] for row, _ in pairs]
        tops, scores = top_k_unseen(users, items, uidx, [ex for _, ex in pairs], kmax, progress=progress)
        out[split] = [{"row": row, "top": t, "scores": sc} for (row, _), t, sc in zip(pairs, tops, scores)]
    return out


def make_query(data: RetrievalData, entry: dict, k: int) -> Query:
    row = entry["row"]
    history = []
    ratings = list(row["history_ratings"])
    for j, hid in enumerate(row["history_item_ids"]):
        idx = data.item_index.get(str(hid))
        if idx is None:
            raise InvariRankError(
                f"{data.data_dir / 'queries.parquet'}: query {row['query_id']}: history "
                f"item {hid!r} is not in items.parquet"
            )
        history.append(HistoryEntry(data.items[idx], float(ratings[j])))
    top = entry["top"][:k]
    return Query(
        query_id=str(row["query_id"]),
        user_id=str(row["user_id"]),
        history=tuple(history),
        candidates=tuple(data.items[i] for i in top),
        ground_truth=tuple(str(g) for g in row["ground_truth"]),
        split=str(row["split"]),
        candidate_scores=tuple(float(s) for s in entry["scores"][:k]),
    )


def split_stats(data: RetrievalData, entries: list[dict], k: int, ks: tuple[int, ...]) -> tuple[dict, list[dict]]:
    retrieved = [[data.item_ids[i] for i in e["top"]] for e in entries]
    truths = [[str(g) for g in e["row"]["ground_truth"]] for e in entries]
    metrics = retrieval_metrics(retrieved, truths, ks)
    kept = [e for e, lst, gt in zip(entries, retrieved, truths) if set(lst[:k]) & set(gt)]
    metrics.update(queries_kept=len(kept), queries_dropped=len(entries) - len(kept))
    return metrics, kept


def evaluate_embeddings(
    data: RetrievalData,
    users: np.ndarray,
    items: np.ndarray,
    k: int = 25,
    ks: tuple[int, ...] = DEFAULT_KS,
    split: str = "test",
) -> dict[str, Any]:
    """Retrieval metrics of given embeddings over all queries of ``split`` (no files written):
    ``queries``, ``coverage@K`` / ``recall@K`` / ``hr@K`` / ``ndcg@K`` for K in ``ks`` ∪ {k}, and
    ``queries_kept`` / ``queries_dropped`` for ``k``."""
    ks = tuple(sorted(set(ks) | {int(k)}))
    selected = select_queries(data, k)
    ranked = rank_queries(data, users, items, k, ks, {split: selected[split]})
    metrics, _ = split_stats(data, ranked[split], k, ks)
    return metrics
