"""The rows of each pair of candidates in each position cell, counted as bit masks: PPI's per-pair counts.

Conventions (those of :func:`invarirank.evaluation._consistency.pair_statistics`): a query has K candidates and M
rows; pair p is the p-th (i, j), i < j, of ``np.triu_indices(K, 1)``; cell (a, c) holds the rows that present i in
bucket a and j in bucket c, bucket(p) = min(floor(p B / K), B - 1).

A query's rows are numbered 0..M-1 and a set of rows is a mask of M bits (one ``uint32`` up to 32 rows, else
``uint64`` words). The rows of pair (i, j) in cell (a, c) are then ``mask(i in a) & mask(j in c)`` and those that
also rank i above j that and ``mask(i above j)``: each count is one popcount per word, B^2 per pair, instead of one
histogram entry per row and pair. The counts are exact integers, so what is computed from them is the same numbers.
"""

from __future__ import annotations

import numpy as np

#: (row, item, item) comparisons per chunk of queries
_CHUNK_CELLS = 1 << 21


def row_masks(flags: np.ndarray) -> np.ndarray:
    """``flags``: G x M x X booleans (query, row, anything). Returns W x G x X words, ``uint32`` for M <= 32 (W = 1),
    else ``uint64`` (W = ceil(M / 64)): row r is bit r % 8 of byte r // 8 of the bytes of (g, x), read as W words
    (unused bits 0). Only ANDs and
    popcounts of masks built alike are taken, so which bit stands for which row needs no further convention."""
    G, M, X = flags.shape
    f = flags.view(np.uint8)
    size = 4 if M <= 32 else 8  # bytes a word: up to 32 rows in one uint32, half the bytes of a uint64
    words = -(-M // (8 * size))
    out = np.zeros((G, X, size * words), dtype=np.uint8)
    for b in range(-(-M // 8)):  # one byte plane per 8 rows: shifts and ORs of whole G x X planes
        plane = f[:, 8 * b].copy()
        for r in range(8 * b + 1, min(8 * b + 8, M)):
            plane |= f[:, r] << np.uint8(r - 8 * b)
        out[:, :, b] = plane
    return out.view(np.uint32 if size == 4 else np.uint64).transpose(2, 0, 1)


def popcount(masks: np.ndarray) -> np.ndarray:
    """Set bits of W x ... masks (:func:`row_masks`), summed over the words (the first axis): uint8 when W = 1, else
    int64."""
    out = bit_counts(masks[0])
    for w in range(1, len(masks)):
        out = out + bit_counts(masks[w]).astype(np.int64)
    return out


#: set bits of each byte value
_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def bit_counts(words: np.ndarray) -> np.ndarray:
    """Set bits of each unsigned word (uint8): ``np.bitwise_count`` where numpy has it (2.0 and later), else the sum
    of a table's counts over the word's bytes."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)
    w = np.ascontiguousarray(words)
    return _BYTE_BITS[w.view(np.uint8).reshape(*w.shape, w.itemsize)].sum(axis=-1, dtype=np.uint8)


def cell_statistics(
    pos: np.ndarray,
    rank: np.ndarray,
    starts: np.ndarray,
    buckets: int,
    out: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~invarirank.evaluation._consistency.pair_statistics` for B >= 2 buckets and K >= 2 (the same
    arguments, and its three arrays, zeros, in ``out``, filled and returned: the same values bit for bit). Queries
    are taken by number of rows M, in chunks; a cell's win rate is the double of (rows ranking i above j) / (rows),
    the spread the largest minus the smallest rate of the cells that have rows, and ``ppi_sum`` adds each query's
    spreads in pair order as one row of a G x P array, as the histogram version did."""
    w_up, ppi_sum, ppi_pairs = out
    R, K = rank.shape
    B = int(buckets)
    iu, ju = np.triu_indices(K, 1)
    P = len(iu)
    upper = iu * K + ju
    small = np.int8 if K <= 128 else np.int16 if K <= (1 << 15) else np.int64
    rank = rank.astype(small)
    # each position's bucket, looked up: K divisions instead of one a cell
    bucket = np.minimum((np.arange(K) * B) // K, B - 1).astype(np.int8 if B <= 127 else np.int64)[pos]
    labels = np.arange(B, dtype=bucket.dtype)[:, None]
    n_rows = np.diff(starts)
    for M in sorted(set(n_rows.tolist())):
        qs = np.flatnonzero(n_rows == M)
        step = max(1, _CHUNK_CELLS // (M * K * K))
        for q0 in range(0, len(qs), step):
            sel = qs[q0 : q0 + step]
            g = len(sel)
            if sel[-1] - sel[0] == g - 1:  # consecutive queries: their rows are one block
                r0 = int(starts[sel[0]])
                rk, bk = rank[r0 : r0 + g * M], bucket[r0 : r0 + g * M]
            else:
                rows = (starts[sel][:, None] + np.arange(M)).ravel()
                rk, bk = rank[rows], bucket[rows]
            above = row_masks((rk[:, :, None] < rk[:, None, :]).reshape(g, M, K * K))[:, :, upper]  # W x g x P
            cells = row_masks((bk.reshape(g, M, 1, K) == labels).reshape(g, M, B * K)).reshape(-1, g, B, K)
            cells = cells.transpose(0, 2, 1, 3)  # W x B x g x K: the rows putting item i in bucket a
            both = np.take(cells, iu, axis=3)[:, :, None] & np.take(cells, ju, axis=3)[:, None, :]  # W x B x B x g x P
            n = popcount(both).reshape(B * B, g, P)
            wins = popcount(both & above[:, None, None]).reshape(B * B, g, P)
            w_up[sel] = popcount(above)
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = wins / n  # NaN for a cell without rows, which fmax and fmin pass over
                spread = np.fmax.reduce(rate, axis=0) - np.fmin.reduce(rate, axis=0)
            ok = np.count_nonzero(n, axis=0) >= 2
            ppi_sum[sel] = np.where(ok, spread, 0.0).sum(axis=1)
            ppi_pairs[sel] = ok.sum(axis=1)
    return w_up, ppi_sum, ppi_pairs
