"""Top-K candidates among unseen items, from user and item embeddings.

Score of (user, item) = dot product of the user's row and the item's row (float64), higher =
preferred. Excluded (seen) items are never returned. Order: descending score, ties to the lower item
index (= lower row of ``items.parquet`` = lower item id). The top-K of a larger list is therefore
exactly its first K entries.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm


def top_k_row(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` best finite entries of ``scores`` (descending, ties to the lower index).

    Entries equal to ``-inf`` are excluded; fewer than ``k`` indices come back when fewer are finite.
    """
    valid = np.isfinite(scores)
    n_valid = int(valid.sum())
    kk = min(int(k), n_valid)
    if kk <= 0:
        return np.empty(0, dtype=np.int64)
    s = np.where(valid, scores, -np.inf)
    part = np.argpartition(-s, kk - 1)[:kk]
    threshold = s[part].min()
    cand = np.flatnonzero(s >= threshold)  # every tie at the threshold, in index order
    order = np.lexsort((cand, -s[cand]))  # primary: score desc; secondary: index asc
    return cand[order[:kk]].astype(np.int64)


def top_k_unseen(
    user_vectors: np.ndarray,
    item_vectors: np.ndarray,
    users: Sequence[int],
    exclude: Sequence[np.ndarray],
    k: int,
    chunk: int = 256,
    progress: bool = False,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """For each query (a user index and its excluded item indices), the top-``k`` unseen items.

    Returns (item indices, scores) per query, best first; a list is shorter than ``k`` only when the
    user has fewer than ``k`` unseen items.
    """
    U = np.asarray(user_vectors, dtype=np.float64)
    V = np.asarray(item_vectors, dtype=np.float64)
    users = np.asarray(users, dtype=np.int64)
    idx_out: list[np.ndarray] = []
    score_out: list[np.ndarray] = []
    starts = range(0, users.size, chunk)
    for start in tqdm(
        starts, desc="top-K", unit="chunk", disable=not progress or len(starts) < 8, file=sys.stderr, leave=False
    ):
        block = U[users[start : start + chunk]] @ V.T
        for r in range(block.shape[0]):
            row = block[r]
            ex = exclude[start + r]
            if len(ex):
                row[np.asarray(ex, dtype=np.int64)] = -np.inf
            top = top_k_row(row, k)
            idx_out.append(top)
            score_out.append(row[top].copy())
    return idx_out, score_out
