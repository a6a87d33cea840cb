"""Synthetic candidate sets for the simulated scorer (tests, the teaching lab and the lab's grid runs).

They are *not* data: items are made-up films ``Film 017 (1994), genres: Drama`` drawn from a catalogue of
``catalogue`` items, each query has ``k`` distinct candidates in a seeded order, of which ``relevant`` are its
ground truth, and a short made-up history. Everything is seeded from ``seed`` through
:func:`invarirank._orders.rng_for`, so the same arguments give byte-identical files. The simulated scorer
(:mod:`invarirank.llm._simulated`) then decides how a "model" ranks them: a latent utility per (query, item), a
bonus for ground-truth items, a position effect of a chosen shape and strength, and order-dependent noise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .._orders import rng_for
from ..candidates import write_candidates
from ..types import HistoryEntry, Item, Query

GENRES = ("Action", "Comedy", "Drama", "Romance", "Sci-Fi", "Thriller", "Animation", "Documentary")


def _catalogue(n: int, seed: int) -> list[Item]:
    """The seeded catalogue of ``n`` made-up films (ids ``f000``…, one or two genres each)."""
    rng = rng_for(seed, "lab", "catalogue")
    items = []
    for i in range(n):
        g = rng.choice(len(GENRES), size=int(rng.integers(1, 3)), replace=False)
        items.append(
            Item(
                item_id=f"f{i:03d}",
                title=f"Film {i:03d}",
                year=int(rng.integers(1950, 2020)),
                genres=tuple(GENRES[j] for j in sorted(g)),
            )
        )
    return items


def synthetic_queries(
    n_test: int = 40,
    n_validation: int = 40,
    k: int = 10,
    *,
    relevant: int = 1,
    history: int = 5,
    catalogue: int = 200,
    seed: int = 0,
) -> list[Query]:
    """``n_test`` test queries then ``n_validation`` validation queries, each with ``k`` candidates
    (retrieval order = a seeded shuffle) of which ``relevant`` are the ground truth."""
    if not 1 <= relevant <= k <= catalogue - history:
        raise ValueError("need 1 <= relevant <= k <= catalogue - history")
    items = _catalogue(catalogue, seed)
    out: list[Query] = []
    for split, n, prefix in (("test", n_test, "u"), ("validation", n_validation, "v")):
        for u in range(n):
            rng = rng_for(seed, "lab", split, u)
            picked = rng.choice(catalogue, size=k + history, replace=False)
            cands = tuple(items[int(i)] for i in picked[:k])
            truth = tuple(
                sorted(c.item_id for c in rng.choice(np.array(cands, dtype=object), size=relevant, replace=False))
            )
            hist = tuple(HistoryEntry(items[int(i)], float(rng.integers(1, 6))) for i in picked[k:])
            out.append(
                Query(
                    query_id=f"{prefix}{u:03d}",
                    user_id=f"{u:03d}",
                    history=hist,
                    candidates=cands,
                    ground_truth=truth,
                    split=split,
                )
            )
    return out


def write_synthetic_candidates(path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`synthetic_queries` (same arguments) as a candidates file; returns the path."""
    p = Path(path)
    write_candidates(p, synthetic_queries(**kwargs))
    return p
