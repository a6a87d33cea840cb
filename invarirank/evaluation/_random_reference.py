"""The uniformly random order's expected PPI, GPI and LOC, from what they depend on.

The random ranker's output is a uniformly random permutation of the candidates, drawn for each row independently of
the presented order. For a pair of candidates (i, j), the rows that put i above j are then independent fair coin
flips whatever the presented orders, which gives two metrics exactly and bounds the third:

* **LOC** = 0 exactly (M >= 2, K >= 2): LOC = 1 - 2 sum_{i<j} W_ij (M - W_ij) / (C(M, 2) C(K, 2)) is linear in
  W_ij (M - W_ij), and E[W (M - W)] = M(M - 1)/4 for W ~ Binomial(M, 1/2).
* **PPI** exactly: the presented orders put the rows of pair (i, j) in cells (bucket of i, bucket of j) of sizes
  n_1..n_L; the cells' win rates X_c = Binomial(n_c, 1/2)/n_c are independent, and X -> 1 - X leaves their joint
  law unchanged, so E[max X - min X] = 2 E[max X] - 1 with

      E[max X] = sum_{t>=1} (v_t - v_{t-1}) (1 - prod_c P(X_c <= v_{t-1})),

  v_0 = 0 < v_1 < ... < v_T = 1 the union of the rates' supports. It depends only on the multiset of cell sizes,
  so it is computed once per multiset (:func:`expected_range`, cached). Which pairs count (those seen in two cells
  or more) depends on the presented orders only, so a query's expected PPI is the mean of its pairs' expectations.
* **GPI** has no closed form, but its law depends only on K and M (relabelling the items leaves the random win
  counts' law unchanged), so one estimate serves every query of a (K, M). Every order σ has
  M D(σ) >= sum_{i<j} min(W_ij, W_ji), whose expectation is exactly C(K, 2) E[min(B, M - B)], B ~ Binomial(M, 1/2);
  the local search's excess over that bound is averaged over ``draws`` seeded draws of M random outputs
  (:func:`expected_gpi`). The bound is a control variate: at M = 20 the excess's standard deviation is about a
  fifth of GPI's (0.0052 against 0.029 at K = 5, 0.0021 against 0.0105 at K = 25, 0.0015 against 0.0074 at
  K = 50; measured on 1,000 draws each), so N draws have a Monte-Carlo standard error of 0.0021 / sqrt(N) at
  K = 25 (6.6e-5 for N = 1,000), where N draws of GPI itself would have 0.0105 / sqrt(N).

``tests/evaluation/test_random_reference.py`` checks each of these against the average over every possible output
(small K and M) and against independent random draws evaluated like a method's rows.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from ._consistency import gpi_local_search
from ._pair_cells import popcount, row_masks

#: GPI search work per chunk of draws (K x K cells of win matrices), as in the engine
_CHUNK_CELLS = 1 << 20
#: (pair, cell) counts per chunk of queries when counting the rows of each pair's cells for PPI
_PAIR_CELLS = 1 << 20
#: the most multisets of cell sizes numbered in mixed radix (a table of that many flags marks those present)
_MIXED_CODES = 1 << 22
#: cells of a chunk of the GPI draws' K x K comparisons
_COUNT_CELLS = 1 << 22


@functools.cache
def expected_range(sizes: tuple[int, ...]) -> float:
    """E[max - min] of independent win rates Binomial(n, 1/2)/n, one per cell size n in ``sizes`` (all >= 1, at
    least two: PPI's spread of one pair)."""
    if len(sizes) < 2 or min(sizes) < 1:
        raise ValueError(f"expected at least two cell sizes >= 1, got {sizes}")
    L = math.lcm(*sizes)  # rates k/n on the integer grid k (L/n) / L: exact breakpoints
    cdfs = [_binomial_cdf(n) for n in sizes]
    grid = sorted({k * (L // n) for n in sizes for k in range(n + 1)})
    e_max = 0.0
    for prev, cur in zip(grid, grid[1:]):
        below = 1.0
        for n, cdf in zip(sizes, cdfs):
            below *= cdf[prev * n // L]  # P(X_c <= prev / L)
        e_max += (cur - prev) / L * (1.0 - below)
    return 2.0 * e_max - 1.0


@functools.cache
def _binomial_cdf(n: int) -> list[float]:
    """P(Binomial(n, 1/2) <= k) for k = 0..n, as Python floats (the doubles of the cumulative integer sums over
    2^n: the same values, one per size, whatever multiset asks)."""
    return (np.cumsum([math.comb(n, k) for k in range(n + 1)]) / 2.0**n).tolist()


def expected_ppi(positions: np.ndarray, buckets: int) -> np.ndarray:
    """Expected PPI of a uniformly random output for each of G queries with the same K and M.

    ``positions``: G x M x K, the 0-based presented position of item i (any fixed labelling of a query's
    candidates) in each row; bucket(p) = min(floor(p B / K), B - 1) as in PPI. NaN for a query none of whose pairs
    is seen in two cells.
    """
    G, M, K = positions.shape
    B = int(buckets)
    out = np.full(G, np.nan)
    if K < 2 or G == 0:
        return out
    iu, ju = np.triu_indices(K, 1)
    B2 = B * B
    network = _sorting_network(B2)
    # the i-th smallest of B^2 sizes summing to M is at most M / (B^2 - i): its digit's radix
    digits = [M // (B2 - i) + 1 for i in range(B2 - 1)]
    radix = digits if math.prod(digits) <= _MIXED_CODES else None
    table = np.zeros(math.prod(digits) if radix is not None else 0)  # a multiset's expected spread, once known
    known = np.zeros(len(table), dtype=bool)
    of_position = np.minimum((np.arange(K) * B) // K, B - 1).astype(np.int8 if B <= 127 else np.int64)
    bucket = of_position[positions]  # G x M x K
    labels = np.arange(B, dtype=bucket.dtype)[:, None]
    step = max(1, _PAIR_CELLS // (len(iu) * B2 * -(-M // 64)))  # queries per chunk
    for g0 in range(0, G, step):
        bk = bucket[g0 : g0 + step]
        n = len(bk)
        masks = row_masks((bk[:, :, None, :] == labels).reshape(n, M, B * K)).reshape(-1, n, B, K)
        masks = masks.transpose(0, 2, 1, 3)  # W x B x n x K: the rows putting item i in bucket a
        first, second = np.take(masks, iu, axis=3), np.take(masks, ju, axis=3)  # W x B x n x pairs
        # the rows of pair (i, j) in cell (a, c): those where i is in bucket a and j in bucket c (exact counts)
        cols = [popcount(first[:, a] & second[:, c]) for a in range(B) for c in range(B)]
        for i, j in network:  # each pair's cell sizes in ascending order
            cols[i], cols[j] = np.minimum(cols[i], cols[j]), np.maximum(cols[i], cols[j])
        # the multiset of cell sizes of each pair as one whole number: in mixed radix from the sorted sizes when the
        # numbers are few (a table marks the ones present), else base-(M + 1) digits when a double holds them
        if radix is not None:
            code = np.zeros((n, len(iu)), dtype=np.int64)
            for col, r in zip(cols, radix):  # the largest size is M minus the others
                code *= r
                code += col
            present = np.zeros(len(table), dtype=bool)
            present[code] = True
            new = np.flatnonzero(present & ~known)  # the multisets first met in this chunk get their spread
            table[new] = [_spread(_mixed_digits(x, radix, M)) for x in new.tolist()]
            known[new] = True
            spread = table[code]
        elif (M + 1) ** B2 < 2**53:
            whole = np.zeros((n, len(iu)))
            for col in cols:  # Horner's rule: every step an exact whole number
                whole *= M + 1
                whole += col
            uniq, inverse = np.unique(whole, return_inverse=True)
            keys = np.array([_digits(int(x), M + 1, B2) for x in uniq.tolist()], dtype=np.int64)
        else:
            cells = np.stack([np.asarray(col, dtype=np.int64) for col in cols], axis=-1).reshape(-1, B2)
            keys, inverse = np.unique(cells, axis=0, return_inverse=True)
        if radix is None:  # each distinct multiset's spread, to every pair that has it
            spread = np.array([_spread(row) for row in keys.tolist()])[inverse.ravel()].reshape(n, len(iu))
        seen = ~np.isnan(spread)
        pairs = seen.sum(axis=1)
        total = np.where(seen, spread, 0.0).sum(axis=1)
        out[g0 : g0 + n] = np.divide(total, pairs, out=np.full(n, np.nan), where=pairs > 0)
    return out


@functools.cache
def _sorting_network(n: int) -> tuple[tuple[int, int], ...]:
    """Batcher's odd-even merge sort of ``n`` values as compare-exchange pairs (i, j), i < j: after each pair's
    (min, max) goes to (i, j) in turn, the values are ascending. Built for the next power of two, keeping the pairs
    inside 0..n-1 (the missing values read as +inf)."""
    size = 1 << max(0, (n - 1).bit_length())
    out = []
    p = 1
    while p < size:
        k = p
        while k >= 1:
            for j in range(k % p, size - k, 2 * k):
                for i in range(min(k, size - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < n:
                        out.append((i + j, i + j + k))
            k //= 2
        p *= 2
    return tuple(out)


def _mixed_digits(code: int, radix: Sequence[int], total: int) -> list[int]:
    """The sorted sizes of a mixed-radix ``code`` (digits of ``radix``, most significant first), with the last size
    (the largest) the ``total`` minus the others."""
    out = []
    for r in reversed(radix):
        code, d = divmod(code, r)
        out.append(d)
    out.reverse()
    return out + [total - sum(out)]


def _digits(code: int, base: int, n: int) -> list[int]:
    """The ``n`` base-``base`` digits of ``code``, most significant first."""
    out = []
    for _ in range(n):
        code, d = divmod(code, base)
        out.append(d)
    return out[::-1]


def _spread(counts: Sequence[int]) -> float:
    sizes = tuple(c for c in counts if c > 0)
    return expected_range(sizes) if len(sizes) >= 2 else float("nan")


def gpi_bound_expectation(K: int, M: int) -> float:
    """E[sum_{i<j} min(W_ij, W_ji)] / (M C(K, 2)) for random outputs: the expected lower bound of GPI."""
    if M < 1 or K < 2:
        raise ValueError(f"expected K >= 2 and M >= 1, got K={K}, M={M}")
    return sum(math.comb(M, b) * min(b, M - b) for b in range(M + 1)) / (2**M * M)


@functools.lru_cache(maxsize=64)
def expected_gpi(K: int, M: int, draws: int, seed: int) -> float:
    """The random order's expected GPI at K candidates and M rows (K >= 2, M >= 2): the exact expectation of the
    bound plus the mean excess of GPI's local search over it in ``draws`` seeded draws (numpy ``default_rng`` of
    ``SeedSequence([seed, K, M])``: each draw is M rows of ``argsort`` of uniform numbers, drawn in sequence)."""
    if K < 2 or M < 2 or draws < 1:
        raise ValueError(f"expected K >= 2, M >= 2 and draws >= 1, got K={K}, M={M}, draws={draws}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, K, M]))
    iu, ju = np.triu_indices(K, 1)
    pairs = len(iu)
    step = max(1, _CHUNK_CELLS // (K * K))
    # narrow ranks and counts: the K x K comparisons of a row and their sums over a draw's M rows move less memory
    small = np.int8 if K <= 128 else np.int16 if K <= (1 << 15) else np.int64
    count = np.uint8 if M < (1 << 8) else np.uint16 if M < (1 << 16) else np.int64
    upper = iu * K + ju
    sub = max(1, _COUNT_CELLS // (M * K * K))  # draws per block of comparisons
    excess = 0
    for d0 in range(0, draws, step):
        n = min(step, draws - d0)
        rank = np.argsort(rng.random((n * M, K)), axis=1).astype(small)  # a uniformly random permutation per row
        W = np.empty((n, K * K), dtype=count)  # the draws' whole win matrices (0 on the diagonal)
        for s0 in range(0, n, sub):  # [i, j]: i above j in the row, summed over each draw's rows
            r = rank[s0 * M : (s0 + sub) * M]
            W[s0 : s0 + sub] = (
                (r[:, :, None] < r[:, None, :]).view(np.uint8).reshape(-1, M, K * K).sum(axis=1, dtype=count)
            )
        w_up = W[:, upper].astype(np.int64)  # pairs i < j
        _, mass = gpi_local_search(W.reshape(n, K, K))
        excess += int(mass.sum() - np.minimum(w_up, M - w_up).sum())  # exact integers
    return gpi_bound_expectation(K, M) + excess / (draws * M * pairs)
