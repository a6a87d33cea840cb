"""Training a retriever (LightGCN, ALS or popularity) on a prepared folder's training positives, the settings that
determine a trained model (they and the training graph make its cache key), and the cache entry of its
embeddings: ``model.safetensors`` with a JSON sidecar (settings, data hash, loss curve, training time). A damaged
entry is retrained, never trusted.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_path, atomic_write_json, read_json
from ..errors import InvariRankError
from ._data import RetrievalData

RETRIEVERS = ("lightgcn", "als", "popularity")
#: the most LightGCN epochs / ALS iterations ``--epochs`` may ask for (the protocol uses 100 / 20)
MAX_EPOCHS = 10_000
#: seeds are unsigned 32-bit integers (implicit's ALS and numpy's legacy seeding take no more)
MAX_SEED = 2**32 - 1
# bump when a change alters trained embeddings or candidates, so old cache entries are not reused
CODE_VERSION = 1


def check_retriever(retriever: str) -> str:
    if retriever not in RETRIEVERS:
        raise InvariRankError(f"--retriever {retriever!r}: unknown retriever; expected one of {', '.join(RETRIEVERS)}")
    return retriever


def model_settings(
    retriever: str,
    *,
    seed: int = 42,
    epochs: int | None = None,
    device_type: str = "cpu",
    positive_threshold: float = 4.0,
    threads: int | None = None,
) -> dict[str, Any]:
    """The settings that determine a trained model (JSON-able); ``epochs`` overrides LightGCN epochs /
    ALS iterations; ``threads`` is LightGCN's resolved CPU thread count (floating-point sums may
    depend on it)."""
    check_retriever(retriever)
    if epochs is not None and not 1 <= int(epochs) <= MAX_EPOCHS:
        raise InvariRankError(f"--epochs {epochs}: expected a positive integer, at most the limit {MAX_EPOCHS:,}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise InvariRankError(f"--seed {seed}: expected an integer from 0 to {MAX_SEED} (2^32 - 1)")
    settings: dict[str, Any] = {
        "retriever": retriever,
        "positive_threshold": float(positive_threshold),
        "code_version": CODE_VERSION,
    }
    if retriever == "lightgcn":
        from ._lightgcn import LightGCNConfig

        cfg = LightGCNConfig() if epochs is None else LightGCNConfig(epochs=int(epochs))
        settings.update(config=cfg.to_json(), seed=int(seed), device=device_type)
        if device_type == "cpu" and threads is not None:
            settings["threads"] = int(threads)
    elif retriever == "als":
        from ._als import ALSConfig

        cfg = ALSConfig() if epochs is None else ALSConfig(iterations=int(epochs))
        settings.update(config=cfg.to_json(), seed=int(seed))
    return settings


def settings_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def train_retriever(
    data: RetrievalData,
    retriever: str,
    *,
    seed: int = 42,
    epochs: int | None = None,
    device: str | None = None,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train one retriever on ``data``'s training positives (no caching)."""
    check_retriever(retriever)
    args = (data.n_users, data.n_items, data.pos_user, data.pos_item)
    if retriever == "lightgcn":
        from ._lightgcn import LightGCNConfig, train_lightgcn

        cfg = LightGCNConfig() if epochs is None else LightGCNConfig(epochs=int(epochs))
        return train_lightgcn(*args, config=cfg, seed=seed, device=device, progress=progress)
    if retriever == "als":
        from ._als import ALSConfig, train_als

        cfg = ALSConfig() if epochs is None else ALSConfig(iterations=int(epochs))
        return train_als(*args, config=cfg, seed=seed, progress=progress)
    from ._popularity import train_popularity

    return train_popularity(*args)


def save_model(folder: Path, users: np.ndarray, items: np.ndarray, sidecar: dict) -> None:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / "model.safetensors") as tmp:
        save_file(
            {
                "user": np.ascontiguousarray(users, dtype=np.float32),
                "item": np.ascontiguousarray(items, dtype=np.float32),
            },
            str(tmp),
            metadata={"key": sidecar["key"]},
        )
    atomic_write_json(folder / "model.json", sidecar)


def load_model(folder: Path, key: str) -> tuple[np.ndarray, np.ndarray, dict] | None:
    meta_path, weights = folder / "model.json", folder / "model.safetensors"
    if not (meta_path.is_file() and weights.is_file()):
        return None
    try:
        from safetensors.numpy import load_file

        meta = read_json(meta_path)
        if meta.get("key") != key:
            return None
        tensors = load_file(str(weights))
        return tensors["user"], tensors["item"], meta
    except Exception:  # a damaged cache entry is retrained, never trusted
        return None
