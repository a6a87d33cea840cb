"""STELLA_LW: position-transition calibration and Bayesian listwise inference (the protocol chapter).

Calibration (:func:`calibrate`, :func:`load_or_calibrate`)
    On up to ``n_queries`` (150) validation queries, sampled with the seed among those whose first ``k``
    candidates hold a relevant item, every relevant candidate among the first ``k`` is put at every
    presented position ``p = 0..k-1``, ``repeats`` (5) times, with the other candidates shuffled (seeded
    per query, item, position and repeat). The scorer's top-1 lands at position ``j``;
    ``counts[p, j] += 1``. ``counts`` starts at 1 in every cell (additive smoothing); the transition
    matrix ``T`` is ``counts`` with rows normalised, so ``T[p, j]`` estimates P(top-1 at ``j`` | the
    relevant candidate sits at ``p``). Validation queries longer than ``k`` are cut to their first ``k``
    candidates (retrieval order), which equals retrieving at ``k``. The log-prob scorer of inference is
    used (the authors' code; the paper calls the stage generation-based).

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

import hashlib
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..candidates import queries_sha256
from ..errors import InvariRankError
from ..io import atomic_write_json, read_json
from ..orders import rng_for
from ..types import Item, Query, Scorer, rank_by_scores
from ._common import Steps, as_batch_scorer, batch_size_of, drive, score_items_batch, shuffle_positions
from .result import MethodResult

__all__ = ["calibrate"]

CALIBRATION_VERSION = 1


# ---------------------------------------------------------------------------------------------
# inference
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------------------------
def _truncate(query: Query, k: int) -> Query:
    if len(query.candidates) == k:
        return query
    scores = query.candidate_scores[:k] if query.candidate_scores else ()
    return Query(
        query.query_id, query.user_id, query.history, query.candidates[:k], query.ground_truth, query.split, scores
    )


def _relevant(query: Query) -> list[str]:
    truth = set(query.ground_truth)
    return [c.item_id for c in query.candidates if c.item_id in truth]


def select_calibration_queries(
    validation_queries: Sequence[Query], k: int, n_queries: int = 150, seed: int = 0
) -> list[Query]:
    """The probing queries: validation queries with at least ``k`` candidates, cut to their first
    ``k``, that hold a relevant candidate; up to ``n_queries`` of them sampled with the seed (kept in
    input order)."""
    pool = [_truncate(q, k) for q in validation_queries if len(q.candidates) >= k]
    pool = [q for q in pool if _relevant(q)]
    if n_queries >= len(pool):
        return pool
    idx = np.sort(rng_for(seed, "stella-calibration", "queries").choice(len(pool), size=n_queries, replace=False))
    return [pool[int(i)] for i in idx]


def calibration_pass_count(queries: Sequence[Query], k: int, repeats: int = 5) -> int:
    """Scorer calls calibration makes: relevant candidates × K × repeats, summed over the queries."""
    return sum(len(_relevant(q)) for q in queries) * k * repeats


def calibration_counts(
    scorer: Scorer, queries: Sequence[Query], k: int, repeats: int = 5, seed: int = 0, progress: bool = False
) -> np.ndarray:
    """The smoothed count matrix (int64, K×K, every cell starting at 1) over already selected,
    already truncated probing ``queries`` (see :func:`select_calibration_queries`)."""
    counts = np.ones((k, k), dtype=np.int64)
    total = calibration_pass_count(queries, k, repeats)
    bar = None
    if progress and total:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"STELLA calibration K={k}", unit="pass", file=sys.stderr)
    chunk = batch_size_of(scorer)  # a batching (GPU) scorer gets batches
    try:
        for q in queries:
            cands = list(q.candidates)
            for rel in _relevant(q):
                target = next(c for c in cands if c.item_id == rel)
                others = [c for c in cands if c.item_id != rel]
                probes: list[tuple[int, list[Item]]] = []
                for p in range(k):
                    for rep in range(repeats):
                        perm = rng_for(seed, q.query_id, "stella-calibration", rel, p, rep).permutation(k - 1)
                        order = [others[int(i)] for i in perm]
                        order.insert(p, target)
                        probes.append((p, order))
                for c in range(0, len(probes), chunk):
                    part = probes[c : c + chunk]
                    for (p, _), scores in zip(part, score_items_batch(scorer, q, [o for _, o in part])):
                        counts[p, rank_by_scores(scores)[0]] += 1
                    if bar is not None:
                        bar.update(len(part))
    finally:
        if bar is not None:
            bar.close()
    return counts


def _normalise(counts: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=np.float64)
    return counts / counts.sum(axis=1, keepdims=True)


def calibrate(
    scorer: Scorer,
    validation_queries: Sequence[Query],
    k: int,
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    progress: bool = False,
) -> np.ndarray:
    """The row-normalised K×K transition matrix (float64); no disk cache (see :func:`load_or_calibrate`).
    With no usable validation query it is uniform (STELLA then falls back to raw rankings).

    Stability: caller (STELLA_LW's calibration matrix for lists of K)."""
    queries = select_calibration_queries(validation_queries, k, n_queries, seed)
    return _normalise(calibration_counts(scorer, queries, k, repeats, seed, progress))


@dataclass
class Calibration:
    """A calibration result: ``counts`` (smoothed, int64), ``matrix`` (row-normalised), the probing
    query ids, the scorer calls it took, its cache ``key`` and whether it came from the cache."""

    k: int
    counts: np.ndarray
    matrix: np.ndarray
    query_ids: list[str]
    passes: int
    key: str
    from_cache: bool = False
    meta: dict[str, Any] = field(default_factory=dict)
    #: what :meth:`to_record` adds for a later session: the scorer's key identity and :func:`probes_sha256`
    identity: dict[str, Any] | None = None
    probes: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "key": self.key,
            "query_ids": self.query_ids,
            "passes": self.passes,
            "counts": self.counts.tolist(),
            "matrix": [[float(x) for x in row] for row in self.matrix],
            **self.meta,
        }

    def to_record(self) -> dict[str, Any]:
        """:meth:`to_json` with the scorer's key identity and the probing queries' content hash
        (:func:`probes_sha256`): what ``known`` of :func:`load_or_calibrate` checks on another machine."""
        return {**self.to_json(), "identity": self.identity, "probes_sha256": self.probes}


def calibration_key(
    identity: dict[str, Any], k: int, queries: Sequence[Query], n_queries: int, repeats: int, seed: int
) -> str:
    """sha256 over the scorer identity (model, weights, scorer kind, dtype...), K, the probing data and
    the calibration settings: a cached matrix is reused only when all of them are equal."""
    blob = json.dumps(
        {
            "version": CALIBRATION_VERSION,
            "identity": identity,
            "k": k,
            "n_queries": n_queries,
            "repeats": repeats,
            "seed": seed,
            "data": queries_sha256(queries),
        },
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def probes_sha256(queries: Sequence[Query]) -> str:
    """sha256 of the probing queries without their first-stage scores (ids, history, candidates in order,
    ground truth): what the calibration's passes read. Two machines whose first stages give the same lists with
    scores that differ in their last bits (another CPU) have the same value and different cache keys."""
    return queries_sha256(replace(q, candidate_scores=()) for q in queries)


def _meta(n_queries: int, repeats: int, seed: int) -> dict[str, int]:
    """The calibration's settings as recorded beside its counts (:attr:`Calibration.meta`)."""
    return {"n_queries": n_queries, "repeats": repeats, "seed": seed, "version": CALIBRATION_VERSION}


def recorded_counts(
    known: Mapping[str, Any] | None,
    identity: Mapping[str, Any],
    k: int,
    queries: Sequence[Query],
    n_queries: int,
    repeats: int,
    seed: int,
) -> np.ndarray | None:
    """The counts of the recorded calibration ``known`` (:meth:`Calibration.to_record`) when it was made with this
    scorer key identity, K, settings, probing query ids and probing queries' content (:func:`probes_sha256`;
    ``queries``: the selected, truncated probing queries), else None."""
    if not isinstance(known, Mapping):
        return None
    meta = _meta(n_queries, repeats, seed)
    try:
        counts = np.asarray(known["counts"], dtype=np.int64)
        same = (
            known.get("identity") == dict(identity)
            and int(known["k"]) == k
            and counts.shape == (k, k)
            and all(known.get(name) == value for name, value in meta.items())
            and list(known["query_ids"]) == [q.query_id for q in queries]
            and known.get("probes_sha256") == probes_sha256(queries)
        )
    except (KeyError, TypeError, ValueError):
        return None
    return counts if same else None


def cache_file(cache_dir: str | os.PathLike | None, key: str) -> Path:
    """Where :func:`load_or_calibrate` caches the calibration of ``key`` (:func:`calibration_key`):
    ``<cache_dir>/stella/<key>.json``, ``cache_dir`` defaulting to :func:`invarirank.assets.cache_dir`."""
    if cache_dir is None:
        from ..assets import cache_dir as default_cache_dir

        cache_dir = default_cache_dir()
    return Path(cache_dir) / "stella" / f"{key}.json"


def calibration_need(
    validation_queries: Sequence[Query],
    k: int,
    key_identity: Mapping[str, Any],
    *,
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    known: Mapping[str, Any] | None = None,
) -> tuple[int, bool, int]:
    """What :func:`load_or_calibrate` would still compute for lists of ``k``, without scoring anything:
    ``(passes, cached, probes)``. ``cached``: the calibration is in the cache (:func:`cache_file`) or ``known``
    (a recorded calibration) would be taken; then ``passes`` and ``probes`` are 0, else the passes it would make
    and the number of probing queries. ``key_identity`` is the scorer's (what decides its scores)."""
    probe = select_calibration_queries(validation_queries, k, n_queries, seed)
    key = calibration_key(dict(key_identity), k, probe, n_queries, repeats, seed)
    cached = cache_file(cache_dir, key).is_file() or (
        recorded_counts(known, key_identity, k, probe, n_queries, repeats, seed) is not None
    )
    if cached:
        return 0, True, 0
    return calibration_pass_count(probe, k, repeats), False, len(probe)


def load_or_calibrate(
    scorer: Scorer,
    validation_queries: Sequence[Query],
    k: int,
    *,
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    progress: bool = False,
    known: Mapping[str, Any] | None = None,
) -> Calibration:
    """:func:`calibrate` with a JSON cache ``<cache_dir>/stella/<key>.json`` (``cache_dir`` defaults
    to :func:`invarirank.assets.cache_dir`). The key covers the scorer's identity (``key_identity()``
    where the scorer has one: model weights, tokenizer, dtype, device type, scorer kind, template,
    options), K, the probing queries and the settings (:func:`calibration_key`).

    ``known``: a calibration recorded earlier for the same run (:meth:`Calibration.to_record`, e.g. committed
    with a run's shards). When the cache misses, it is taken — no pass is computed, and it is cached under this
    machine's key — if it was made with the same scorer identity, K, settings, probing query ids and probing
    queries' content (:func:`probes_sha256`); the first-stage scores may differ, as committed shards are accepted
    by content. Otherwise it is ignored and the calibration computed."""
    queries = select_calibration_queries(validation_queries, k, n_queries, seed)
    identity = dict(as_batch_scorer(scorer).key_identity())  # what determines the scores only
    key = calibration_key(identity, k, queries, n_queries, repeats, seed)
    path = cache_file(cache_dir, key)
    meta = _meta(n_queries, repeats, seed)
    probes = probes_sha256(queries)
    passes = calibration_pass_count(queries, k, repeats)
    if path.is_file():
        try:
            got = read_json(path)
            counts = np.asarray(got["counts"], dtype=np.int64)
            if got.get("key") == key and counts.shape == (k, k):
                query_ids = list(got["query_ids"])
                return Calibration(
                    k, counts, _normalise(counts), query_ids, int(got["passes"]), key, True, meta, identity, probes
                )
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable cache entry: recompute and replace it
    counts_known = recorded_counts(known, identity, k, queries, n_queries, repeats, seed)
    from_known = counts_known is not None
    counts = (
        counts_known if counts_known is not None else calibration_counts(scorer, queries, k, repeats, seed, progress)
    )
    query_ids = [q.query_id for q in queries]
    cal = Calibration(k, counts, _normalise(counts), query_ids, passes, key, from_known, meta, identity, probes)
    atomic_write_json(path, {**cal.to_json(), "identity": identity})
    return cal
