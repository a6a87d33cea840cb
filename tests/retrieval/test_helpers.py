"""Helpers for the first-stage tests: tiny prepared folders written per the Parquet contract
(interactions.parquet / items.parquet / queries.parquet), independent of the data layer's code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def write_prepared(
    folder: Path, interactions: list[tuple], items: list[tuple] | None = None, queries: list[dict] | None = None
) -> Path:
    """Write a prepared folder.

    ``interactions``: (user_id, item_id, rating, timestamp, split) tuples; ``items``: (item_id, title,
    year, genres) tuples (default: every item id seen, numeric order); ``queries``: rows of
    queries.parquet (default: derived as the protocol chapter says from the interactions).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    inter = pd.DataFrame(interactions, columns=["user_id", "item_id", "rating", "timestamp", "split"])
    inter = inter.astype({"user_id": str, "item_id": str, "rating": "float64", "timestamp": "int64", "split": str})
    if items is None:
        ids = sorted(set(inter["item_id"]), key=int)
        items = [(i, f"Movie {i}", 1990 + int(i) % 10, ["Drama"] if int(i) % 2 else ["Comedy", "War"]) for i in ids]
    items_df = pd.DataFrame(items, columns=["item_id", "title", "year", "genres"])
    items_df["item_id"] = items_df["item_id"].astype(str)
    items_df["year"] = items_df["year"].astype("Int64")
    if queries is None:
        queries = derive_queries(inter)
    q = pd.DataFrame(
        queries,
        columns=["query_id", "user_id", "split", "history_item_ids", "history_ratings", "ground_truth", "exclude"],
    )
    inter.to_parquet(folder / "interactions.parquet", index=False)
    items_df.to_parquet(folder / "items.parquet", index=False)
    q.to_parquet(folder / "queries.parquet", index=False)
    return folder


def derive_queries(inter: pd.DataFrame) -> list[dict]:
    """Test queries (history = train + validation) then validation queries (history = train)."""
    out: dict[str, list[dict]] = {"test": [], "validation": []}
    inter = inter.assign(_i=inter["item_id"].astype(int))
    for user, g in inter.groupby("user_id", sort=False):
        for split, before, prefix in (("test", ("train", "validation"), "u"), ("validation", ("train",), "v")):
            h = g[g["split"].isin(before)].sort_values(["timestamp", "_i"], ascending=[False, True])
            gt = g[(g["split"] == split) & (g["rating"] >= 4)].sort_values("_i")
            if not len(gt):
                continue
            out[split].append(
                {
                    "query_id": f"{prefix}{user}",
                    "user_id": str(user),
                    "split": split,
                    "history_item_ids": list(h["item_id"][:20]),
                    "history_ratings": [float(r) for r in h["rating"][:20]],
                    "ground_truth": list(gt["item_id"]),
                    "exclude": sorted(set(h["item_id"]), key=int),
                }
            )
    return out["test"] + out["validation"]


def synthetic_interactions(n_users: int = 24, n_items: int = 30, per_user: int = 12, seed: int = 0) -> list[tuple]:
    """Two taste clusters (users like the items of their half), chronological 70/10/20 split."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(1, n_users + 1):
        half = np.arange(1, n_items // 2 + 1) if u % 2 else np.arange(n_items // 2 + 1, n_items + 1)
        liked = rng.choice(half, size=per_user - 2, replace=False)
        other = rng.choice(np.setdiff1d(np.arange(1, n_items + 1), half), size=2, replace=False)
        chosen = list(liked) + list(other)
        rng.shuffle(chosen)
        n = len(chosen)
        n_train, n_val = max(1, n * 7 // 10), max(1, n // 10)
        for t, item in enumerate(chosen):
            split = "train" if t < n_train else "validation" if t < n_train + n_val else "test"
            rating = 5.0 if item in half else 2.0
            rows.append((str(u), str(item), rating, 1000 + t, split))
    return rows


@pytest.fixture
def tiny_prepared(tmp_path: Path) -> Path:
    return write_prepared(tmp_path / "prepared", synthetic_interactions())


def test_helper_writes_the_contract_columns(tiny_prepared: Path) -> None:
    q = pd.read_parquet(tiny_prepared / "queries.parquet")
    assert list(q["split"].unique()) == ["test", "validation"]
    assert set(q.columns) >= {"query_id", "user_id", "history_item_ids", "ground_truth", "exclude"}
    items = pd.read_parquet(tiny_prepared / "items.parquet")
    assert items["item_id"].tolist() == sorted(items["item_id"].tolist(), key=int)
