"""GPI's local search takes the same steps in its narrow (int32) and wide (int64) arithmetic: the orders and masses
equal those of the search written plainly from :func:`swap_deltas`, for small and very large win counts."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.evaluation._consistency import contradiction_mass, gpi_local_search, swap_deltas, win_matrix


def _plain_search(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(-W.sum(axis=2), axis=1, kind="stable")
    for g in range(len(W)):
        while True:
            d = swap_deltas(W[g : g + 1], order[g : g + 1])[0]
            best = int(d.argmin())
            if d.flat[best] >= 0:
                break
            a, b = divmod(best, W.shape[1])
            order[g, [a, b]] = order[g, [b, a]]
    return order, contradiction_mass(W, order)


@pytest.mark.parametrize(("K", "M"), [(6, 20), (12, 7), (25, 20), (9, 10**8)])
def test_the_search_matches_the_plain_one(K, M):
    rng = np.random.default_rng(K * 1000 + M % 997)
    n = 40
    w_up = rng.integers(0, M + 1, size=(n, K * (K - 1) // 2))
    w_up[:5] = M // 2  # ties everywhere
    W = win_matrix(w_up, np.full(n, M), K)
    order, mass = gpi_local_search(W)
    plain_order, plain_mass = _plain_search(W)
    assert np.array_equal(order, plain_order) and np.array_equal(mass, plain_mass)
