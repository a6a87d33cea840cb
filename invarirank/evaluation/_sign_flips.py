"""The paired sign-flip permutation test of :mod:`._comparisons` (its docstring states the test): the flip vectors,
drawn or enumerated, and the statistics' counts over them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

#: at most this many paired queries: all 2^n sign vectors are enumerated (an exact p)
EXACT_MAX_QUERIES = 16
_TIE = 1e-9  # relative tolerance of T(s) >= T(1)
_CHUNK_CELLS = 1 << 20  # flip-vector cells per block (8 MB of float64)


class Pooled(NamedTuple):
    """A statistic of pooled per-query sums: ``stat`` maps totals (rows × c) to one value per row."""

    a: np.ndarray  # Q × c contributions of method a (0 on unpaired queries)
    b: np.ndarray
    stat: Callable[[np.ndarray], np.ndarray]
    n: int  # paired queries

    def observed(self) -> float:
        """The statistic of a's pooled contributions minus b's: the difference the test and the interval are of."""
        return float(self.stat(self.a.sum(axis=0)[None])[0] - self.stat(self.b.sum(axis=0)[None])[0])


def _flip_blocks(n: int, n_permutations: int, seed: int) -> tuple[Iterator[np.ndarray], int, bool]:
    """Blocks of flip vectors over n queries (rows of 0/1 as uint8, 1 = flip the query's sign, i.e. swap the two
    methods there), their number, and whether they are all 2^n of them (row 0, no flip, is the identity)."""
    if n <= EXACT_MAX_QUERIES:
        codes = np.arange(1 << n, dtype=np.int64)[:, None]
        return iter([((codes >> np.arange(n)) & 1).astype(np.uint8)]), 1 << n, True

    def draw() -> Iterator[np.ndarray]:
        from .._orders import rng_for  # (hashlib) only when flips are drawn

        rng = rng_for(seed, "sign flips")
        rows = max(1, _CHUNK_CELLS // n)
        for r0 in range(0, n_permutations, rows):
            size = (min(rows, n_permutations - r0), (n + 7) // 8)
            yield np.unpackbits(rng.integers(0, 256, size=size, dtype=np.uint8), axis=1, count=n)

    return draw(), n_permutations, False


def permutation_p(
    n: int, D: np.ndarray, pooled: Sequence[Pooled], n_permutations: int, seed: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(p of each column of D, p of each pooled statistic, exact)`` over the same flip vectors of n queries.

    A column's statistic is |sum_q s_q d_q| = |sum d - 2 F·d| for flips F (undefined queries hold 0, so flipping
    them changes nothing); a pooled statistic's is |stat(A + F·(b - a)) - stat(B - F·(b - a))| with A, B the
    totals of a and b. One matrix product per block serves all columns and statistics: in float64, or for drawn
    flips without pooled statistics first in float32 (half the time; see :func:`_float32_sums`).
    """
    total_d = D.sum(axis=0)
    threshold = np.abs(total_d) - _TIE * np.abs(D).sum(axis=0)
    totals = [(pl.a.sum(axis=0), pl.b.sum(axis=0)) for pl in pooled]
    observed = [abs(pl.observed()) for pl in pooled]
    pool_threshold = [t * (1 - _TIE) - 1e-12 for t in observed]  # deviations lie in [0, 1]
    delta = np.hstack([D] + [pl.b - pl.a for pl in pooled])
    moving = np.flatnonzero(np.any(delta != 0, axis=0))  # columns the flips can change
    widths = np.cumsum([D.shape[1]] + [pl.a.shape[1] for pl in pooled])
    count = np.zeros(D.shape[1])
    pool_count = np.zeros(len(pooled))
    blocks, total, exact = _flip_blocks(n, n_permutations, seed)
    buffers: dict[type, np.ndarray] = {}  # one per float type for every block: fresh pages cost more than the copy
    for bits in blocks:
        X = np.zeros((len(bits), delta.shape[1]))
        if not exact and not pooled and moving.size:
            X[:, moving] = _float32_sums(bits, delta[:, moving], total_d[moving], threshold[moving], buffers)
        else:
            X[:, moving] = _floats(bits, np.float64, buffers) @ delta[:, moving]
        count += (np.abs(total_d - 2.0 * X[:, : D.shape[1]]) >= threshold).sum(axis=0)
        for i, (pl, (ta, tb)) in enumerate(zip(pooled, totals)):
            shift = X[:, widths[i] : widths[i + 1]]
            stat = pl.stat(ta + shift) - pl.stat(tb - shift)
            pool_count[i] += np.count_nonzero(np.abs(stat) >= pool_threshold[i])
    if exact:
        return count / total, pool_count / total, True
    return (1.0 + count) / (1.0 + total), (1.0 + pool_count) / (1.0 + total), False


def _floats(bits: np.ndarray, dtype: type, buffers: dict[type, np.ndarray]) -> np.ndarray:
    """``bits`` as ``dtype``, in a buffer kept in ``buffers`` for the next block."""
    buf = buffers.get(dtype)
    if buf is None or buf.shape[0] < len(bits) or buf.shape[1] != bits.shape[1]:
        buf = buffers[dtype] = np.empty(bits.shape, dtype=dtype)
    out = buf[: len(bits)]
    np.copyto(out, bits)
    return out


def _float32_sums(
    bits: np.ndarray, d: np.ndarray, total: np.ndarray, threshold: np.ndarray, buffers: dict[type, np.ndarray]
) -> np.ndarray:
    """``F·d`` for the flips ``bits`` (rows x n, 0/1) and columns ``d`` (n x c), as float64: from one float32
    product, except the rows where that product leaves the test |total - 2 F·d| >= ``threshold`` undecided, which
    take the float64 product of their own.

    The float32 sum of each column is within e = (2^-24 + γ) sum_q |d_q| of the exact one (the columns rounded to
    float32, then any summation order of n products, γ = n 2^-24 / (1 - n 2^-24)); so a statistic farther than twice
    that from the threshold (doubled, with the float64 products' own γ_n of the sum) is on the side the float64 test
    puts it, and the counts are the same. The threshold's tie tolerance (1e-9 of sum |d|) is far above float64's
    rounding, and a statistic tied with the observed one is within float32's bound: such rows are recomputed."""
    n = d.shape[0]
    eps32 = 2.0**-24
    gamma = n * eps32 / (1.0 - n * eps32)
    scale = np.abs(d).sum(axis=0)
    margin = 4.0 * (eps32 + gamma * (1.0 + eps32)) * scale + (8.0 + 4.0 * n) * 2.0**-53 * scale
    X = (_floats(bits, np.float32, buffers) @ d.astype(np.float32)).astype(np.float64)
    near = (np.abs(np.abs(total - 2.0 * X) - threshold) <= margin).any(axis=1)
    if near.any():
        rows = np.flatnonzero(near)
        X[rows] = bits[rows].astype(np.float64) @ d
    return X
