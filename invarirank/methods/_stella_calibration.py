"""STELLA_LW's calibration: the position-transition matrix of a scorer for lists of K, computed on validation
queries, cached on disk by what it depends on, and recorded with a run's shards (inference with it:
:mod:`invarirank.methods.stella`).

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
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json, read_json
from .._orders import rng_for
from ..candidates import queries_sha256
from ..types import Item, Query, Scorer, rank_by_scores
from ._common import as_batch_scorer, batch_size_of, score_items_batch

CALIBRATION_VERSION = 1


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


def probe_top1(
    scorer: Scorer,
    query: Query,
    k: int,
    repeats: int = 5,
    seed: int = 0,
    on_passes: Callable[[int], Any] | None = None,
) -> list[int]:
    """One probing query's probes, scored: the presented position of the scorer's top-1 for each probe, in probe
    order — its relevant candidates in candidate order, each put at positions ``p = 0..k-1``, each position
    ``repeats`` times (the other candidates shuffled, seeded by ``(seed, query_id, rel, p, rep)`` alone, so that
    a query's probes do not depend on the other queries). ``on_passes(n)`` is called after each batch of ``n``
    passes (a progress bar). :func:`part_counts` turns the list into the query's counts."""
    cands = list(query.candidates)
    chunk = batch_size_of(scorer)  # a batching (GPU) scorer gets batches
    top1: list[int] = []
    for rel in _relevant(query):
        target = next(c for c in cands if c.item_id == rel)
        others = [c for c in cands if c.item_id != rel]
        probes: list[list[Item]] = []
        for p in range(k):
            for rep in range(repeats):
                perm = rng_for(seed, query.query_id, "stella-calibration", rel, p, rep).permutation(k - 1)
                order = [others[int(i)] for i in perm]
                order.insert(p, target)
                probes.append(order)
        for c in range(0, len(probes), chunk):
            part = probes[c : c + chunk]
            top1.extend(int(rank_by_scores(scores)[0]) for scores in score_items_batch(scorer, query, part))
            if on_passes is not None:
                on_passes(len(part))
    return top1


def part_counts(top1: Sequence[int], k: int, repeats: int) -> np.ndarray:
    """One probing query's integer counts (int64, K×K, no smoothing) from its :func:`probe_top1`: probe ``i`` put
    the relevant candidate at ``p = (i // repeats) % k`` and the scorer's top-1 landed at ``top1[i]``."""
    counts = np.zeros((k, k), dtype=np.int64)
    for i, j in enumerate(top1):
        counts[(i // repeats) % k, int(j)] += 1
    return counts


def calibration_counts(
    scorer: Scorer, queries: Sequence[Query], k: int, repeats: int = 5, seed: int = 0, progress: bool = False
) -> np.ndarray:
    """The smoothed count matrix (int64, K×K, every cell starting at 1) over already selected,
    already truncated probing ``queries`` (see :func:`select_calibration_queries`): 1 plus the sum of each query's
    :func:`part_counts`, which the runner computes one query at a time (:mod:`invarirank.methods._calibration_parts`;
    integer sums: the same matrix in any order)."""
    counts = np.ones((k, k), dtype=np.int64)
    total = calibration_pass_count(queries, k, repeats)
    bar = None
    if progress and total:
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"STELLA calibration K={k}", unit="pass", file=sys.stderr)
    try:
        for q in queries:
            counts += part_counts(
                probe_top1(scorer, q, k, repeats, seed, None if bar is None else bar.update), k, repeats
            )
    finally:
        if bar is not None:
            bar.close()
    return counts


def normalise_counts(counts: np.ndarray) -> np.ndarray:
    """Row-normalised float64 transition matrix of smoothed calibration counts."""
    counts = np.asarray(counts, dtype=np.float64)
    return counts / counts.sum(axis=1, keepdims=True)


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
    """:func:`invarirank.methods.stella.calibrate` with a JSON cache ``<cache_dir>/stella/<key>.json``
    (``cache_dir`` defaults to :func:`invarirank.assets.cache_dir`). The key covers the scorer's identity
    (``key_identity()`` where the scorer has one: model weights, tokenizer, dtype, device type, scorer kind, template,
    options), K, the probing queries and the settings (:func:`calibration_key`).

    ``known``: a calibration recorded earlier for the same run (:meth:`Calibration.to_record`, e.g. committed
    with a run's shards). When the cache misses, it is taken — no pass is computed, and it is cached under this
    machine's key — if it was made with the same scorer identity, K, settings, probing query ids and probing
    queries' content (:func:`probes_sha256`); the first-stage scores may differ, as committed shards are accepted
    by content. Otherwise it is ignored and the calibration computed."""
    queries = select_calibration_queries(validation_queries, k, n_queries, seed)
    identity = dict(as_batch_scorer(scorer).key_identity())  # what determines the scores only
    settings: dict[str, Any] = dict(n_queries=n_queries, repeats=repeats, seed=seed, cache_dir=cache_dir)
    ready = ready_calibration(identity, k, queries, known=known, **settings)
    if ready is not None:
        return ready
    return made_calibration(
        identity, k, queries, calibration_counts(scorer, queries, k, repeats, seed, progress), **settings
    )


def ready_calibration(
    identity: Mapping[str, Any],
    k: int,
    queries: Sequence[Query],
    *,
    n_queries: int,
    repeats: int,
    seed: int,
    cache_dir: str | os.PathLike | None,
    known: Mapping[str, Any] | None = None,
) -> Calibration | None:
    """The calibration of the probing ``queries`` (selected, truncated) with the scorer of key ``identity``, when
    no pass is needed: from the cache (:func:`cache_file`; ``from_cache``), or ``known`` when it matches
    (:func:`recorded_counts`; then cached under this machine's key); else ``None``."""
    identity = dict(identity)
    key = calibration_key(identity, k, queries, n_queries, repeats, seed)
    path = cache_file(cache_dir, key)
    meta = _meta(n_queries, repeats, seed)
    probes = probes_sha256(queries)
    if path.is_file():
        try:
            got = read_json(path)
            counts = np.asarray(got["counts"], dtype=np.int64)
            if got.get("key") == key and counts.shape == (k, k):
                query_ids = list(got["query_ids"])
                return Calibration(
                    k,
                    counts,
                    normalise_counts(counts),
                    query_ids,
                    int(got["passes"]),
                    key,
                    True,
                    meta,
                    identity,
                    probes,
                )
        except (OSError, ValueError, KeyError, TypeError):
            pass  # unreadable cache entry: recompute and replace it
    counts_known = recorded_counts(known, identity, k, queries, n_queries, repeats, seed)
    if counts_known is None:
        return None
    return _cached(identity, k, queries, counts_known, True, n_queries, repeats, seed, cache_dir)


def made_calibration(
    identity: Mapping[str, Any],
    k: int,
    queries: Sequence[Query],
    counts: np.ndarray,
    *,
    n_queries: int,
    repeats: int,
    seed: int,
    cache_dir: str | os.PathLike | None,
) -> Calibration:
    """The calibration of computed smoothed ``counts`` (:func:`calibration_counts`, or the sum of the parts of
    :mod:`invarirank.methods._calibration_parts`), written to the cache (:func:`cache_file`)."""
    return _cached(dict(identity), k, queries, counts, False, n_queries, repeats, seed, cache_dir)


def _cached(
    identity: dict[str, Any],
    k: int,
    queries: Sequence[Query],
    counts: np.ndarray,
    from_cache: bool,
    n_queries: int,
    repeats: int,
    seed: int,
    cache_dir: str | os.PathLike | None,
) -> Calibration:
    key = calibration_key(identity, k, queries, n_queries, repeats, seed)
    passes = calibration_pass_count(queries, k, repeats)
    meta = _meta(n_queries, repeats, seed)
    query_ids = [q.query_id for q in queries]
    cal = Calibration(
        k, counts, normalise_counts(counts), query_ids, passes, key, from_cache, meta, identity, probes_sha256(queries)
    )
    atomic_write_json(cache_file(cache_dir, key), {**cal.to_json(), "identity": identity})
    return cal
