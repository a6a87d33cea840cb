"""Weight files and model identity: the safety checks a model folder passes before loading (safetensors only,
complete files; pickle-based weights only when allowed) and the sha256 hashes that identify weights and
tokenizers in manifests and pass-cache keys.

A prepared registry folder (:mod:`invarirank.llm._gguf`) carries :data:`MANIFEST_NAME` with its weights' sha256, so
a load never re-hashes it; other folders' weight files are hashed once and memoised in
``cache_dir()/weights-sha256.json``; in-memory models hash their parameters.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from invarirank._io import sha256_file
from invarirank.errors import InvariRankError

#: the manifest of a prepared model folder (written last, so its presence means the folder is complete)
MANIFEST_NAME = "invarirank-model.json"


def _cache_root() -> Path:
    from invarirank.assets import cache_dir

    return cache_dir()


_PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth")


def check_weights(folder: Path, *, allow_pickle: bool = False) -> list[Path]:
    """The weight files of a model folder, checked before loading: safetensors files whose header and data are
    complete (a truncated download is an error naming the file), or — only with ``allow_pickle`` — pickle-based
    files; raises :class:`InvariRankError` otherwise."""
    safe = sorted(folder.glob("*.safetensors"))
    if safe:
        for f in safe:
            _check_safetensors(f)
        return safe
    pickled = [f for pattern in _PICKLE_PATTERNS for f in sorted(folder.glob(pattern))]
    if not pickled:
        raise InvariRankError(f"model folder {folder}: no weight files (*.safetensors) found")
    if not allow_pickle:
        raise InvariRankError(
            f"model folder {folder}: only pickle-based weights ({pickled[0].name}), which can run "
            f"code when loaded; convert them to safetensors, or pass --allow-pickle-weights if you "
            f"trust their source"
        )
    return pickled


def _check_safetensors(path: Path) -> None:
    """A safetensors file: 8-byte little-endian header length, a JSON header, then the tensors' bytes; every
    tensor's ``data_offsets`` must lie inside the file."""
    size = path.stat().st_size
    bad = f"model file {path}: not a complete safetensors file"
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise InvariRankError(f"{bad} ({size} bytes; truncated?)")
        n = int.from_bytes(head, "little")
        if n <= 0 or 8 + n > size:
            raise InvariRankError(f"{bad} (header of {n} bytes in a file of {size}; truncated?)")
        try:
            header = json.loads(fh.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise InvariRankError(f"{bad} (unreadable header)") from None
    if not isinstance(header, dict):
        raise InvariRankError(f"{bad} (unreadable header)")
    end = max(
        (
            int(t["data_offsets"][1])
            for k, t in header.items()
            if k != "__metadata__"
            and isinstance(t, dict)
            and isinstance(t.get("data_offsets"), list)
            and len(t["data_offsets"]) == 2
        ),
        default=0,
    )
    if 8 + n + end > size:
        raise InvariRankError(f"{bad} (its tensors need {8 + n + end} bytes, the file has {size}; truncated?)")


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        files = sorted(folder.glob("*.bin")) + sorted(folder.glob("*.pt")) + sorted(folder.glob("*.pth"))
    return files


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _file_sha256_memo(path: Path) -> str:
    """sha256 of one weight file; Hub-cache blobs are named by their sha256 (read from the name), others are
    hashed once and memoised in ``cache_dir()/weights-sha256.json`` keyed by (real path, size, mtime)."""
    real = Path(os.path.realpath(path))
    if _HEX64.match(real.name):  # huggingface_hub stores LFS blobs under their sha256
        return real.name
    st = real.stat()
    memo_path = _cache_root() / "weights-sha256.json"
    key = f"{real}|{st.st_size}|{st.st_mtime_ns}"
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    digest = sha256_file(real)
    memo[key] = digest
    from invarirank._io import atomic_write_json

    atomic_write_json(memo_path, memo)
    return digest


def hash_weight_files(folder: Path) -> str:
    files = _weight_files(folder)
    if not files:
        raise InvariRankError(f"model folder {folder}: no weight files (*.safetensors or *.bin) found")
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(b"\0")
        h.update(_file_sha256_memo(f).encode())
        h.update(b"\n")
    return h.hexdigest()


def weights_sha256(model: Any, folder: Path | None = None) -> str:
    """sha256 that identifies the weights: of the weight files in ``folder`` when there are some, else of the
    model's parameters and buffers themselves (for models built in memory, e.g. tiny test models)."""
    if folder is not None:
        manifest = folder / MANIFEST_NAME
        if manifest.is_file():
            try:
                return str(json.loads(manifest.read_text(encoding="utf-8"))["weights_sha256"])
            except (ValueError, KeyError):
                pass
        if _weight_files(folder):
            return hash_weight_files(folder)
    import torch

    h = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(key.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def hash_tokenizer(tokenizer: Any) -> str:
    """sha256 of the tokenizer's vocabulary, added tokens and chat template (what decides the token ids)."""
    h = hashlib.sha256()
    vocab = tokenizer.get_vocab()
    for tok, idx in sorted(vocab.items(), key=lambda kv: kv[1]):
        h.update(f"{idx}\t{tok}\n".encode("utf-8", "surrogatepass"))
    h.update(repr(getattr(tokenizer, "bos_token_id", None)).encode())
    template = getattr(tokenizer, "chat_template", None)
    h.update(
        (template if isinstance(template, str) else json.dumps(template, sort_keys=True, default=str)).encode("utf-8")
    )
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        try:
            h.update(backend.to_str().encode("utf-8"))
        except Exception:  # pragma: no cover - slow tokenizers
            pass
    return h.hexdigest()
