"""Preference consistency of one query's rows (the book's metrics chapter): win counts, PPI, GPI (local search) and LOC.

Conventions: a query has K candidates and M rows (presented orders), each with a complete output ranking.
``W[i, j]`` is the **integer** number of rows whose output puts candidate i above candidate j, so
q(i, j) = W[i, j] / M and W[i, j] + W[j, i] = M. Items are indexed in ascending code-point order of their string
ids ("10" < "9" < "B0" < "b0"), which is GPI's tie-break. Positions are 0-based **presented** positions.

Batch functions take arrays for many queries with the same K (leading axis G) and are what
:func:`invarirank.evaluation.evaluate` uses; :func:`ppi`, :func:`gpi`, :func:`loc`, :func:`win_counts` take one
query's rows as plain lists (or a pandas DataFrame with ``input``/``output`` columns).

**GPI local search, vectorised.** D(σ) = sum over pairs of the preference mass that contradicts σ; in rows,
M·D(σ) = sum_{a<b} W[σ_b, σ_a]. Let A = W - Wᵀ and P[a, c] = A[σ_a, σ_c]. Swapping the items x = σ_a and y = σ_b
(a < b) only changes the pairs (x, y), (x, z) and (z, y) for z = σ_c, a < c < b, so the change of M·D is

    Δ(a, b) = P[a, b] + sum_{a<c<b} (P[a, c] - P[b, c])
            = P[a, b] + (S[a, b] - S[a, a+1]) - (S[b, b] - S[b, a+1]),   S[a, c] = sum_{c' < c} P[a, c'],

an exact int64 expression; all swaps of a query cost O(K²) per step (numpy, over all queries at once). The best
swap is the first minimum of Δ in row-major order over a < b (a outer, b inner, both ascending), applied while it
is negative. ``tests/evaluation/test_oracle.py`` checks the formula against recomputing D for every swap, and the
whole search against the literal O(K⁴)-per-step version of the definition.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvariRankError
from ._pair_cells import cell_statistics

#: the longest list GPI's local search takes: its steps cost O(K²) each and it may take O(K²) of them (K = 3,000 ran
#: for more than 300 s); longer lists are refused with this limit named rather than left to hang
MAX_GPI_K = 1000


# ----------------------------------------------------------------------------------------------- encoding


def encode_rows(
    inputs: Sequence[Sequence[str]], outputs: Sequence[Sequence[str]], items: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """``(pos, rank)``: M x K int arrays with the presented position and the 0-based output rank of ``items[i]``."""
    index = {x: i for i, x in enumerate(items)}
    K, M = len(items), len(outputs)
    try:
        inp = np.fromiter((index[x] for row in inputs for x in row), dtype=np.int64, count=M * K).reshape(M, K)
        out = np.fromiter((index[x] for row in outputs for x in row), dtype=np.int64, count=M * K).reshape(M, K)
    except (KeyError, ValueError) as exc:
        raise InvariRankError(f"rows of one query must rank the same candidates ({exc})") from None
    return inverse_permutations(inp), inverse_permutations(out)


def inverse_permutations(perm: np.ndarray) -> np.ndarray:
    """``inv[r, perm[r, p]] = p`` for each row ``r`` of an R x K array of permutations of 0..K-1."""
    R, K = perm.shape
    inv = np.empty_like(perm)
    inv[np.arange(R)[:, None], perm] = np.arange(K, dtype=perm.dtype)
    return inv


def _frame_columns(obj: Any, *cols: str) -> list | None:
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return [[list(v) for v in obj[c]] for c in cols]
    if isinstance(obj, Sequence) and obj and isinstance(obj[0], dict):
        return [[list(r[c]) for r in obj] for c in cols]
    return None


def query_arrays(outputs: Any, inputs: Any = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(items, pos, rank)`` of one query's rows. ``outputs`` is a list of rankings (best first), or rows (dicts
    / a DataFrame) with ``output`` and ``input``; ``inputs`` (presented orders) default to the outputs' order when
    not given (positions are then not meaningful; only win counts, GPI and LOC are)."""
    cols = _frame_columns(outputs, "output", "input") if inputs is None else None
    if cols is not None:
        outputs, inputs = cols
    outputs = [list(map(str, o)) for o in outputs]
    inputs = outputs if inputs is None else [list(map(str, i)) for i in inputs]
    if not outputs:
        raise InvariRankError("a query needs at least one row")
    items = sorted(set(outputs[0]))
    if any(len(o) != len(items) or set(o) != set(items) for o in outputs + inputs):
        raise InvariRankError("every input and output of a query must be a permutation of the same candidates")
    pos, rank = encode_rows(inputs, outputs, items)
    return items, pos, rank


# ----------------------------------------------------------------------------------------------- batch core


def pair_statistics(
    pos: np.ndarray, rank: np.ndarray, starts: np.ndarray, buckets: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Win counts and PPI of G queries with the same K whose rows are contiguous.

    ``pos``/``rank``: R x K (presented position / 0-based output rank of item i in row r); ``starts``: G+1
    row offsets. Returns ``(w_up, ppi_sum, ppi_pairs)``: ``w_up[g, p]`` = W[i, j] for the p-th pair i < j of
    ``np.triu_indices(K, 1)``; ``ppi_sum[g]`` the sum of PPI(i, j) over the pairs observed in at least two
    (bucket of i, bucket of j) cells and ``ppi_pairs[g]`` their number (bucket(p) = min(floor(p B / K), B - 1)).
    """
    R, K = rank.shape
    G = len(starts) - 1
    iu, ju = np.triu_indices(K, 1)
    P = len(iu)
    B = int(buckets)
    w_up = np.zeros((G, P), dtype=np.int64)
    ppi_sum = np.zeros(G, dtype=np.float64)
    ppi_pairs = np.zeros(G, dtype=np.int64)
    if P == 0 or G == 0:
        return w_up, ppi_sum, ppi_pairs
    if B > 1:  # each pair's rows in each cell, counted as bit masks (module _pair_cells)
        return cell_statistics(pos, rank, starts, B, (w_up, ppi_sum, ppi_pairs))
    small = np.int16 if K < (1 << 15) else np.int64
    rank = rank.astype(small)
    # chunks of whole queries, at most ~256k (row, pair) cells each (cache-sized; fewer page faults)
    limit = max(1, (1 << 18) // P)
    g0 = 0
    while g0 < G:
        g1 = g0 + 1
        while g1 < G and starts[g1 + 1] - starts[g0] <= limit:
            g1 += 1
        r0, r1 = int(starts[g0]), int(starts[g1])
        rk = rank[r0:r1]
        above = rk[:, iu] < rk[:, ju]  # (rows, pairs): i above j
        w_up[g0:g1] = np.add.reduceat(above, starts[g0:g1] - r0, axis=0, dtype=np.int64)
        g0 = g1
    return w_up, ppi_sum, ppi_pairs


def win_matrix(w_up: np.ndarray, n_rows: np.ndarray, K: int, dtype: Any = np.int64) -> np.ndarray:
    """Full G x K x K integer win counts from the upper-triangle counts (W[j, i] = M - W[i, j]), as ``dtype``
    (one that holds the row counts)."""
    G = w_up.shape[0]
    iu, ju = np.triu_indices(K, 1)
    W = np.zeros((G, K, K), dtype=dtype)
    W[:, iu, ju] = w_up
    W[:, ju, iu] = np.asarray(n_rows, dtype=np.int64)[:, None] - w_up
    return W


def contradiction_mass(W: np.ndarray, order: np.ndarray) -> np.ndarray:
    """M·D(σ) = sum_{a<b} W[σ_b, σ_a] for G win matrices and orders (G x K x K, G x K): exact integers."""
    G, K = order.shape
    Wp = W[np.arange(G)[:, None, None], order[:, :, None], order[:, None, :]]
    return np.tril(Wp, -1).sum(axis=(1, 2))


def swap_deltas(W: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Δ[g, a, b]: change of M·D when positions a < b of ``order[g]`` are swapped (0 where a >= b)."""
    G, K = order.shape
    A = W - W.transpose(0, 2, 1)
    P = A[np.arange(G)[:, None, None], order[:, :, None], order[:, None, :]]
    return _deltas(P)


def _deltas(P: np.ndarray) -> np.ndarray:
    n, K, _ = P.shape
    S = np.zeros((n, K, K + 1), dtype=np.int64)
    np.cumsum(P, axis=2, out=S[:, :, 1:])
    S0, S1 = S[:, :, :K], S[:, :, 1:]  # S0[a, b] = S[a, b]; S1[a, b] = S[a, b + 1]
    d1 = np.diagonal(S1, axis1=1, axis2=2)  # S[a, a + 1]
    d0 = np.diagonal(S0, axis1=1, axis2=2)  # S[b, b]
    delta = P + S0 - d1[:, :, None] - d0[:, None, :] + S1.transpose(0, 2, 1)  # + S[b, a + 1]
    return np.where(np.triu(np.ones((K, K), dtype=bool), 1), delta, 0)


def gpi_local_search(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GPI's local search for G win matrices (G x K x K ints; items in code-point id order).

    Start: descending win score s_i = sum_j W[i, j], ties to the lower item index (code-point id order). Step:
    the swap of positions a < b lowering M·D most, the first in row-major scan order on ties; stop when no swap
    lowers it. Returns ``(order, mass)``: the final orders (G x K item indices, best first) and M·D (G ints).
    K above :data:`MAX_GPI_K` raises :class:`InvariRankError`.
    """
    W = np.asarray(W)
    if W.dtype.kind not in "iu":
        W = W.astype(np.int64)
    G, K, _ = W.shape
    if K > MAX_GPI_K:
        raise InvariRankError(
            f"GPI: lists of K = {K} candidates are above the limit K <= {MAX_GPI_K} of its local "
            f"search (whose work grows as K^4)"
        )
    order = np.argsort(-W.sum(axis=2, dtype=np.int64), axis=1, kind="stable")
    if K < 2 or G == 0:
        return order, (contradiction_mass(W.astype(np.int64), order) if G else np.zeros(0, dtype=np.int64))
    # every partial sum of Δ (the masked pairs' included) is at most (4K + 1) max|A| <= (4K + 1) (max W - min W):
    # the narrowest integer type whose half range holds that (int16 at K = 25 or 50, M = 20) holds W, A and Δ,
    # less memory traffic for the same exact integers
    low, high = int(W.min()), int(W.max())
    bound = (4 * K + 2) * (high - low + 1)
    dtype = next((t for t in (np.int16, np.int32) if bound < (int(np.iinfo(t).max) + 1) // 2), np.int64)
    if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max:
        W = W.astype(dtype, copy=False)
    else:  # (W shifted far from 0: A and Δ are small, W is not)
        W = W.astype(np.int64, copy=False)
    Wp = W[np.arange(G)[:, None, None], order[:, :, None], order[:, None, :]]  # Wp[g, a, c] = W[σ_a, σ_c]
    mass = np.tril(Wp, -1).sum(axis=(1, 2), dtype=np.int64)  # contradiction_mass(W, order)
    P = (Wp - Wp.transpose(0, 2, 1)).astype(dtype, copy=False)  # P[g, a, c] = A[σ_a, σ_c], A = W - Wᵀ
    # a >= b is no swap: a large Δ there instead of 0 leaves the first minimum where it was whenever it is negative
    # (the only case that swaps), and a minimum >= 0 stops the search either way
    lower = np.where(np.triu(np.ones((K, K), dtype=bool), 1), 0, np.iinfo(dtype).max // 2).astype(dtype)
    active = np.arange(G)
    while active.size:
        n = len(active)
        flat = _search_deltas(P, lower).reshape(n, K * K)
        best = flat.argmin(axis=1)  # first minimum in row-major (a, b) order
        gain = flat[np.arange(n), best].astype(np.int64)
        better = gain < 0
        if not better.all():
            active, best, gain, P = active[better], best[better], gain[better], P[better]
        a, b = best // K, best % K
        xa, xb = order[active, a], order[active, b]
        order[active, a], order[active, b] = xb, xa
        mass[active] += gain
        ar = np.arange(len(active))  # swap rows a, b and columns a, b of P
        row_a = P[ar, a].copy()
        P[ar, a] = P[ar, b]
        P[ar, b] = row_a
        col_a = P[ar, :, a].copy()
        P[ar, :, a] = P[ar, :, b]
        P[ar, :, b] = col_a
    return order, mass


def _search_deltas(P: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """:func:`_deltas` in P's dtype, with ``lower`` added (the local search's mask of the pairs a >= b).

    P's diagonal is 0 (A = W - Wᵀ, rows and columns permuted alike), so S[b, b] = S[b, b + 1] and P[a, b] + S[a, b]
    = S[a, b + 1]: with T[a, b] = S[a, b + 1] and t its diagonal, Δ(a, b) = T[a, b] + T[b, a] - t[a] - t[b]. T is
    kept transposed, Tᵀ[c, a] = T[a, c], so that each of the K steps of the running sum adds contiguous rows (a
    cumulative sum along a row of K takes one short inner loop per row: about twice the time); then four passes."""
    n, K, _ = P.shape
    Tt = np.empty((n, K, K), dtype=P.dtype)
    np.copyto(Tt, P.transpose(0, 2, 1))  # Tt[c, a] = P[a, c], then summed over c' <= c
    for c in range(1, K):
        Tt[:, c] += Tt[:, c - 1]
    t = np.diagonal(Tt, axis1=1, axis2=2)
    delta = Tt + Tt.transpose(0, 2, 1)
    delta -= t[:, :, None]
    delta -= t[:, None, :]
    delta += lower
    return delta


def loc_from_wins(w_up: np.ndarray, n_rows: np.ndarray, K: int) -> np.ndarray:
    """Mean Kendall tau over all pairs of rows, per query (NaN when M < 2 or K < 2).

    Two rows disagree on pair (i, j) for W[i, j]·W[j, i] of the C(M, 2) row pairs, so
    LOC = 1 - 2 · sum_{i<j} W[i, j] (M - W[i, j]) / (C(M, 2) C(K, 2)), from integer counts with one rounding.
    """
    M = np.asarray(n_rows, dtype=np.int64)
    disc = (w_up * (M[:, None] - w_up)).sum(axis=1)
    denom = (M * (M - 1) // 2) * (K * (K - 1) // 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (denom - 2 * disc) / np.maximum(denom, 1), np.nan)  # one rounding


# ----------------------------------------------------------------------------------------------- one query


def win_counts(outputs: Any) -> tuple[list[str], np.ndarray]:
    """``(items, W)`` for one query: ``items`` in code-point order, ``W[i, j]`` = rows with i above j."""
    items, pos, rank = query_arrays(outputs)
    K = len(items)
    w_up, _, _ = pair_statistics(pos, rank, np.array([0, len(rank)]), 1)
    return items, win_matrix(w_up, np.array([len(rank)]), K)[0]


def ppi(outputs: Any, inputs: Any = None, buckets: int = 3) -> float | None:
    """PPI of one query (None when no pair is observed in two cells). ``outputs``/``inputs``: lists of rankings and
    presented orders, or rows (dicts / DataFrame) with ``output`` and ``input``."""
    if inputs is None and _frame_columns(outputs, "output", "input") is None:
        raise InvariRankError("ppi needs the presented orders (inputs) as well as the outputs")
    items, pos, rank = query_arrays(outputs, inputs)
    _, s, n = pair_statistics(pos, rank, np.array([0, len(rank)]), buckets)
    return float(s[0] / n[0]) if n[0] else None


def gpi(outputs: Any, *, return_order: bool = False) -> Any:
    """GPI of one query (None when M < 2 or K < 2); with ``return_order``, ``(gpi, final order of ids)``.
    ``outputs``: the rankings of its rows (lists, best first) or rows (dicts / DataFrame) with ``output``."""
    items, pos, rank = query_arrays(outputs)
    M, K = rank.shape
    w_up, _, _ = pair_statistics(pos, rank, np.array([0, M]), 1)
    order, mass = gpi_local_search(win_matrix(w_up, np.array([M]), K))
    value = float(mass[0] / (M * (K * (K - 1) // 2))) if (M >= 2 and K >= 2) else None
    return (value, [items[i] for i in order[0]]) if return_order else value


def loc(outputs: Any) -> float | None:
    """LOC of one query: mean Kendall tau over all pairs of its rows (None when M < 2 or K < 2)."""
    items, pos, rank = query_arrays(outputs)
    w_up, _, _ = pair_statistics(pos, rank, np.array([0, len(rank)]), 1)
    v = loc_from_wins(w_up, np.array([len(rank)]), len(items))[0]
    return None if np.isnan(v) else float(v)
