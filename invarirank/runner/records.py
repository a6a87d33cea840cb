"""The records a run hands on, as small dataclasses: one observation row, one checkpointed query, and the
manifest's sections. :mod:`invarirank.runner.rerank` makes the first two; :mod:`invarirank.runner._manifest`
writes the manifest from the others. ``to_json()`` gives exactly the dict written to disk (field order = key
order, so equal runs give byte-identical files).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["ObservationRow"]


class _Record:
    def to_json(self) -> dict[str, Any]:
        """The record as the JSON object written to disk (keys in field order)."""
        return dataclasses.asdict(self)  # type: ignore[call-overload]


@dataclass
class ObservationRow(_Record):
    """One line of ``observations.jsonl`` (the evaluation core's schema): method ``method`` on presented order
    ``permutation`` (0-based t) of query ``query_id``. ``input`` = the presented item ids (0-based positions),
    ``output`` = the method's ranking, best first; ``scores`` = the first pass's scores aligned with ``input``
    (higher = preferred); ``passes`` = scorer calls the method requested for this order (before de-duplication).

    Stability: full (one observation row, as ``rerank_query`` returns it (``to_json()`` is the file's line))."""

    query_id: str
    method: str
    permutation: int
    input: list[str]
    output: list[str]
    relevant: list[str]
    model: str
    dataset: str
    k: int
    scores: list[float]
    passes: int
    schema_version: int = 1

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return {"schema_version": d.pop("schema_version"), **d}


@dataclass
class QueryRecord(_Record):
    """One finished query, as checkpointed: its rows (by method, then order), requested passes per method, and
    the shared pass cache's counters for this query (``requests`` = ``hits`` + ``misses``; ``tokens`` computed);
    ``seconds`` is wall-clock time (it only reaches the manifest's volatile ``run`` section)."""

    query_id: str
    rows: list[dict[str, Any]]
    passes: dict[str, int]
    requests: int
    hits: int
    misses: int
    tokens: int
    seconds: float = 0.0


@dataclass
class QueriesSection(_Record):
    """The manifest's ``queries``: how many, which (in run order), their K values, the validation queries
    available to STELLA_LW's calibration, and the test queries' fingerprint."""

    count: int
    ids: list[str]
    k: list[int]
    validation_available: int
    fingerprint: str


@dataclass
class PassesSection(_Record):
    """The manifest's ``passes``: per method (requested passes, orders, per-order mean/min/max), passes requested
    by all methods, ``scorer_calls`` (sent to the scorer after the shared pass cache), its hits and hit rate, and
    STELLA_LW's calibration passes per K."""

    per_method: dict[str, dict[str, Any]]
    requested: int
    scorer_calls: int
    shared_cache_hits: int
    shared_cache_hit_rate: float | None
    calibration: dict[str, dict[str, Any]]


@dataclass
class FilesSection(_Record):
    """The manifest's ``files``: the run folder's file names and the observations' sha256."""

    observations: str
    metrics: str
    calibration: str | None
    observations_sha256: str


@dataclass
class Manifest(_Record):
    """``manifest.json``: everything that describes a run and only what is the same for equal runs (settings,
    data, queries, scorer identity, seeds, pass counts, files, package versions). What varies between equal runs
    — timings, hosts, the git checkout, model loads, per-shard counters, machine paths — goes to the run folder's
    volatile file (``run.json``, :data:`invarirank.store.VOLATILE_FILE`), so that equal runs have equal
    manifests."""

    fingerprint: str
    config: dict[str, Any]
    data: dict[str, Any]
    queries: QueriesSection
    model: dict[str, Any]
    methods: list[str]
    seeds: dict[str, Any]
    passes: PassesSection
    files: FilesSection
    packages: dict[str, Any]
    invarirank_version: str = ""
    manifest_version: int = 2
    #: content hashes of the user's input files (:mod:`invarirank.runner._inputs`); written only when there are any
    inputs: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        head = {"manifest_version": d.pop("manifest_version"), "invarirank_version": d.pop("invarirank_version")}
        if not d["inputs"]:
            del d["inputs"]
        return {**head, **d}
