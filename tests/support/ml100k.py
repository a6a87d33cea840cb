"""Real ML-100K queries for the token-level tests (issue 19), read straight from the cached RecBole files
(``invarirank assets`` fetches them): real titles, years, genres and user histories, no first stage.

:func:`ml100k_queries` gives ``n`` queries: user ``u``'s ``history`` newest rated items (newest first) and ``k``
candidates drawn (seeded) from the items that user never rated; the ground truth is the first candidate. Seeded and
deterministic: the same arguments give the same queries on every machine.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from invarirank.types import HistoryEntry, Item, Query

__all__ = ["ml100k_queries", "ml100k_items"]


def _folder() -> Path:
    from invarirank.assets import ml100k_dir

    return ml100k_dir()


@lru_cache(maxsize=1)
def ml100k_items() -> dict[str, Item]:
    """Every ML-100K item by id (title, year, genres as RecBole writes them)."""
    items: dict[str, Item] = {}
    lines = (_folder() / "ml-100k.item").read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    for line in lines:
        iid, title, year, genres = (line.split("\t") + ["", "", ""])[:4]
        items[iid] = Item(iid, title, int(year) if year.strip().isdigit() else None, tuple(genres.split()))
    return items


@lru_cache(maxsize=1)
def _ratings() -> dict[str, list[tuple[float, str, float]]]:
    by_user: dict[str, list[tuple[float, str, float]]] = {}
    for line in (_folder() / "ml-100k.inter").read_text(encoding="utf-8").splitlines()[1:]:
        user, item, rating, ts = line.split("\t")
        by_user.setdefault(user, []).append((float(ts), item, float(rating)))
    return by_user


def ml100k_queries(n: int = 2, k: int = 6, history: int = 20, *, seed: int = 0) -> list[Query]:
    """``n`` real ML-100K queries with ``k`` candidates each (see the module docstring)."""
    import numpy as np

    items = ml100k_items()
    ratings = _ratings()
    rng = np.random.default_rng(seed)
    users = sorted(ratings, key=int)
    picked = rng.choice(len(users), size=n, replace=False)
    ids = sorted(items, key=int)
    out = []
    for u in (users[int(i)] for i in picked):
        rows = sorted(ratings[u], key=lambda r: (-r[0], int(r[1])))
        seen = {r[1] for r in rows}
        hist = tuple(HistoryEntry(items[r[1]], r[2]) for r in rows[:history])
        pool = [i for i in ids if i not in seen]
        cands = tuple(items[pool[int(j)]] for j in rng.choice(len(pool), size=k, replace=False))
        out.append(Query(f"u{u}", u, hist, cands, (cands[0].item_id,)))
    return out
