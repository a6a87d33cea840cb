"""The first stage end to end: train (or load) a retriever, take the top-K unseen items of every query,
keep the queries whose top-K holds a ground-truth item, and write ``candidates.jsonl`` + ``stats.json``.

* Candidates of a test query exclude the user's train and validation items; those of a validation
  query exclude the user's train items (the union of the query's ``exclude`` list and the
  interactions of those splits). Order: descending dot-product score, ties to the lower item id.
* A query is kept only when its top-K holds at least one ground-truth item; relevant items are never
  injected. ``stats.json`` reports ``queries_kept`` / ``queries_dropped`` for the chosen K and, over
  all test queries, ``coverage@K``, ``recall@K``, ``hr@K``, ``ndcg@K`` for K in {15, 25, 50} (and the
  chosen K), plus the training time and loss curve; the same for validation queries under
  ``"validation"``.
* ``candidates.jsonl`` (see :mod:`invarirank.candidates`): the kept test queries, then the kept
  validation queries, in ``queries.parquet`` order.
* Caching: trained embeddings go to ``cache_dir()/retrieval/<retriever>-<key>/model.safetensors``
  with a JSON sidecar (settings, data hash, loss curve, training time); the key hashes the training
  graph and the settings (and the device type for LightGCN). Candidates are written to ``out`` or,
  when ``out`` is None, to ``k<K>-<key>/`` inside that folder; existing files with the same key are
  reused.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..assets import cache_dir
from ..candidates import read_candidates, write_candidates
from ..errors import InvariRankError
from ..io import atomic_path, atomic_write_json, read_json
from ..types import HistoryEntry, Query
from .candidates import top_k_unseen
from .data import RetrievalData, load_retrieval_data
from .metrics import DEFAULT_KS, retrieval_metrics

__all__ = [
    "RETRIEVERS",
    "RetrievalResult",
    "retrieve",
    "train_retriever",
    "model_settings",
    "select_queries",
    "rank_queries",
    "evaluate_embeddings",
    "format_stats",
    "STATS_SCHEMA_VERSION",
    "CODE_VERSION",
]

RETRIEVERS = ("lightgcn", "als", "popularity")
#: the most LightGCN epochs / ALS iterations ``--epochs`` may ask for (the protocol uses 100 / 20)
MAX_EPOCHS = 10_000
#: seeds are unsigned 32-bit integers (implicit's ALS and numpy's legacy seeding take no more)
MAX_SEED = 2**32 - 1
STATS_SCHEMA_VERSION = 1
# bump when a change alters trained embeddings or candidates, so old cache entries are not reused
CODE_VERSION = 1


@dataclass
class RetrievalResult:
    """What :func:`retrieve` produced. ``test`` / ``validation`` hold the kept queries."""

    out_dir: Path
    test: list[Query]
    validation: list[Query]
    stats: dict[str, Any]
    model_dir: Path | None = None
    model_cached: bool = False
    candidates_cached: bool = False

    @property
    def candidates_path(self) -> Path:
        return self.out_dir / "candidates.jsonl"


def _check_retriever(retriever: str) -> str:
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
    _check_retriever(retriever)
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
        from .lightgcn import LightGCNConfig

        cfg = LightGCNConfig() if epochs is None else LightGCNConfig(epochs=int(epochs))
        settings.update(config=cfg.to_json(), seed=int(seed), device=device_type)
        if device_type == "cpu" and threads is not None:
            settings["threads"] = int(threads)
    elif retriever == "als":
        from .als import ALSConfig

        cfg = ALSConfig() if epochs is None else ALSConfig(iterations=int(epochs))
        settings.update(config=cfg.to_json(), seed=int(seed))
    return settings


def _key(*parts: Any) -> str:
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
    _check_retriever(retriever)
    args = (data.n_users, data.n_items, data.pos_user, data.pos_item)
    if retriever == "lightgcn":
        from .lightgcn import LightGCNConfig, train_lightgcn

        cfg = LightGCNConfig() if epochs is None else LightGCNConfig(epochs=int(epochs))
        return train_lightgcn(*args, config=cfg, seed=seed, device=device, progress=progress)
    if retriever == "als":
        from .als import ALSConfig, train_als

        cfg = ALSConfig() if epochs is None else ALSConfig(iterations=int(epochs))
        return train_als(*args, config=cfg, seed=seed, progress=progress)
    from .popularity import train_popularity

    return train_popularity(*args)


def _save_model(folder: Path, users: np.ndarray, items: np.ndarray, sidecar: dict) -> None:
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


def _load_model(folder: Path, key: str) -> tuple[np.ndarray, np.ndarray, dict] | None:
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


def _resolve_data_dir(data_dir: str | Path) -> Path:
    """A prepared folder, or a dataset name handed to ``invarirank.data.preparation`` (cached)."""
    path = Path(data_dir)
    if path.exists() or any(sep in str(data_dir) for sep in ("/", "\\")):
        return path
    try:
        from ..data import prepare  # type: ignore[attr-defined]
    except ImportError:
        return path
    try:
        return Path(prepare(str(data_dir)))
    except InvariRankError as exc:
        raise InvariRankError(f"--data {data_dir}: not a prepared data folder, and as a dataset name: {exc}") from None


def prepared_threshold(folder: Path) -> float:
    """The positive threshold the folder was prepared with (its ``stats.json``, checked), so the first stage trains
    on the same positives the queries use; 4.0 (the protocol's) for a folder without ``stats.json``."""
    if not (folder / "stats.json").is_file():
        return 4.0
    from ..data.prepared import read_stats

    return float(read_stats(folder).get("positive_threshold", 4.0))


def _exclusions(data: RetrievalData, row: dict) -> np.ndarray:
    """Item indices a query must never get: its ``exclude`` list ∪ the user's seen items of the splits
    before the query's target segment."""
    user = str(row["user_id"])
    parts = [data.seen_train.get(user, np.empty(0, np.int64))]
    if row["split"] == "test":
        parts.append(data.seen_validation.get(user, np.empty(0, np.int64)))
    listed = row.get("exclude")
    if listed is not None:
        ids = [data.item_index[str(i)] for i in listed if str(i) in data.item_index]
        parts.append(np.asarray(ids, dtype=np.int64))
    return np.unique(np.concatenate(parts).astype(np.int64))


def select_queries(data: RetrievalData, k: int) -> dict[str, list[tuple[dict, np.ndarray]]]:
    """The test and validation query rows (``queries.parquet`` order) with their excluded item indices.

    Raises :class:`InvariRankError` on a bad row or when K exceeds the unseen catalogue of a query.
    """
    path = data.data_dir / "queries.parquet"
    by_split: dict[str, list[tuple[dict, np.ndarray]]] = {"test": [], "validation": []}
    for n, row in enumerate(data.queries.to_dict("records")):
        split = str(row["split"])
        if split not in by_split:
            raise InvariRankError(f"{path}: row {n}: split {split!r}; expected test or validation")
        if str(row["user_id"]) not in data.user_index:
            raise InvariRankError(f"{path}: query {row['query_id']}: user {row['user_id']!r} has no interactions")
        if len(row["ground_truth"]) == 0:
            continue  # the contract lists only queries with a ground truth; tolerate others
        by_split[split].append((row, _exclusions(data, row)))
    too_small = [
        (data.n_items - ex.size, split, row["query_id"])
        for split, pairs in by_split.items()
        for row, ex in pairs
        if data.n_items - ex.size < k
    ]
    if too_small:
        unseen, split, qid = min(too_small, key=lambda t: t[0])
        raise InvariRankError(
            f"--k {k} is larger than the unseen catalogue of {len(too_small)} queries (smallest: {split} "
            f"query {qid} with {unseen} unseen items of {data.n_items}); expected K <= {unseen}"
        )
    return by_split


def rank_queries(
    data: RetrievalData,
    users: np.ndarray,
    items: np.ndarray,
    k: int,
    ks: tuple[int, ...] = DEFAULT_KS,
    selected: dict[str, list[tuple[dict, np.ndarray]]] | None = None,
    progress: bool = False,
) -> dict[str, list[dict]]:
    """Top-max(K, ks) unseen items of every test and validation query.

    Returns ``{"test": [...], "validation": [...]}``, each a list (in ``queries.parquet`` order) of
    dicts with ``row`` (the query row), ``top`` (item indices, best first) and ``scores``.
    ``selected`` is :func:`select_queries`'s result (computed when not given).
    """
    if selected is None:
        selected = select_queries(data, k)
    kmax = max(int(k), *ks)
    out: dict[str, list[dict]] = {}
    for split, pairs in selected.items():
        uidx = [data.user_index[str(row["user_id"])] for row, _ in pairs]
        tops, scores = top_k_unseen(users, items, uidx, [ex for _, ex in pairs], kmax, progress=progress)
        out[split] = [{"row": row, "top": t, "scores": sc} for (row, _), t, sc in zip(pairs, tops, scores)]
    return out


def _make_query(data: RetrievalData, entry: dict, k: int) -> Query:
    row = entry["row"]
    history = []
    ratings = list(row["history_ratings"])
    for j, hid in enumerate(row["history_item_ids"]):
        idx = data.item_index.get(str(hid))
        if idx is None:
            raise InvariRankError(
                f"{data.data_dir / 'queries.parquet'}: query {row['query_id']}: history "
                f"item {hid!r} is not in items.parquet"
            )
        history.append(HistoryEntry(data.items[idx], float(ratings[j])))
    top = entry["top"][:k]
    return Query(
        query_id=str(row["query_id"]),
        user_id=str(row["user_id"]),
        history=tuple(history),
        candidates=tuple(data.items[i] for i in top),
        ground_truth=tuple(str(g) for g in row["ground_truth"]),
        split=str(row["split"]),
        candidate_scores=tuple(float(s) for s in entry["scores"][:k]),
    )


def _split_stats(data: RetrievalData, entries: list[dict], k: int, ks: tuple[int, ...]) -> tuple[dict, list[dict]]:
    retrieved = [[data.item_ids[i] for i in e["top"]] for e in entries]
    truths = [[str(g) for g in e["row"]["ground_truth"]] for e in entries]
    metrics = retrieval_metrics(retrieved, truths, ks)
    kept = [e for e, lst, gt in zip(entries, retrieved, truths) if set(lst[:k]) & set(gt)]
    metrics.update(queries_kept=len(kept), queries_dropped=len(entries) - len(kept))
    return metrics, kept


def evaluate_embeddings(
    data: RetrievalData,
    users: np.ndarray,
    items: np.ndarray,
    k: int = 25,
    ks: tuple[int, ...] = DEFAULT_KS,
    split: str = "test",
) -> dict[str, Any]:
    """Retrieval metrics of given embeddings over all queries of ``split`` (no files written):
    ``queries``, ``coverage@K`` / ``recall@K`` / ``hr@K`` / ``ndcg@K`` for K in ``ks`` ∪ {k}, and
    ``queries_kept`` / ``queries_dropped`` for ``k``."""
    ks = tuple(sorted(set(ks) | {int(k)}))
    selected = select_queries(data, k)
    ranked = rank_queries(data, users, items, k, ks, {split: selected[split]})
    metrics, _ = _split_stats(data, ranked[split], k, ks)
    return metrics


def retrieve(
    data_dir: str | Path,
    retriever: str = "lightgcn",
    k: int = 25,
    seed: int = 42,
    out: str | Path | None = None,
    epochs: int | None = None,
    device: str | None = None,
    *,
    progress: bool = True,
    force: bool = False,
) -> RetrievalResult:
    """Run the first stage on a prepared folder (or a dataset name) and write the candidates.

    ``epochs`` overrides the LightGCN epochs / ALS iterations (protocol defaults otherwise);
    ``device`` (LightGCN only) defaults to CUDA when available. ``force`` ignores cached files.
    """
    _check_retriever(retriever)
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise InvariRankError(f"--k {k}: expected a positive integer")
    k = int(k)
    ks = tuple(sorted(set(DEFAULT_KS) | {k}))
    folder = _resolve_data_dir(data_dir)
    if out is not None and folder.is_dir() and Path(out).resolve() == folder.resolve():
        raise InvariRankError(
            f"--out {out} is the prepared data folder --data {data_dir}: its stats.json would be "
            f"replaced; expected another folder"
        )
    data = load_retrieval_data(folder, prepared_threshold(folder))

    device_type, threads = "cpu", None
    if retriever == "lightgcn":
        from .lightgcn import resolve_device, resolve_threads

        device_type = resolve_device(device).type
        threads = resolve_threads(None, data.n_positives, device_type)
    settings = model_settings(
        retriever,
        seed=seed,
        epochs=epochs,
        device_type=device_type,
        positive_threshold=data.positive_threshold,
        threads=threads,
    )
    key = _key("model", data.graph_hash, settings)
    model_dir = cache_dir() / "retrieval" / f"{retriever}-{key[:16]}"
    cand_key = _key("candidates", key, data.files_hash, k, list(ks))
    out_dir = Path(out) if out is not None else model_dir / f"k{k}-{cand_key[:12]}"

    # candidates already there with the same key: reuse them
    if not force and (out_dir / "stats.json").is_file() and (out_dir / "candidates.jsonl").is_file():
        try:
            stats = read_json(out_dir / "stats.json")
        except (OSError, ValueError):
            stats = {}
        if stats.get("cache_key") == cand_key:
            queries = read_candidates(out_dir / "candidates.jsonl")
            return RetrievalResult(
                out_dir,
                [q for q in queries if q.split == "test"],
                [q for q in queries if q.split == "validation"],
                stats,
                model_dir,
                model_cached=True,
                candidates_cached=True,
            )

    selected = select_queries(data, k)  # bad K fails here, before any training
    loaded = None if force else _load_model(model_dir, key)
    if loaded is not None:
        users, items, meta = loaded
        info = meta["info"]
    else:
        users, items, info = train_retriever(
            data, retriever, seed=seed, epochs=epochs, device=device, progress=progress
        )
        if not (np.isfinite(users).all() and np.isfinite(items).all()):
            raise InvariRankError(f"--retriever {retriever}: training diverged (non-finite embeddings)")
        meta = {
            "key": key,
            "retriever": retriever,
            "settings": settings,
            "graph_hash": data.graph_hash,
            "data_dir": str(data.data_dir.resolve()),
            "users": data.n_users,
            "items": data.n_items,
            "train_positives": data.n_positives,
            "info": info,
        }
        _save_model(model_dir, users, items, meta)

    ranked = rank_queries(data, users, items, k, ks, selected, progress=progress)
    test_metrics, test_kept = _split_stats(data, ranked["test"], k, ks)
    val_metrics, val_kept = _split_stats(data, ranked["validation"], k, ks)
    if not test_kept:
        raise InvariRankError(
            f"--k {k}: no test query of {data.data_dir} keeps a ground-truth item in its top-{k} "
            f"({len(ranked['test'])} test queries); the candidates file would be empty"
        )
    test_queries = [_make_query(data, e, k) for e in test_kept]
    val_queries = [_make_query(data, e, k) for e in val_kept]

    stats: dict[str, Any] = {
        "schema_version": STATS_SCHEMA_VERSION,
        "retriever": retriever,
        "k": k,
        "seed": int(seed),
        "data_dir": str(data.data_dir.resolve()),
        "data_hash": data.files_hash,
        "users": data.n_users,
        "items": data.n_items,
        "train_positives": data.n_positives,
        "settings": settings,
        "test_queries": test_metrics.pop("queries"),
    }
    stats.update(test_metrics)
    stats["validation"] = {"validation_queries": val_metrics.pop("queries"), **val_metrics}
    stats.update(
        train_seconds=float(info.get("train_seconds", 0.0)),
        train_device=info.get("device", "cpu"),
        loss_curve=list(info.get("loss_curve", [])),
        model_key=key,
        cache_key=cand_key,
    )
    write_candidates(out_dir / "candidates.jsonl", test_queries + val_queries)
    atomic_write_json(out_dir / "stats.json", stats)
    return RetrievalResult(out_dir, test_queries, val_queries, stats, model_dir, model_cached=loaded is not None)


def format_stats(stats: dict[str, Any]) -> str:
    """A small plain-text table of ``stats.json`` (test queries)."""
    ks = sorted(int(key.split("@")[1]) for key in stats if key.startswith("coverage@"))
    lines = [
        f"retriever {stats['retriever']}, K = {stats['k']}: {stats['test_queries']} test queries, "
        f"kept {stats['queries_kept']}, dropped {stats['queries_dropped']}"
    ]
    val = stats.get("validation") or {}
    if val:
        lines.append(
            f"validation queries {val.get('validation_queries', 0)}: kept "
            f"{val.get('queries_kept', 0)}, dropped {val.get('queries_dropped', 0)}"
        )
    lines.append(f"{'K':>4} {'coverage':>9} {'recall':>8} {'hr':>8} {'ndcg':>8}")
    for kk in ks:
        lines.append(
            f"{kk:>4} {stats[f'coverage@{kk}']:>9.4f} {stats[f'recall@{kk}']:>8.4f} "
            f"{stats[f'hr@{kk}']:>8.4f} {stats[f'ndcg@{kk}']:>8.4f}"
        )
    curve = stats.get("loss_curve") or []
    tail = f" ({len(curve)} epochs/iterations, final loss {curve[-1]:.4f})" if curve else ""
    lines.append(f"training {stats.get('train_seconds', 0.0):.1f} s on {stats.get('train_device', 'cpu')}{tail}")
    return "\n".join(lines)
