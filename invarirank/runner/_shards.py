"""Shards: a run's sampled queries cut into slices that any worker may compute, and the folders they land in.

**Plan.** :func:`plan_shards` cuts the run's test queries, *in run order*, into consecutive slices of
``shard_queries`` queries (the last one shorter): shard ``i`` holds queries ``i·n … (i+1)·n − 1`` (0-based). The plan
depends only on the run's queries and ``shard_queries``, never on the executor or the number of workers. A shard's
id is ``<index:05d>-<sha256 of its query ids, 12 hex>``.

**Folders.** A computed shard lands in ``RUN_DIR/.work/shards/<id>/``, written atomically (a temporary folder
renamed into place) by the driver — workers on other machines write nothing of the run:

    shard.json     {"shard_version", "run", "id", "query_ids", "fingerprint", "parts"}: what it belongs to
    records.jsonl  one QueryRecord per query, in the shard's query order
    volatile.json  the worker (host, pid, slot, GPU ids, model load), seconds: merged into the run's run.json

``fingerprint`` is the run's fingerprint (:func:`run_fingerprint`); ``parts`` are the hashes it is made of
(settings = the run's identity, queries = sha256 of the test queries, validation, scorer = the scorer's key
identity — weights, tokenizer, dtype, device type, options, and the scorer and prompt-template versions — and the
two format versions), so that a shard of another configuration is refused with the parts that differ named.

**Fingerprint versions.** What may change a shard's records is in the fingerprint: the settings, the queries, the
scorer's key identity (its ``scorer_version``/``template_version`` included) and :data:`RECORD_VERSION`, the format
of a query's record (bump it when records change). The package version is *not*: a release that changes no result
keeps every committed shard resumable. Shards written before it was taken out recorded the package version of the
time, ``0.1.0``, under the part ``invarirank``; that part is now the fixed :data:`FINGERPRINT_SCHEME` (``"0.1.0"``,
the meaning of the fingerprint, never a release number), so those shards' fingerprints — and the manifests'
``fingerprint`` — are the same bytes as before.

**One resume record.** Every run is computed in shards, a one-process run too (one query per shard by default,
:meth:`invarirank.runner._executors.LocalExecutor.default_shard_queries`): a finished shard is the only record a
killed run resumes from.

**Merge.** The run is finished when every query has a record; the merge (:func:`invarirank.runner._run.finish_run`)
takes the records in run order, so the files equal a one-process run's whatever the shard size or executor. A
rerun reads the finished shards first (:meth:`ShardFolders.finished`) and computes only the shards that still miss
queries; records of any shard plan of the same fingerprint count, so changing the shard size never recomputes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import atomic_folder, dumps_json
from ..errors import InvariRankError
from ..store import RunFolder
from ._manifest import sha256_json
from ._provenance import QUERY_PARTS

SHARD_VERSION = 1
#: the format of a query's record (``records.jsonl``; the part ``checkpoint`` of the fingerprint): bump it when a
#: change of the code changes records
RECORD_VERSION = 1
#: the fingerprint's part ``invarirank``: fixed at the package version it held when the package version was taken
#: out of the fingerprint (see the module docstring); never bumped with a release
FINGERPRINT_SCHEME = "0.1.0"
#: queries per shard when a sharded executor is asked for none (500 queries → 10 shards per run)
DEFAULT_SHARD_QUERIES = 50


def run_fingerprint(
    identity: Mapping[str, Any], key_identity: Mapping[str, Any], test_sha256: str, validation_sha256: str | None
) -> tuple[str, dict[str, str]]:
    """A run's fingerprint and the hashes it is made of (``parts``): from its identity
    (:meth:`~invarirank.runner.RunConfig.identity`), the scorer's key identity, the test queries' sha256 and the
    validation queries' (``None`` without STELLA_LW), and the two format versions (see the module docstring)."""
    whole = {
        "config": dict(identity),
        "identity": dict(key_identity),
        "queries": test_sha256,
        "validation": validation_sha256,
        "invarirank": FINGERPRINT_SCHEME,
        "checkpoint": RECORD_VERSION,
    }
    parts = {
        "settings": sha256_json(whole["config"]),
        "queries": test_sha256,
        "validation": sha256_json(validation_sha256),
        "scorer": sha256_json(whole["identity"]),
        "invarirank": FINGERPRINT_SCHEME,
        "checkpoint": str(RECORD_VERSION),
    }
    return sha256_json(whole), parts


@dataclass(frozen=True)
class Shard:
    """Slice ``index`` (0-based) of a run's queries: ``query_ids`` in run order."""

    index: int
    query_ids: tuple[str, ...]

    @property
    def id(self) -> str:
        digest = hashlib.sha256("\n".join(self.query_ids).encode("utf-8")).hexdigest()[:12]
        return f"{self.index:05d}-{digest}"


def plan_shards(query_ids: Sequence[str], shard_queries: int) -> list[Shard]:
    """Consecutive slices of ``shard_queries`` query ids (see the module docstring)."""
    if int(shard_queries) < 1:
        raise InvariRankError(f"shard_queries = {shard_queries}, expected at least 1")
    n = int(shard_queries)
    return [Shard(i, tuple(query_ids[s : s + n])) for i, s in enumerate(range(0, len(query_ids), n))]


class ShardFolders:
    """The shard folders of one run folder (``RUN_DIR/.work/shards/``), for a run of ``fingerprint`` made of
    ``parts`` (name → hash)."""

    def __init__(
        self,
        run_dir: Path,
        run: str,
        fingerprint: str,
        parts: Mapping[str, str],
        reproduces: Callable[[list[Mapping[str, Any]]], str | None] | None = None,
    ) -> None:
        self.root = RunFolder(run_dir).shards
        self.run = run
        self.fingerprint = fingerprint
        self.parts = dict(parts)
        #: checks a shard's rows against this run's queries by content (:func:`._provenance.rows_reproduce`)
        self.reproduces = reproduces
        #: shards accepted by content although their query hashes differ (made on another kind of CPU)
        self.accepted_by_content: list[str] = []

    def finished(self) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        """Records of every finished shard (by query id) and their volatile facts. A shard of another
        configuration is an error naming its folder and the parts that differ; temporary folders of an
        interrupted write are removed."""
        records: dict[str, dict[str, Any]] = {}
        volatile: list[dict[str, Any]] = []
        if not self.root.is_dir():
            return records, volatile
        for folder in sorted(self.root.iterdir()):
            if folder.name.startswith("."):
                shutil.rmtree(folder, ignore_errors=True)  # an interrupted write
                continue
            try:
                head = json.loads((folder / "shard.json").read_text(encoding="utf-8"))
                lines = (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()
                recs = [json.loads(line) for line in lines if line.strip()]
            except (OSError, ValueError) as exc:
                raise InvariRankError(
                    f"{folder}: unreadable shard folder ({exc}); remove it to compute the shard again"
                ) from None
            if head.get("fingerprint") != self.fingerprint:
                theirs = head.get("parts") or {}
                differ = sorted(k for k in set(self.parts) | set(theirs) if self.parts.get(k) != theirs.get(k))
                if differ and set(differ) <= QUERY_PARTS and self.reproduces is not None:
                    why = self.reproduces([row for rec in recs for row in rec.get("rows") or []])
                    if why is None:
                        self.accepted_by_content.append(folder.name)
                    else:
                        raise InvariRankError(
                            f"{folder}: a shard of other queries ({why}); remove it to compute the shard again"
                        )
                else:
                    raise InvariRankError(
                        f"{folder}: a shard of another configuration (differs in: {', '.join(differ) or 'unknown'}); "
                        f"rerun it with its own settings, choose another --out, or remove {self.root} (and the "
                        f"shards committed under results/<grid>/<run>/shards/, which a grid run copies back)"
                    )
            if [r.get("query_id") for r in recs] != list(head.get("query_ids") or []):
                raise InvariRankError(
                    f"{folder}: records.jsonl does not hold the shard's queries; remove the "
                    f"folder to compute the shard again"
                )
            for rec in recs:
                records[str(rec["query_id"])] = rec
            vol_path = folder / "volatile.json"
            volatile.append(json.loads(vol_path.read_text(encoding="utf-8")) if vol_path.is_file() else {})
        return records, volatile

    def write(self, shard_id: str, records: Sequence[Mapping[str, Any]], volatile: Mapping[str, Any]) -> Path:
        """Write one computed shard's folder atomically (a temporary folder renamed into place)."""
        target = self.root / shard_id
        with atomic_folder(target) as tmp:
            (tmp / "records.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records), encoding="utf-8"
            )
            (tmp / "volatile.json").write_text(dumps_json(dict(volatile)), encoding="utf-8")
            (tmp / "shard.json").write_text(
                dumps_json(
                    {
                        "shard_version": SHARD_VERSION,
                        "run": self.run,
                        "id": shard_id,
                        "query_ids": [r["query_id"] for r in records],
                        "fingerprint": self.fingerprint,
                        "parts": self.parts,
                    }
                ),
                encoding="utf-8",
            )
        return target
