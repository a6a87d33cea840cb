"""Percentile bootstrap confidence intervals over queries (seeded, deterministic).

A replicate draws Q queries with replacement from a method's Q queries (``numpy.random.default_rng(seed)``,
one fresh generator per method, so methods over the same queries get the same resamples: paired intervals) and
recomputes each statistic from per-query sums:

- row-averaged metrics (HR, nDCG, recall, MRR): sum of the drawn queries' row sums / their rows;
- query-averaged metrics (PPI, GPI, LOC): mean over the drawn queries that have a value (a replicate without one
  is dropped);
- exposure deviations: the pooled per-position sums of the drawn queries.

The interval is [2.5th, 97.5th] percentile of the replicates (numpy's linear interpolation) for level 0.95
(:func:`percentile_interval`), except for the exposure deviations (MAD and maximum deviation), which take the
**basic** (pivotal) interval [2θ - q97.5, 2θ - q2.5] of the estimate θ, clipped at 0 (:func:`basic_interval`). A
deviation of a noisy curve from a flat line is biased upward (noise only adds deviation), and a resample adds the
noise again: the percentile interval sits above the estimate by about its bias and, measured on simulated rankers
with a known curve, covers a true exposure MAD of 0.01 in none of 300 draws (Q = 40, M = 20, K = 25), where the
basic interval covers it in 87% (``python -m benchmarks.exposure_intervals``, ``book/data/exposure_intervals.json``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator

import numpy as np


def resample_counts(n_queries: int, n_boot: int, seed: int, chunk_cells: int = 1 << 22) -> Iterator[np.ndarray]:
    """Yield blocks of the B x Q matrix ``C[b, q]`` = how often query q is drawn in replicate b."""
    rng = np.random.default_rng(seed)
    rows = max(1, chunk_cells // max(1, n_queries))
    for b0 in range(0, n_boot, rows):
        b = min(rows, n_boot - b0)
        idx = rng.integers(0, n_queries, size=(b, n_queries))
        idx += np.arange(b)[:, None] * n_queries  # (in place: one array of draws fewer to fault in)
        yield np.bincount(idx.ravel(), minlength=b * n_queries).reshape(b, n_queries).astype(np.float64)


def totals(counts: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``Y = counts @ columns`` (B x Q times Q x S) with the bits of the sum taken query by query in query order, on
    every processor. A BLAS product's summation order depends on the kernel OpenBLAS picks for the processor (or
    ``OPENBLAS_CORETYPE``), and moved the last binary digit of committed intervals between two machines;
    elementwise products and sums are exactly rounded whatever the SIMD width.

    Two kinds of column need no loop: a column of whole numbers (counts, rows, hits, 0/1 flags) whose every total
    stays below 2^53 is summed exactly in any order (every product and partial sum is an integer that a double
    holds), so one BLAS product gives the loop's bits; and a column equal to an earlier one gets that one's totals.
    The others take Q passes over a B x S block (measured on a busy 2-core machine: about 10 ms for 1,000
    replicates of 40 queries and 60 columns, 0.1 s for 1,000 queries and 96 columns)."""
    return _Counts(counts).totals(columns)


class _Counts:
    """Resample counts (B x Q) with what :func:`totals` asks of them computed once, however many column blocks they
    are summed against (one evaluation sums the same counts for each method, each reference and the comparisons):
    whether they are whole numbers, their largest row sum (the bound on a whole column's totals) and their
    transpose laid out for the query-by-query loop (made on first need)."""

    __slots__ = ("c", "whole", "row_sum", "_c_t", "_c32")

    def __init__(self, counts: np.ndarray, *, whole: bool | None = None) -> None:
        self.c = np.asarray(counts, dtype=np.float64)
        c = self.c
        if whole is None:
            whole = c.size > 0 and np.array_equal(c, np.trunc(c))
        self.whole = bool(whole and c.size > 0)
        self.row_sum = float(np.abs(c).sum(axis=1).max()) if self.whole else 0.0
        self._c_t: np.ndarray | None = None
        self._c32: np.ndarray | None = None

    def c_t(self) -> np.ndarray:
        """The counts Q x B, contiguous: each pass of the loop reads one query's row."""
        if self._c_t is None:
            self._c_t = np.ascontiguousarray(self.c.T)
        return self._c_t

    def totals(self, columns: np.ndarray) -> np.ndarray:
        """:func:`totals` of these counts and ``columns``."""
        c = self.c
        v = np.asarray(columns, dtype=np.float64)
        vector = v.ndim == 1
        v = v[:, None] if vector else v
        out = np.zeros((c.shape[0], v.shape[1]))
        whole = self.whole_columns(v)
        if whole.any():
            # exact (see totals); + 0.0: a zero total is +0.0, as in the loop. Below 2^24 a float holds every product
            # and partial sum too: the float32 product, half the time
            narrow = np.zeros_like(whole)
            narrow[whole] = self.row_sum * np.abs(v[:, whole]).max(axis=0) < 2.0**24
            if narrow.any():
                if self._c32 is None:
                    self._c32 = c.astype(np.float32)
                out[:, narrow] = (self._c32 @ v[:, narrow].astype(np.float32)).astype(np.float64) + 0.0
            wide = whole & ~narrow
            if wide.any():
                out[:, wide] = c @ v[:, wide] + 0.0
        loop: list[int] = []  # the columns summed query by query
        same: list[tuple[int, int]] = []  # (an earlier equal column, this one)
        first: dict[bytes, int] = {}
        for j in np.flatnonzero(~whole).tolist():
            k = first.setdefault(v[:, j].tobytes(), j)
            if k == j:
                loop.append(j)
            else:
                same.append((k, j))
        if loop:  # laid out S x B: each pass reads a contiguous row of counts and writes contiguous rows
            w = np.ascontiguousarray(v[:, loop])
            c_t = self.c_t()
            acc = np.zeros((len(loop), c.shape[0]))
            step = np.empty_like(acc)
            for q in range(w.shape[0]):
                np.multiply(w[q][:, None], c_t[q], out=step)
                acc += step
            out[:, loop] = acc.T
        for k, j in same:
            out[:, j] = out[:, k]
        return out[:, 0] if vector else out

    def whole_columns(self, v: np.ndarray) -> np.ndarray:
        """Which columns of ``v`` hold whole numbers whose totals against these whole-number counts stay below 2^53
        in magnitude, every partial sum included (none when the counts are not whole numbers)."""
        if v.size == 0 or not self.whole:
            return np.zeros(v.shape[1], dtype=bool)
        with np.errstate(invalid="ignore"):
            bound = self.row_sum * np.abs(v).max(axis=0)  # NaN for a NaN column
            return (bound < 2.0**53) & np.all(v == np.trunc(v), axis=0)


def _whole_columns(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Which columns of ``v`` hold whole numbers whose totals against the whole-number ``c`` stay below 2^53 in
    magnitude, every partial sum included (none when ``c`` is not whole numbers)."""
    return _Counts(c).whole_columns(v)


def ratio_replicates(counts: np.ndarray, numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """sum_q C[b, q] numerator[q] / sum_q C[b, q] denominator[q] per replicate (NaN when the denominator is 0)."""
    num = totals(counts, numerator)
    den = totals(counts, denominator)
    return np.divide(num, den, out=np.full_like(num, np.nan), where=den > 0)


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> list[float] | None:
    """[low, high] percentile interval of the finite replicates (None when there are none)."""
    r = np.asarray(replicates, dtype=np.float64)
    r = r[np.isfinite(r)]
    if r.size == 0:
        return None
    r = np.sort(r)
    return [_interpolate(float(r[lo]), float(r[hi]), t) for lo, hi, t in quantile_ranks(len(r), level)]


def basic_interval(
    replicates: np.ndarray, estimate: float, level: float = 0.95, lower: float | None = 0.0
) -> list[float] | None:
    """The basic (pivotal) bootstrap interval [2θ - q_high, 2θ - q_low] of the estimate θ, where [q_low, q_high] is
    :func:`percentile_interval` of the finite replicates: it reflects the replicates' shift from θ (their bias)
    instead of carrying it, so an estimate that is biased upward gets an interval below the percentile one. Both
    ends are raised to ``lower`` when given (default 0: a deviation cannot be negative). None when no replicate is
    finite. For replicates symmetric about θ it equals the percentile interval."""
    q = percentile_interval(replicates, level)
    if q is None:
        return None
    low, high = 2.0 * float(estimate) - q[1], 2.0 * float(estimate) - q[0]
    return [low, high] if lower is None else [max(lower, low), max(lower, high)]


def quantile_ranks(n: int, level: float) -> list[tuple[int, int, float]]:
    """``(lo, hi, t)`` of the low and the high end of the percentile interval of ``n`` sorted values: each end is
    numpy's default ("linear") quantile, the values at ranks lo and hi (0-based) weighted by t (:func:`_interpolate`;
    without np.percentile, which imports numpy.ma, ~30 ms of start-up)."""
    tail = (100.0 - 100.0 * level) / 2.0  # percent in each tail: 2.5 for level 0.95
    out = []
    for q in (tail / 100.0, (100.0 - tail) / 100.0):
        h = (n - 1) * q  # numpy's virtual index of the "linear" method
        lo = min(max(int(np.floor(h)), 0), n - 1)
        out.append((lo, min(lo + 1, n - 1), h - lo))
    return out


def _interpolate(a: float, b: float, t: float) -> float:
    """numpy's "linear" quantile between the sorted values a and b at fraction t."""
    return b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t


def collect(
    n_queries: int,
    n_boot: int,
    seed: int,
    columns: np.ndarray,
    statistics: dict[str, Callable[[np.ndarray], np.ndarray]],
) -> dict[str, np.ndarray]:
    """Replicates of every statistic on the same resamples.

    ``columns``: Q x S per-query sums; each replicate's column totals are ``Y = C @ columns`` (:func:`totals`, one
    pass for all statistics, the same bits on every processor); ``statistics[name](Y)`` maps a block of totals
    (b x S) to one value per replicate.
    """
    parts: dict[str, list[np.ndarray]] = {name: [] for name in statistics}
    V = np.ascontiguousarray(columns, dtype=np.float64)
    small = n_queries * n_boot <= _SHARED_CELLS
    blocks = _shared_counts(n_queries, n_boot, seed) if small else map(_drawn, resample_counts(n_queries, n_boot, seed))
    for counts in blocks:
        Y = counts.totals(V)
        for name, fn in statistics.items():
            parts[name].append(fn(Y))
    return {name: np.concatenate(v) if v else np.zeros(0) for name, v in parts.items()}


#: resample counts kept between calls up to this many cells (8 bytes each); larger ones are drawn again per call
_SHARED_CELLS = 1 << 21


@functools.lru_cache(maxsize=1)
def _shared_counts(n_queries: int, n_boot: int, seed: int) -> tuple[_Counts, ...]:
    """:func:`resample_counts`' blocks, read-only and kept for the next call with the same arguments: one
    evaluation resamples the same queries for each method, each reference and the comparisons (8 MB for 1,000
    replicates of 1,000 queries and as much for their transpose; at most :data:`_SHARED_CELLS` cells, one set kept:
    32 MB)."""
    blocks = tuple(map(_drawn, resample_counts(n_queries, n_boot, seed)))
    for b in blocks:
        b.c.flags.writeable = False
    return blocks


def _drawn(counts: np.ndarray) -> _Counts:
    """A block of :func:`resample_counts`: whole numbers by construction (bincounts), so not checked again."""
    return _Counts(counts, whole=True)


def ratio(a: int, b: int) -> Callable[[np.ndarray], np.ndarray]:
    """The statistic Y[:, a] / Y[:, b] (NaN where the denominator is 0)."""

    def fn(Y: np.ndarray) -> np.ndarray:
        return np.divide(Y[:, a], Y[:, b], out=np.full(len(Y), np.nan), where=Y[:, b] > 0)

    return fn
