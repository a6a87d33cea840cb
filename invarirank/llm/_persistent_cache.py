"""The persistent pass cache: an identical serialised prompt is never scored twice, within or across runs.

Key: sha256 of canonical JSON ``{"identity": ..., "prompt": text}`` where the identity holds everything that
decides the scores besides the prompt: the weights' sha256, the tokenizer's sha256, the dtype, the device *type*
(so CPU float32 scores are never reused for a CUDA bfloat16 run), the scorer kind and version, the template
version and digest, and score-relevant options (special delimiters, label set). Options that only change how the
same scores are computed (prefix reuse, batching, logits for all positions) are not part of the key.

Storage: one SQLite file (stdlib ``sqlite3``, WAL journal, safe for several processes), table
``passes(key TEXT PRIMARY KEY, k INTEGER, scores BLOB, tokens INTEGER, identity TEXT)`` where ``scores`` holds the
float32 scores in little-endian byte order (no pickle anywhere) and ``identity`` is a short digest of the identity
(for housekeeping: ``DELETE FROM passes WHERE identity = ...``). An in-memory dict sits in front of it.
Default file: ``cache_dir()/passes/passes.sqlite3``; ``make_scorer(cache_dir=DIR)`` puts it at
``DIR/passes.sqlite3``. A cache may also read other such files, read-only, on a miss (:meth:`read_also`: the run's
workers each write their own file on a machine and read their siblings', so a resumed shard finds the passes
computed before a stop whichever worker takes it); it never writes to them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_VERSION = 1


def pass_key(identity: dict[str, Any], prompt: str) -> str:
    """sha256 (hex) of the canonical JSON of (identity, prompt)."""
    blob = json.dumps(
        {"identity": identity, "prompt": prompt, "schema": SCHEMA_VERSION},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def default_cache_path(cache_dir: str | Path | None = None) -> Path:
    """``<cache_dir>/passes.sqlite3``, or ``cache_dir()/passes/passes.sqlite3`` when ``cache_dir`` is None."""
    if cache_dir is None:
        from invarirank.assets import cache_dir as root

        return root() / "passes" / "passes.sqlite3"
    return Path(cache_dir).expanduser() / "passes.sqlite3"


class PersistentPassCache:
    """Scores by pass key, in memory and (when ``path`` is given) in a SQLite file that outlives the process
    (the per-query in-memory cache of a run is :class:`invarirank.methods.QueryPassCache`)."""

    def __init__(self, path: str | Path | None = None, *, memory_limit: int = 1_000_000):
        self.path = Path(path) if path is not None else None
        self._mem: dict[str, np.ndarray] = {}
        self._memory_limit = memory_limit
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._others: list[sqlite3.Connection] = []
        self.read_paths: list[Path] = []
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=60, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS passes (key TEXT PRIMARY KEY, k INTEGER NOT NULL, "
                "scores BLOB NOT NULL, tokens INTEGER NOT NULL, identity TEXT NOT NULL)"
            )

    def get(self, key: str) -> tuple[np.ndarray, str] | None:
        """(scores, where) with where ∈ {"memory", "disk"}, or None on a miss. Returns a fresh copy."""
        with self._lock:
            hit = self._mem.get(key)
            if hit is not None:
                return hit.copy(), "memory"
            if self._db is None:
                return None
            row = self._db.execute("SELECT k, scores FROM passes WHERE key = ?", (key,)).fetchone()
            for other in self._others:
                if row is not None:
                    break
                try:
                    row = other.execute("SELECT k, scores FROM passes WHERE key = ?", (key,)).fetchone()
                except sqlite3.Error:  # a sibling file still being created, or damaged: only a miss
                    row = None
        if row is None:
            return None
        k, blob = row
        scores = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        if scores.shape != (k,):
            return None
        self._remember(key, scores)
        return scores.copy(), "disk"

    def read_also(self, paths: Iterable[str | Path]) -> None:
        """On a miss, also look in these SQLite files (opened read-only; absent ones are skipped): passes another
        process wrote with the same key scheme. Hits from them count as ``"disk"``; nothing is written to them."""
        if self._db is None:
            return
        for path in paths:
            path = Path(path)
            if path == self.path or not path.is_file():
                continue
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60, check_same_thread=False)
            with self._lock:
                self._others.append(conn)
                self.read_paths.append(path)

    def put(self, key: str, scores: np.ndarray, tokens: int, identity_digest: str) -> None:
        arr = np.ascontiguousarray(scores, dtype="<f4")
        self._remember(key, arr.astype(np.float32))
        if self._db is not None:
            with self._lock:
                self._db.execute(
                    "INSERT OR IGNORE INTO passes (key, k, scores, tokens, identity) VALUES (?,?,?,?,?)",
                    (key, int(arr.shape[0]), arr.tobytes(), int(tokens), identity_digest),
                )

    def _remember(self, key: str, scores: np.ndarray) -> None:
        with self._lock:
            if len(self._mem) >= self._memory_limit:
                self._mem.clear()
            self._mem[key] = scores

    def __len__(self) -> int:
        if self._db is not None:
            with self._lock:
                return int(self._db.execute("SELECT COUNT(*) FROM passes").fetchone()[0])
        return len(self._mem)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            for other in self._others:
                other.close()
            self._others.clear()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
