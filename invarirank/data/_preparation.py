"""Prepare a data set: raw files → prepared folder (Parquet tables, stats, manifest), cached.

``prepare(dataset, raw_dir=None, out=None, split="temporal", ...)`` writes (see the team contract):

* ``interactions.parquet`` — user_id (str), item_id (str), rating (float64), timestamp (int64; seconds
  for MovieLens, milliseconds for Amazon, as given), split (``train``/``validation``/``test``); only
  kept users; rows sorted by user (canonical order), then chronologically by (timestamp, item id).
* ``items.parquet`` — item_id, title, year (nullable Int64), genres (list of str; Amazon: categories),
  the items that occur in ``interactions.parquet``, sorted in canonical id order (row index = id order).
* ``queries.parquet`` — see :mod:`invarirank.data._queries`.
* ``stats.json`` — the settings and counts: ``raw_users``, ``raw_items``, ``raw_interactions`` (rating
  rows as read, before anything is removed), ``duplicates_dropped``, ``users_dropped`` (below the
  minimum), then ``users``, ``items``, ``interactions``, ``positives`` (rating >= threshold), ``train``,
  ``validation``, ``test`` (interactions per segment), ``test_positives``, ``validation_positives``,
  ``test_queries``, ``validation_queries``, ``catalogue_items`` (rows of the item file; Amazon: reviewed
  items found in the metadata), ``items_without_metadata`` (rated items missing from the item file:
  title = id), ``titles_without_year``, ``timestamp_unit`` (``s`` or ``ms``).
* ``manifest.json`` — settings, raw-file fingerprints, output checksums; written last.

**Caching.** The cache key is the sha256 of the format version, the settings and a fingerprint of each
raw file: its full-content sha256 when it is at most 1 GiB, otherwise its size and modification time
(``size+mtime``), because hashing the 10–20 GB Amazon dumps would take longer than a cache hit should.
Folders are not part of the key (moving the raw files keeps the cache; file names are). With ``out=None`` the folder
is ``cache_dir()/prepared/<dataset>-<key16>``; with ``out`` it is ``out``. A folder whose
``manifest.json`` holds the same key is reused as is; with ``out`` set, a matching folder in the cache is
copied instead of recomputed. Amazon reviews, once converted from JSON to Parquet, are also kept under
``cache_dir()/converted/`` (keyed by the reviews file's fingerprint) so a second preparation with other
settings skips the slow JSON pass.

**Atomic output.** Everything is written into a temporary folder beside the target and renamed into
place at the end; on any error the temporary folder is removed and an existing target is untouched.
``out`` may be a new path, an empty folder, or an earlier prepared folder (replaced); anything else is
refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .. import __version__
from .._io import atomic_write_json, sha256_file, unwritable
from ..errors import InvariRankError
from ._filtering import clean_interactions
from ._ids import sort_order
from ._output_folder import check_target, install_folder, prepared_key
from ._prepared import MANIFEST_KIND, TABLES, Prepared, format_stats, load_prepared  # noqa: F401 (re-exported)
from ._queries import build_queries
from ._raw_inputs import RawSource, raw_fingerprint, resolve_source
from ._split import SEGMENT_NAMES, SPLITS, TEST, TRAIN, VALIDATION, assign_segments

DATASETS = ("ml-100k", "movielens", "amazon-books")
DEFAULT_MIN_INTERACTIONS = {"ml-100k": 10, "movielens": 10, "amazon-books": 3}
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Settings:
    """Everything besides the raw files that changes the prepared data (part of the cache key)."""

    dataset: str
    split: str = "temporal"
    min_interactions: int = 10
    positive_threshold: float = 4.0
    history_len: int = 20


# ---------------------------------------------------------------------------------------------------
# settings and the cache key


def _check_settings(
    dataset: str, split: str, min_interactions: int | None, positive_threshold: float, history_len: int
) -> Settings:
    if dataset not in DATASETS:
        raise InvariRankError(f"dataset {dataset!r}: expected one of {', '.join(DATASETS)}")
    if split not in SPLITS:
        raise InvariRankError(f"split {split!r}: expected one of {', '.join(SPLITS)}")
    if min_interactions is None:
        min_interactions = DEFAULT_MIN_INTERACTIONS[dataset]
    if (
        isinstance(min_interactions, bool)
        or not isinstance(min_interactions, (int, np.integer))
        or min_interactions < 3
    ):
        raise InvariRankError(
            f"min_interactions {min_interactions!r}: expected an integer >= 3 "
            "(train, validation and test must each be non-empty)"
        )
    try:
        positive_threshold = float(positive_threshold)
    except (TypeError, ValueError):
        raise InvariRankError(f"positive_threshold {positive_threshold!r}: expected a number") from None
    if not math.isfinite(positive_threshold):
        raise InvariRankError(f"positive_threshold {positive_threshold!r}: expected a finite number")
    if isinstance(history_len, bool) or not isinstance(history_len, (int, np.integer)) or history_len < 1:
        raise InvariRankError(f"history_len {history_len!r}: expected an integer >= 1")
    return Settings(dataset, split, int(min_interactions), positive_threshold, int(history_len))


def _cache_key(settings: Settings, raw: list[dict[str, Any]]) -> str:
    payload = {"format_version": FORMAT_VERSION, "settings": asdict(settings), "raw": raw}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------------
# the preparation itself


def _items_table(item_ids: np.ndarray, catalogue: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Items of the interactions in canonical order; items missing from the catalogue get their id as
    title, no year and no genres."""
    cat = catalogue.drop_duplicates("item_id").set_index("item_id")
    ids = [str(i) for i in item_ids]
    found = cat.reindex(ids)
    missing = found["title"].isna().to_numpy()
    titles = [i if m else str(t) for i, t, m in zip(ids, found["title"], missing)]
    genres = [[] if m else [str(x) for x in g] for g, m in zip(found["genres"], missing)]
    frame = pd.DataFrame(
        {
            "item_id": pd.array(ids, dtype=object),
            "title": pd.array(titles, dtype=object),
            "year": pd.array(found["year"].to_numpy(dtype=object, na_value=None), dtype="Int64"),
            "genres": pd.Series(genres, dtype=object),
        }
    )
    return frame, int(missing.sum())


def _items_arrow(frame: pd.DataFrame) -> pa.Table:
    schema = pa.schema(
        [("item_id", pa.string()), ("title", pa.string()), ("year", pa.int64()), ("genres", pa.list_(pa.string()))]
    )
    year = frame["year"]
    return pa.table(
        [
            pa.array(list(frame["item_id"]), pa.string()),
            pa.array(list(frame["title"]), pa.string()),
            pa.array([None if pd.isna(y) else int(y) for y in year], pa.int64()),
            pa.array(list(frame["genres"]), pa.list_(pa.string())),
        ],
        schema=schema,
    )


def _write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, str(path), compression="zstd", row_group_size=1 << 20)


def _build(tmp: Path, source: RawSource, settings: Settings, raw_entries: list[dict[str, Any]], key: str) -> None:
    if source.kind == "movielens":
        from ._movielens import read_movielens

        raw = read_movielens(source.layout.ratings.parent, source.layout)
        layout = f"movielens-{raw.layout}"
        source_label = str(source.files["ratings"])
    else:
        from ..assets import cache_dir
        from ._amazon import read_amazon

        rev_fp = next(r for r in raw_entries if r["role"] == "reviews")
        conv_key = hashlib.sha256(
            json.dumps({"conversion": 1, "reviews": rev_fp}, sort_keys=True).encode()
        ).hexdigest()[:16]
        conv_dir = cache_dir() / "converted"
        conv_dir.mkdir(parents=True, exist_ok=True)
        raw = read_amazon(
            source.files["reviews"],
            source.files["metadata"],
            conv_dir / f"amazon-reviews-{conv_key}.parquet",
            reuse=True,
        )
        layout = raw.layout
        source_label = str(source.files["reviews"])

    inter = clean_interactions(raw.ratings, settings.min_interactions, source=source_label)
    catalogue_items = len(raw.items)
    del raw.ratings

    # chronological order within each user: (user, timestamp, item id)
    order = sort_order((inter.user, "ascending"), (inter.timestamp, "ascending"), (inter.item, "ascending"))
    user, item = inter.user[order], inter.item[order]
    rating, ts = inter.rating[order], inter.timestamp[order]
    del order
    seg = assign_segments(user, settings.split)

    interactions = pa.table(
        {
            "user_id": pa.array(inter.user_ids, pa.string()).take(pa.array(user)),
            "item_id": pa.array(inter.item_ids, pa.string()).take(pa.array(item)),
            "rating": pa.array(rating, pa.float64()),
            "timestamp": pa.array(ts, pa.int64()),
            "split": pa.array(list(SEGMENT_NAMES), pa.string()).take(pa.array(seg.astype(np.int64))),
        }
    )
    _write_parquet(interactions, tmp / "interactions.parquet")
    del interactions

    items_frame, without_meta = _items_table(inter.item_ids, raw.items)
    _write_parquet(_items_arrow(items_frame), tmp / "items.parquet")

    queries = build_queries(
        user,
        item,
        rating,
        ts,
        seg,
        inter.user_ids,
        inter.item_ids,
        positive_threshold=settings.positive_threshold,
        history_len=settings.history_len,
    )
    _write_parquet(queries, tmp / "queries.parquet")

    positive = rating >= settings.positive_threshold
    split_col = queries.column("split").to_numpy(zero_copy_only=False)
    if not (split_col == "test").any():
        raise InvariRankError(
            f"{source_label}: no test queries (no kept user has a test rating >= "
            f"--positive-threshold {settings.positive_threshold:g}, the highest rating is "
            f"{float(rating.max()) if rating.size else float('nan'):g}); expected a threshold that "
            f"leaves positives"
        )
    stats = {
        "dataset": settings.dataset,
        "layout": layout,
        "split": settings.split,
        "min_interactions": settings.min_interactions,
        "positive_threshold": settings.positive_threshold,
        "history_len": settings.history_len,
        "raw_users": inter.raw_users,
        "raw_items": inter.raw_items,
        "raw_interactions": inter.raw_interactions,
        "duplicates_dropped": inter.duplicates_dropped,
        "users_dropped": inter.users_dropped,
        "users": int(len(inter.user_ids)),
        "items": int(len(inter.item_ids)),
        "interactions": int(user.size),
        "positives": int(positive.sum()),
        "train": int((seg == TRAIN).sum()),
        "validation": int((seg == VALIDATION).sum()),
        "test": int((seg == TEST).sum()),
        "test_positives": int((positive & (seg == TEST)).sum()),
        "validation_positives": int((positive & (seg == VALIDATION)).sum()),
        "test_queries": int((split_col == "test").sum()),
        "validation_queries": int((split_col == "validation").sum()),
        "catalogue_items": int(catalogue_items),
        "items_without_metadata": without_meta,
        "titles_without_year": int(items_frame["year"].isna().sum()) if source.kind == "movielens" else 0,
        "timestamp_unit": "s" if source.kind == "movielens" else "ms",
    }
    atomic_write_json(tmp / "stats.json", stats)
    manifest = {
        "kind": MANIFEST_KIND,
        "format_version": FORMAT_VERSION,
        "invarirank_version": __version__,
        "key": key,
        "dataset": settings.dataset,
        "settings": asdict(settings),
        "raw_files": raw_entries,
        "files": {name: sha256_file(tmp / name) for name in TABLES},
    }
    atomic_write_json(tmp / "manifest.json", manifest)
    _set_modes(tmp)


def _set_modes(folder: Path) -> None:
    """Give the folder and its files the usual permissions (temporary files are created private)."""
    umask = os.umask(0)
    os.umask(umask)
    for path in folder.iterdir():
        path.chmod(0o666 & ~umask)
    folder.chmod(0o777 & ~umask)


def prepare_data(
    dataset: str = "ml-100k",
    raw_dir: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    split: str = "temporal",
    *,
    reviews: str | os.PathLike | None = None,
    metadata: str | os.PathLike | None = None,
    min_interactions: int | None = None,
    positive_threshold: float = 4.0,
    history_len: int = 20,
    force: bool = False,
) -> tuple[Path, bool]:
    """Like :func:`prepare`, but also says whether an existing folder was reused: ``(path, reused)``."""
    settings = _check_settings(dataset, split, min_interactions, positive_threshold, history_len)
    target = Path(out).expanduser().absolute() if out is not None else None
    if target is not None:
        check_target(target)
    source = resolve_source(dataset, Path(raw_dir).expanduser() if raw_dir is not None else None, reviews, metadata)
    raw_entries = [raw_fingerprint(path, role) for role, path in source.files.items()]
    key = _cache_key(settings, raw_entries)
    from ..assets import cache_dir

    cached = cache_dir() / "prepared" / f"{dataset}-{key[:16]}"
    if target is None:
        target = cached
    if not force and target.exists() and prepared_key(target) == key:
        return target, True

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        if not force and target != cached and cached.exists() and prepared_key(cached) == key:
            for name in (*TABLES, "manifest.json"):
                shutil.copyfile(cached / name, tmp / name)
            _set_modes(tmp)
            reused = True
        else:
            _build(tmp, source, settings, raw_entries, key)
            reused = False
        try:
            install_folder(tmp, target)
        except OSError:
            # another process installed the same data first
            if prepared_key(target) == key:
                shutil.rmtree(tmp, ignore_errors=True)
                return target, True
            raise
    except OSError as exc:  # a full disk: name the prepared folder, not its hidden temporary one
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno is None:
            raise
        raise unwritable(target, type(exc)(exc.errno, exc.strerror)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target, reused


def prepare(
    dataset: str = "ml-100k",
    raw_dir: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    split: str = "temporal",
    **overrides: Any,
) -> Path:
    """Prepare ``dataset`` and return the prepared folder (see the module docstring).

    ``dataset``: ``"ml-100k"`` (embedded, or any MovieLens folder given as ``raw_dir``), ``"movielens"``
    (``raw_dir`` required; layout auto-detected) or ``"amazon-books"`` (``raw_dir`` and/or
    ``reviews=``/``metadata=`` files). ``split``: ``"temporal"`` (default) or ``"loo"``.
    ``overrides``: ``min_interactions`` (default 10 MovieLens, 3 Amazon; at least 3),
    ``positive_threshold`` (4.0), ``history_len`` (20), ``reviews``, ``metadata``, ``force`` (rebuild even
    when a matching folder exists).
    """
    allowed = {"reviews", "metadata", "min_interactions", "positive_threshold", "history_len", "force"}
    unknown = sorted(set(overrides) - allowed)
    if unknown:
        raise InvariRankError(f"prepare: unknown setting {unknown[0]!r}; expected one of {', '.join(sorted(allowed))}")
    return prepare_data(dataset, raw_dir, out, split, **overrides)[0]
