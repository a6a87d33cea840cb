"""What a run reads from a user's files, by content: the reuse check's part beyond the settings.

A run's identity (:meth:`~invarirank.runner.RunConfig.identity`) holds its settings, not its input files' paths,
and the paths would not do either: a candidates file edited in place, or other raw files at the same ``raw_dir``,
must not be reused as the old results. :func:`input_hashes` gives a content hash of each input file a run has —
``candidates`` (the file's bytes), ``raw_dir`` (the raw files the data preparation reads: role, name and content,
by :func:`invarirank.data._raw_inputs.raw_fingerprint`, which hashes files up to 1 GiB and records size and
modification time above that) and ``data_dir`` (every file of the prepared folder) — and nothing for a run on the
embedded data, so committed runs, their identities and their shards stay as they are. The manifest of a new run
records them (``inputs``); :func:`invarirank.runner.run_status` compares them. Shards need no such check: their
fingerprint already holds the hash of the queries themselves.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from .._io import sha256_file
from ..errors import InvariRankError
from ._config import RunConfig

#: (path, size, mtime_ns) → sha256, for this process (status checks of one command hash a file once)
_MEMO: dict[tuple[str, int, int], str] = {}


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _MEMO:
        _MEMO[key] = sha256_file(path)
    return _MEMO[key]


def _folder_sha256(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and not q.name.startswith(".")):
        h.update(f"{p.relative_to(folder).as_posix()}\0{_file_sha256(p)}\n".encode())
    return h.hexdigest()


def input_hashes(config: RunConfig) -> dict[str, str]:
    """``{"candidates" | "raw_dir" | "data_dir": sha256}`` for each input of ``config`` that names a user's file
    or folder (see the module docstring); ``{}`` for a run on the embedded data. An input that cannot be read yet
    is left out: the run itself reports it, naming the file."""
    out: dict[str, str] = {}
    config = config.with_absolute_paths(Path.cwd())  # what the run reads (a grid's paths are absolute already)
    try:
        if config.candidates and Path(config.candidates).is_file():
            out["candidates"] = _file_sha256(Path(config.candidates))
        if config.data_dir and Path(config.data_dir).is_dir():
            out["data_dir"] = _folder_sha256(Path(config.data_dir))
        elif config.raw_dir and not config.candidates:
            from ..data._raw_inputs import raw_files, raw_fingerprint

            raw = Path(config.raw_dir)
            if raw.is_dir():
                entries = [
                    raw_fingerprint(p, role) for role, p in sorted(raw_files(config.effective_dataset, raw).items())
                ]
                out["raw_dir"] = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()
    except (OSError, InvariRankError):
        return out
    return out


def stored_inputs(manifest: Any) -> dict[str, str]:
    """The ``inputs`` a manifest recorded (``{}`` for a run on the embedded data, or one made before they were
    recorded)."""
    inputs = manifest.get("inputs") if isinstance(manifest, dict) else None
    return dict(inputs) if isinstance(inputs, dict) else {}
