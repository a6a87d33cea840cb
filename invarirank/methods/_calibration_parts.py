"""STELLA_LW's calibration in parts: one part per probing query, computed anywhere, in any order, and summed into the
very counts of the one-piece calibration (:func:`invarirank.methods._stella_calibration.calibration_counts`).

**Why it decomposes.** The smoothed counts are ``1 + Σ_q part_counts(q)`` over the probing queries, and a query's
probes are seeded by ``(seed, query_id, relevant id, p, repeat)`` alone: a query's part depends on that query,
K, the repeats, the seed and the scorer, never on the other queries or on who computes it. Integer sums in any
order give the same int64 matrix, so the same ``calibration.json`` bytes.

**A part** (:meth:`CalibrationPlan.record`) is JSON: its *head* — what determines it — ``part_version``,
``method``, ``k``, ``query_id``, ``relevant`` (the query's relevant candidates among its first K, in candidate
order), ``repeats``, ``seed``, ``identity`` (the scorer's key identity, as the shards' fingerprint takes it:
weights, tokenizer, dtype, device type, scorer and template versions) and ``probe_sha256`` (the truncated query
without its first-stage scores, as :func:`~invarirank.methods._stella_calibration.probes_sha256`); then ``key``
(sha256 of the head), ``passes`` and ``top1`` (per probe, in probe order, the position the scorer ranked first:
:func:`~invarirank.methods._stella_calibration.probe_top1`). The number of probing queries is not in it: a part
is the same whichever sample it belongs to.

**Matching rule** (:meth:`CalibrationPlan.match`): a part of a query that is not one of the plan's probing queries
is not counted (left alone); a part of a probing query whose head differs from the plan's in any field is a part
of *another* calibration, which the caller refuses (the runner stops with one line naming the file and the fields);
a part whose ``top1`` is not a list of ``len(relevant) × K × repeats`` positions in ``0..K-1`` is malformed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..types import Query, Scorer
from ._stella_calibration import (
    Calibration,
    _relevant,
    calibration_pass_count,
    made_calibration,
    part_counts,
    probe_top1,
    probes_sha256,
    ready_calibration,
    select_calibration_queries,
)
from ._stella_calibration import (
    calibration_need as whole_need,
)

#: the format of a calibration part (bump it when the same settings would give another part)
PART_VERSION = 1
#: the fields of a part's head, in the order a difference is named
HEAD_FIELDS = ("part_version", "method", "k", "query_id", "relevant", "repeats", "seed", "identity", "probe_sha256")


def _plain(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists, keys as strings): what a part read from disk holds."""
    return json.loads(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


@dataclass
class CalibrationPlan:
    """One calibration (a method's, for lists of ``k``) about to be computed in parts: the probing ``queries``
    (selected, truncated), the settings, the scorer's key ``identity`` and ``done``: the whole calibration when it
    needs no pass (from the cache or the run's recorded calibration), else ``None``."""

    method: str
    k: int
    queries: list[Query]
    n_queries: int
    repeats: int
    seed: int
    identity: dict[str, Any]
    cache_dir: str | os.PathLike | None
    done: Calibration | None

    @property
    def passes(self) -> int:
        """Scorer passes of all its parts."""
        return calibration_pass_count(self.queries, self.k, self.repeats)

    def part_passes(self, index: int) -> int:
        """Scorer passes of the part of probing query ``index``."""
        return calibration_pass_count(self.queries[index : index + 1], self.k, self.repeats)

    def head(self, index: int) -> dict[str, Any]:
        """What determines the part of probing query ``index`` (see the module docstring)."""
        q = self.queries[index]
        return _plain(
            {
                "part_version": PART_VERSION,
                "method": self.method,
                "k": self.k,
                "query_id": q.query_id,
                "relevant": _relevant(q),
                "repeats": self.repeats,
                "seed": self.seed,
                "identity": self.identity,
                "probe_sha256": probes_sha256([q]),
            }
        )

    def record(self, index: int, top1: Sequence[int]) -> dict[str, Any]:
        """The part of probing query ``index`` (JSON, see the module docstring) from its scored probes."""
        head = self.head(index)
        return {**head, "key": part_key(head), "passes": len(top1), "top1": [int(j) for j in top1]}

    def match(self, record: Any) -> tuple[int | None, list[str]]:
        """``(index, differences)`` of a part read back: ``index`` of its probing query (``None``: not a probing
        query of this plan, or not a part at all) and the head fields in which it differs from the plan's part of
        that query (``["top1"]``: malformed probes); ``(index, [])`` is a part to count."""
        if not isinstance(record, Mapping):
            return None, ["part"]
        ids = [q.query_id for q in self.queries]
        if record.get("query_id") not in ids:
            return None, []
        index = ids.index(record["query_id"])
        head = self.head(index)
        differ = [name for name in HEAD_FIELDS if record.get(name) != head[name]]
        top1 = record.get("top1")
        want = len(head["relevant"]) * self.k * self.repeats
        valid = (
            isinstance(top1, list)
            and len(top1) == want
            and all(isinstance(j, int) and not isinstance(j, bool) and 0 <= j < self.k for j in top1)
        )
        if not differ and not valid:
            differ = ["top1"]
        return index, differ

    def finish(self, parts: Mapping[int, Sequence[int]]) -> Calibration:
        """The calibration from every part (``parts``: probing query index → its ``top1``): 1 plus the parts'
        counts summed in query order, cached as the one-piece calibration is."""
        missing = [self.queries[i].query_id for i in range(len(self.queries)) if i not in parts]
        if missing:
            raise ValueError(f"calibration K={self.k}: parts missing for {missing}")
        counts = np.ones((self.k, self.k), dtype=np.int64)
        for i in range(len(self.queries)):
            counts += part_counts(parts[i], self.k, self.repeats)
        return made_calibration(
            self.identity,
            self.k,
            self.queries,
            counts,
            n_queries=self.n_queries,
            repeats=self.repeats,
            seed=self.seed,
            cache_dir=self.cache_dir,
        )


def part_key(head: Mapping[str, Any]) -> str:
    """sha256 of a part's head (canonical JSON)."""
    blob = json.dumps(dict(head), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def plan_calibration(
    validation_queries: Sequence[Query],
    k: int,
    key_identity: Mapping[str, Any],
    *,
    method: str,
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    known: Mapping[str, Any] | None = None,
    settle: bool = True,
) -> CalibrationPlan:
    """The plan of ``method``'s calibration for lists of ``k`` with the scorer of key ``key_identity``: its probing
    queries (:func:`~invarirank.methods._stella_calibration.select_calibration_queries`) and, when no pass is
    needed, the calibration itself (the cache, or ``known`` when it matches:
    :func:`~invarirank.methods._stella_calibration.ready_calibration`, which caches a ``known`` it takes).
    Scores nothing; ``settle=False`` looks neither in the cache nor at ``known`` (``done`` is ``None``)."""
    queries = select_calibration_queries(validation_queries, k, n_queries, seed)
    identity = dict(key_identity)
    settings: dict[str, Any] = dict(n_queries=n_queries, repeats=repeats, seed=seed, cache_dir=cache_dir)
    done = ready_calibration(identity, k, queries, known=known, **settings) if settle else None
    return CalibrationPlan(method, k, queries, n_queries, repeats, seed, identity, cache_dir, done)


def compute_part(scorer: Scorer, query: Query, k: int, *, repeats: int, seed: int) -> list[int]:
    """One part's scored probes (its ``top1``, :func:`~invarirank.methods._stella_calibration.probe_top1`): what a
    worker computes."""
    return probe_top1(scorer, query, k, repeats, seed)


def calibration_need(
    validation_queries: Sequence[Query],
    k: int,
    key_identity: Mapping[str, Any],
    *,
    method: str = "",
    n_queries: int = 150,
    repeats: int = 5,
    seed: int = 0,
    cache_dir: str | os.PathLike | None = None,
    known: Mapping[str, Any] | None = None,
    parts: Sequence[Any] = (),
) -> tuple[int, bool, int]:
    """What computing the calibration in parts would still cost, scoring nothing: ``(passes, cached, probes)`` as
    :func:`invarirank.methods._stella_calibration.calibration_need`, less the probing queries whose part is among
    ``parts`` (parts read back, e.g. from the run's journal) and matches (:meth:`CalibrationPlan.match`)."""
    settings: dict[str, Any] = dict(n_queries=n_queries, repeats=repeats, seed=seed, cache_dir=cache_dir)
    passes, cached, probes = whole_need(validation_queries, k, key_identity, known=known, **settings)
    if cached or not parts:
        return passes, cached, probes
    plan = plan_calibration(validation_queries, k, key_identity, method=method, settle=False, **settings)
    have = set()
    for record in parts:
        index, differ = plan.match(record)
        if index is not None and not differ:
            have.add(index)
    left = [q for i, q in enumerate(plan.queries) if i not in have]
    return calibration_pass_count(left, k, repeats), False, len(left)
