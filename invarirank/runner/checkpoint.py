"""Resumability: an append-only JSONL of finished queries under ``RUN_DIR/.work/checkpoint.jsonl``.

The first line holds a fingerprint of the run (its identity, the data and the scorer's key identity); each
further line is one :class:`invarirank.runner.records.QueryRecord`, appended with flush + fsync. A kill leaves at
most a torn last line, which :meth:`Checkpoint.load` cuts off, so a rerun of the same command reranks only the
missing queries.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..errors import InvariRankError

__all__ = ["Checkpoint", "CHECKPOINT_VERSION"]

CHECKPOINT_VERSION = 1


class Checkpoint:
    """The checkpoint file at ``path`` of the run with ``fingerprint``."""

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint

    def load(self) -> dict[str, dict]:
        """The finished queries' records by query id; a torn last line (no newline: a kill mid-write) is cut off.
        A checkpoint of another run is an error naming the file."""
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]          # everything up to the last newline
        for n, raw in enumerate(complete.split(b"\n")[:-1], 1):
            try:
                rec = json.loads(raw.decode("utf-8"))
                if not isinstance(rec, dict):
                    raise ValueError
            except (UnicodeDecodeError, ValueError):
                raise InvariRankError(f"{self.path}:{n}: corrupt checkpoint line; remove {self.path.parent} "
                                      f"to start the run afresh") from None
            if n == 1:
                if rec.get("fingerprint") != self.fingerprint:
                    raise InvariRankError(
                        f"{self.path}: an unfinished run with a different configuration, data or model is in "
                        f"this folder; rerun it with its own settings, choose another --out, or remove "
                        f"{self.path.parent}")
            else:
                done[str(rec["query_id"])] = rec
        if len(complete) < len(data):
            if complete:
                with open(self.path, "r+b") as fh:         # keep appends line-aligned
                    fh.truncate(len(complete))
            else:
                self.path.unlink()
        return done

    def _append(self, obj: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def ensure_header(self) -> None:
        """Write the fingerprint line if the file does not exist yet."""
        if not self.path.exists():
            self._append({"checkpoint_version": CHECKPOINT_VERSION, "fingerprint": self.fingerprint})

    def append(self, record: Mapping[str, Any]) -> None:
        """Append one finished query's record (durable once this returns)."""
        self._append(record)
