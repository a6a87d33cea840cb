"""Popularity baseline (reference only): every user gets the items with the most training positives.

Expressed as embeddings so that every retriever shares the top-K code: user vectors are all 1 and an
item's vector is its number of training positives (score = count; ties to the lower item id).
"""

from __future__ import annotations

import time

import numpy as np


def train_popularity(
    n_users: int, n_items: int, pos_user: np.ndarray, pos_item: np.ndarray
) -> tuple[np.ndarray, np.ndarray, dict]:
    """(user vectors (n_users, 1), item vectors (n_items, 1), info), float32."""
    t0 = time.perf_counter()
    counts = np.bincount(np.asarray(pos_item, dtype=np.int64), minlength=n_items).astype(np.float32)
    users = np.ones((n_users, 1), dtype=np.float32)
    info = {
        "loss_curve": [],
        "train_seconds": time.perf_counter() - t0,
        "device": "cpu",
        "positives": int(np.asarray(pos_user).size),
    }
    return users, counts[:, None], info
