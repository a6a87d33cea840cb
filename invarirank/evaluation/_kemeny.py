"""Exact weighted Kemeny aggregation for small K: the minimum of D(σ) over all K! orders (the metrics chapter's D).

Dynamic programming over subsets, in exact integer win counts: let f(S) be the least contradicting mass among the
pairs inside S when the items of S fill the top |S| places. Putting item j directly below S adds the rows that
prefer j to each item of S, so

    f(∅) = 0,   f(S ∪ {j}) = min_{j ∈ S ∪ {j}} f(S) + sum_{s ∈ S} W[j, s],   M·D* = f(all items).

That is O(2^K · K) per query (K = 10: ~10⁴ operations) and vectorised over queries and subsets. Reported next to
GPI (``gpi_exact``) so the local search's optimality gap is visible: GPI >= exact, always.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvariRankError

MAX_EXACT_K = 16
"""The largest K the exact search accepts (2^16 subsets; memory grows as K·2^K per query)."""

_POPCOUNT_CACHE: dict[int, list[np.ndarray]] = {}


def _layers(K: int) -> list[np.ndarray]:
    if K not in _POPCOUNT_CACHE:
        masks = np.arange(1 << K, dtype=np.int64)
        pop = np.zeros(1 << K, dtype=np.int64)
        for b in range(K):
            pop += (masks >> b) & 1
        _POPCOUNT_CACHE[K] = [masks[pop == L] for L in range(K + 1)]
    return _POPCOUNT_CACHE[K]


def kemeny_mass(W: np.ndarray) -> np.ndarray:
    """Minimum over all orders of M·D(σ) = sum_{a<b} W[σ_b, σ_a], for G win matrices (G x K x K ints)."""
    W = np.asarray(W, dtype=np.int64)
    G, K, _ = W.shape
    if K > MAX_EXACT_K:
        raise InvariRankError(f"exact Kemeny: K = {K} is above the limit {MAX_EXACT_K}")
    if K < 2 or G == 0:
        return np.zeros(G, dtype=np.int64)
    out = np.empty(G, dtype=np.int64)
    chunk = max(1, (1 << 22) // (K << K))
    layers = _layers(K)
    for g0 in range(0, G, chunk):
        Wc = W[g0 : g0 + chunk]
        n = len(Wc)
        # cost[g, j, S] = sum_{s in S} W[g, j, s]; bit b of S is item b
        cost = np.zeros((n, K, 1), dtype=np.int64)
        for b in range(K):
            cost = np.concatenate([cost, cost + Wc[:, :, b, None]], axis=2)
        f = np.zeros((n, 1 << K), dtype=np.int64)
        for L in range(1, K + 1):
            masks = layers[L]
            best = None
            for j in range(K):
                has = ((masks >> j) & 1).astype(bool)
                prev = masks[has] ^ (1 << j)
                cand = f[:, prev] + cost[:, j, prev]
                if best is None:
                    best = np.full((n, len(masks)), np.iinfo(np.int64).max, dtype=np.int64)
                best[:, has] = np.minimum(best[:, has], cand)
            f[:, masks] = best
        out[g0 : g0 + n] = f[:, (1 << K) - 1]
    return out


def gpi_exact(outputs: Any) -> float | None:
    """The exact Kemeny optimum of one query as a GPI value: min_σ D(σ) / C(K, 2) (None when M < 2 or K < 2).
    ``outputs``: the rankings of its rows (lists, best first) or rows (dicts / DataFrame) with ``output``."""
    from ._consistency import win_counts

    items, W = win_counts(outputs)
    K = len(items)
    M = int(W[0, 1] + W[1, 0]) if K >= 2 else 0
    if M < 2 or K < 2:
        return None
    return float(kemeny_mass(W[None])[0] / (M * (K * (K - 1) // 2)))
