"""STELLA_LW: Bayesian listwise inference with a position-transition calibration (the protocol chapter); the
calibration itself (:func:`calibrate`, :func:`load_or_calibrate`) is :mod:`invarirank.methods._stella_calibration`.

Inference (:func:`stella`)
    A uniform prior over the candidates; up to ``max_updates`` (10) updates. Update ``u`` presents the
    presented order (``u = 0``) or its seeded shuffle ``u`` (shared with bootstrapping's shuffles, see
    :mod:`._common`), asks the scorer once, and with ``j`` = the position of the scorer's top-1 in that
    order sets ``posterior(c) ∝ prior(c) · T[position of c in that order, j]`` (:func:`posterior_update`).
    The entropy (nats) of each posterior is recorded; after ``patience`` (3) consecutive updates whose
    entropy changed by at most ``tol`` (1e-6) from the previous update's, it stops (so at least
    ``patience + 1`` = 4 scorer calls). The minimum-entropy posterior (the earliest on equal entropies)
    gives the ranking: descending posterior, ties by that update's raw rank, then presented position
    (posteriors are compared on ``log`` rounded to 9 decimals, so products of equal factors tie exactly).
    When that posterior's information gain ``ln K - H`` is at most ``gain_tol`` (1e-6), the update's raw
    ranking is returned instead.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..errors import InvariRankError
from ..types import Item, Query, Scorer, rank_by_scores
from ._common import Steps, drive, shuffle_positions
from ._result import MethodResult
from ._stella_calibration import calibration_counts, normalise_counts, select_calibration_queries

__all__ = ["calibrate"]


def entropy(p: np.ndarray) -> float:
    """Shannon entropy in nats (0 · ln 0 = 0)."""
    p = np.asarray(p, dtype=np.float64)
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def posterior_update(prior: np.ndarray, matrix: np.ndarray, order: Sequence[int], top_position: int) -> np.ndarray:
    """One Bayesian update.

    ``prior[c]`` is indexed by candidate (its presented position); ``order[i]`` is the candidate shown
    at position ``i`` of this update; ``top_position`` is the position (in this update's order) of
    the scorer's top-1. Returns ``posterior[c] ∝ prior[c] · matrix[i_c, top_position]`` with ``i_c``
    the position of ``c`` in ``order`` (normalised; the prior itself when every product is 0).
    """
    prior = np.asarray(prior, dtype=np.float64)
    lik = np.empty_like(prior)
    lik[np.asarray(order, dtype=np.int64)] = np.asarray(matrix, dtype=np.float64)[:, top_position]
    post = prior * lik
    total = post.sum()
    return prior.copy() if not total > 0 else post / total


def stella(
    scorer: Scorer,
    query: Query,
    presented: Sequence[Item],
    *,
    seed: int,
    t: int,
    matrix: np.ndarray,
    max_updates: int = 10,
    patience: int = 3,
    tol: float = 1e-6,
    gain_tol: float = 1e-6,
) -> MethodResult:
    """STELLA_LW on one presented order (see the module docstring). ``matrix`` is the K×K
    row-normalised transition matrix of :func:`calibrate` for this K."""
    return drive(
        stella_steps(
            query,
            presented,
            seed=seed,
            t=t,
            matrix=matrix,
            max_updates=max_updates,
            patience=patience,
            tol=tol,
            gain_tol=gain_tol,
        ),
        scorer,
        query,
    )


def stella_steps(
    query: Query,
    presented: Sequence[Item],
    *,
    seed: int,
    t: int,
    matrix: np.ndarray,
    max_updates: int = 10,
    patience: int = 3,
    tol: float = 1e-6,
    gain_tol: float = 1e-6,
) -> Steps:
    """The steps of :func:`stella` (see :mod:`._common`). The arguments are checked here, when the
    generator is made, not at its first step."""
    k = len(presented)
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.shape != (k, k):
        raise InvariRankError(
            f"stella: query {query.query_id!r} has K={k} candidates but the calibration "
            f"matrix is {matrix.shape[0]}x{matrix.shape[1]}"
        )
    if max_updates < 1:
        raise InvariRankError("stella: max_updates must be at least 1")
    return _stella_steps(
        query,
        presented,
        seed=seed,
        t=t,
        matrix=matrix,
        max_updates=max_updates,
        patience=patience,
        tol=tol,
        gain_tol=gain_tol,
    )


def _stella_steps(
    query: Query,
    presented: Sequence[Item],
    *,
    seed: int,
    t: int,
    matrix: np.ndarray,
    max_updates: int,
    patience: int,
    tol: float,
    gain_tol: float,
) -> Steps:
    k = len(presented)
    prior = np.full(k, 1.0 / k)
    updates: list[tuple[np.ndarray, float, list[int]]] = []  # (posterior, entropy, raw ranking)
    first: list[float] = []
    passes = 0
    stable = 0
    for u in range(max_updates):
        order = shuffle_positions(k, seed, query.query_id, t, u)  # u = 0: the presented order
        scores = yield [presented[i] for i in order]
        passes += 1
        if u == 0:
            first = [float(s) for s in scores]
        ranked = rank_by_scores(scores)  # positions in this order
        post = posterior_update(prior, matrix, order, ranked[0])
        h = entropy(post)
        if updates:
            stable = stable + 1 if abs(h - updates[-1][1]) <= tol else 0
        updates.append((post, h, [order[r] for r in ranked]))
        if stable >= patience:
            break
        prior = post
    best = 0
    for u in range(1, len(updates)):
        if updates[u][1] < updates[best][1]:
            best = u
    post, h, raw = updates[best]
    if math.log(k) - h <= gain_tol:
        positions = raw
    else:
        raw_rank = {c: r for r, c in enumerate(raw)}
        with np.errstate(divide="ignore"):
            logp = np.round(np.log(post), 9)
        positions = sorted(range(k), key=lambda c: (-logp[c], raw_rank[c], c))
    return MethodResult(output=[presented[i].item_id for i in positions], scores=first, passes=passes)


def calibrate(
    scorer: Scorer,
    validation_queries: Sequence[Query],
    k: int,
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    progress: bool = False,
) -> np.ndarray:
    """The row-normalised K×K transition matrix (float64) of ``scorer`` on lists of ``k``: row = the input
    position (0-based) a relevant candidate was placed at, column = the input position the scorer ranked first. No
    disk cache (the runner uses :func:`invarirank.methods._stella_calibration.load_or_calibrate`). With no usable
    validation query it is uniform (STELLA then falls back to raw rankings).

    Stability: caller (STELLA_LW's calibration matrix for lists of K)."""
    queries = select_calibration_queries(validation_queries, k, n_queries, seed)
    return normalise_counts(calibration_counts(scorer, queries, k, repeats, seed, progress))
