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


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.uint8, np.int64])
def test_the_search_does_not_depend_on_the_integer_type_nor_on_a_shift(dtype):
    # the search narrows its integers to what the win counts need; the same orders and masses from any type, and
    # a constant added to every count (far beyond int16) moves every order's mass by the same amount only
    rng = np.random.default_rng(3)
    K, M, G = 12, 30, 40
    w_up = rng.integers(0, M + 1, size=(G, K * (K - 1) // 2))
    W = win_matrix(w_up, np.full(G, M), K)
    order, mass = gpi_local_search(W)
    order_t, mass_t = gpi_local_search(W.astype(dtype))
    assert np.array_equal(order_t, order) and np.array_equal(mass_t, mass)
    shift = 1 << 40
    order_s, mass_s = gpi_local_search(W + shift)
    assert np.array_equal(order_s, order)
    assert np.array_equal(mass_s, mass + shift * K * (K - 1) // 2)
