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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write_json, read_json
from ..assets import cache_dir
from ..candidates import read_candidates, write_candidates
from ..errors import InvariRankError
from ..types import Query
from ._data import load_retrieval_data
from ._metrics import DEFAULT_KS
from ._query_ranking import make_query, rank_queries, select_queries, split_stats
from ._training import check_retriever, load_model, model_settings, save_model, settings_key, train_retriever

STATS_SCHEMA_VERSION = 1


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


def _resolve_data_dir(data_dir: str | Path) -> Path:
    """A prepared folder, or a dataset name handed to ``invarirank.data._preparation`` (cached)."""
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
    from ..data._prepared import read_stats

    return float(read_stats(folder).get("positive_threshold", 4.0))


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
    check_retriever(retriever)
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
        from ._lightgcn import resolve_device, resolve_threads

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
    key = settings_key("model", data.graph_hash, settings)
    model_dir = cache_dir() / "retrieval" / f"{retriever}-{key[:16]}"
    cand_key = settings_key("candidates", key, data.files_hash, k, list(ks))
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
    loaded = None if force else load_model(model_dir, key)
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
        save_model(model_dir, users, items, meta)

    ranked = rank_queries(data, users, items, k, ks, selected, progress=progress)
    test_metrics, test_kept = split_stats(data, ranked["test"], k, ks)
    val_metrics, val_kept = split_stats(data, ranked["validation"], k, ks)
    if not test_kept:
        raise InvariRankError(
            f"--k {k}: no test query of {data.data_dir} keeps a ground-truth item in its top-{k} "
            f"({len(ranked['test'])} test queries); the candidates file would be empty"
        )
    test_queries = [make_query(data, e, k) for e in test_kept]
    val_queries = [make_query(data, e, k) for e in val_kept]

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
