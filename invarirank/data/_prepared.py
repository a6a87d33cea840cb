"""A prepared data folder, read: :class:`Prepared`, :func:`load_prepared`, :func:`read_stats` and
:func:`format_stats` (the writing side, with caching and atomic output, is :mod:`._preparation`; the folder's files are
described there).

``stats.json`` is checked when read (:func:`read_stats`): a JSON object whose counts are non-negative integers and
whose ``positive_threshold`` is a finite number, so a foreign file (another tool's ``stats.json``, the first
stage's) is one error naming it, not a traceback later.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._io import existing_file, existing_folder, read_json
from ..errors import InvariRankError
from ..types import Item

MANIFEST_KIND = "invarirank-prepared-data"
TABLES = ("interactions.parquet", "items.parquet", "queries.parquet", "stats.json")


class Prepared:
    """A prepared folder. ``stats`` and ``manifest`` are read at once; the tables ``interactions``,
    ``items`` and ``queries`` (pandas DataFrames) are read on first use, so a stage that needs only
    some of them does not pay for the others (the queries of MovieLens-32M take about a minute).
    List columns hold Python lists; ``items.year`` is a nullable ``Int64``.
    """

    def __init__(self, path: Path, stats: dict[str, Any], manifest: dict[str, Any]) -> None:
        self.path = Path(path)
        self.stats = stats
        self.manifest = manifest

    def __repr__(self) -> str:
        return f"Prepared({str(self.path)!r}, users={self.stats.get('users')}, items={self.stats.get('items')})"

    def _table(self, name: str, **to_pandas: Any) -> pd.DataFrame:
        try:
            return pq.read_table(self.path / name).to_pandas(**to_pandas)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise InvariRankError(f"{self.path / name}: cannot read prepared data ({exc})") from None

    @functools.cached_property
    def interactions(self) -> pd.DataFrame:
        return self._table("interactions.parquet")

    @functools.cached_property
    def items(self) -> pd.DataFrame:
        frame = self._table("items.parquet", types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        _to_lists(frame, ["genres"])
        return frame

    @functools.cached_property
    def queries(self) -> pd.DataFrame:
        frame = self._table("queries.parquet")
        _to_lists(frame, ["history_item_ids", "history_ratings", "ground_truth", "exclude"])
        return frame

    @property
    def test_queries(self) -> pd.DataFrame:
        return self.queries[self.queries["split"] == "test"]

    @property
    def validation_queries(self) -> pd.DataFrame:
        return self.queries[self.queries["split"] == "validation"]

    def items_by_id(self) -> dict[str, Item]:
        """``item_id`` → :class:`invarirank.types.Item` (year ``None`` when unknown)."""
        out = {}
        for item_id, title, year, genres in zip(
            self.items["item_id"], self.items["title"], self.items["year"], self.items["genres"]
        ):
            out[str(item_id)] = Item(
                str(item_id), str(title), None if pd.isna(year) else int(year), tuple(str(g) for g in genres)
            )
        return out


def _to_lists(frame: pd.DataFrame, columns: list[str]) -> None:
    for col in columns:
        if col in frame.columns:
            frame[col] = pd.Series(
                [[] if v is None else (v.tolist() if hasattr(v, "tolist") else list(v)) for v in frame[col]],
                index=frame.index,
                dtype=object,
            )


def load_prepared(folder: str | os.PathLike) -> Prepared:
    """Load a prepared folder (from :func:`prepare` or ``invarirank data prepare --out``)."""
    folder = Path(folder)
    if not folder.exists():
        raise InvariRankError(
            f"{folder}: folder not found; expected a prepared-data folder (`invarirank data prepare --out DIR`)"
        )
    existing_folder(folder, "prepared-data folder")
    for name in (*TABLES, "manifest.json"):
        if not (folder / name).exists():
            raise InvariRankError(f"{folder / name}: file not found; expected a complete prepared-data folder")
        existing_file(folder / name, "file of a prepared-data folder")
    try:
        manifest = read_json(folder / "manifest.json")
    except (OSError, ValueError) as exc:
        raise InvariRankError(f"{folder}: cannot read prepared data ({exc})") from None
    stats = read_stats(folder)
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND:
        raise InvariRankError(f"{folder / 'manifest.json'}: field 'kind': expected {MANIFEST_KIND!r}")
    return Prepared(folder, stats, manifest)


def read_stats(folder: str | os.PathLike) -> dict[str, Any]:
    """``FOLDER/stats.json`` of a prepared folder, checked (see the module docstring); raise
    :class:`InvariRankError` naming the file and the field otherwise."""
    path = Path(folder) / "stats.json"
    try:
        stats = read_json(path)
    except (OSError, ValueError) as exc:
        raise InvariRankError(f"{path}: cannot read the prepared data's stats ({exc})") from None
    if not isinstance(stats, dict) or "users" not in stats or "test_queries" not in stats:
        raise InvariRankError(
            f"{path}: not the stats of a prepared data folder (expected a JSON object with "
            f"'users', 'test_queries', ... as `invarirank data prepare` writes)"
        )
    for key in STATS_COUNTS:
        value = stats.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvariRankError(f"{path}: field {key!r} = {value!r}, expected a count (an integer >= 0)")
    threshold = stats.get("positive_threshold", 4.0)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise InvariRankError(f"{path}: field 'positive_threshold' = {threshold!r}, expected a finite number")
    return stats


_TABLE_ROWS = [
    ("raw_users", "users (raw)"),
    ("raw_items", "items (raw)"),
    ("raw_interactions", "ratings (raw)"),
    ("duplicates_dropped", "duplicate rows dropped"),
    ("users_dropped", "users below minimum"),
    ("users", "users"),
    ("items", "items"),
    ("interactions", "interactions"),
    ("positives", "positives"),
    ("train", "train"),
    ("validation", "validation"),
    ("test", "test"),
    ("test_queries", "test queries"),
    ("validation_queries", "validation queries"),
]


#: the count fields of ``stats.json`` (checked by :func:`read_stats`)
STATS_COUNTS = tuple(key for key, _ in _TABLE_ROWS)


def format_stats(stats: dict[str, Any]) -> str:
    """A small two-column text table of the main counts (thousands separated by commas)."""
    rows = [(label, f"{stats[key]:,}") for key, label in _TABLE_ROWS if key in stats]
    head = (
        f"{stats.get('dataset', '?')} ({stats.get('split', '?')} split, min {stats.get('min_interactions', '?')} "
        f"ratings per user, positives: rating >= {stats.get('positive_threshold', '?')})"
    )
    wl = max(len(r[0]) for r in rows)
    wv = max(len(r[1]) for r in rows)
    lines = [head, f"{'count':<{wl}}  {'value':>{wv}}", f"{'-' * wl}  {'-' * wv}"]
    lines += [f"{label:<{wl}}  {value:>{wv}}" for label, value in rows]
    return "\n".join(lines)
