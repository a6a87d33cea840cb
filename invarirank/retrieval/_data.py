"""Reading a prepared data folder for the first stage.

The first stage reads the three Parquet files of the prepared-data contract directly
(``interactions.parquet``, ``items.parquet``, ``queries.parquet``; see ``invarirank.data``), so it
depends on the files, not on the code that wrote them.

Index conventions used by every retriever:

* item index = row index of ``items.parquet``, which is stored in canonical item-id order; a lower
  index therefore means a lower item id, and it is the tie-break of the top-K.
* user index = position of the user id in the sorted list of user ids of ``interactions.parquet``
  (numeric order when every id is an integer string, else code-point order).
* training positives = ``split == "train"`` interactions with ``rating >= positive_threshold``
  (4.0 by default), de-duplicated, as ``(user index, item index)`` pairs sorted by user then item.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._io import existing_file
from ..errors import InvariRankError
from ..types import Item

FILES = ("interactions.parquet", "items.parquet", "queries.parquet")

_REQUIRED = {
    "interactions.parquet": ("user_id", "item_id", "rating", "split"),
    "items.parquet": ("item_id", "title"),
    "queries.parquet": ("query_id", "user_id", "split", "history_item_ids", "history_ratings", "ground_truth"),
}


def canonical_order(ids: Sequence[str]) -> list[str]:
    """Distinct ids in canonical order: numeric when every id is an integer string, else code points."""
    uniq = sorted(set(str(i) for i in ids))
    if uniq and all(_is_int(s) for s in uniq):
        return sorted(uniq, key=lambda s: (int(s), s))
    return uniq


def _is_int(s: str) -> bool:
    try:
        int(s)
    except ValueError:
        return False
    return True


def _as_list(value) -> list:
    """A Parquet list cell (numpy array, list or None) as a Python list."""
    if value is None:
        return []
    if isinstance(value, float) and np.isnan(value):
        return []
    return list(value)


@dataclass
class RetrievalData:
    """The parts of a prepared folder the first stage needs (see the module docstring for indices)."""

    data_dir: Path
    item_ids: list[str]
    items: list[Item]
    user_ids: list[str]
    pos_user: np.ndarray  # int64, training positives (user index), sorted by (user, item)
    pos_item: np.ndarray  # int64, training positives (item index)
    queries: pd.DataFrame
    seen_train: dict[str, np.ndarray]  # user id -> item indices of train interactions
    seen_validation: dict[str, np.ndarray]  # user id -> item indices of validation interactions
    positive_threshold: float = 4.0
    graph_hash: str = ""
    files_hash: str = ""
    item_index: dict[str, int] = field(default_factory=dict)
    user_index: dict[str, int] = field(default_factory=dict)

    @property
    def n_users(self) -> int:
        return len(self.user_ids)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_positives(self) -> int:
        return int(self.pos_user.size)


def _read(path: Path) -> pd.DataFrame:
    name = path.name
    if not path.exists():
        raise InvariRankError(
            f"{path}: missing; expected a prepared data folder with {', '.join(FILES)} (invarirank data prepare)"
        )
    existing_file(path, "table file")
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several kinds
        raise InvariRankError(f"{path}: cannot read Parquet ({type(exc).__name__}: {exc})") from None
    missing = [c for c in _REQUIRED[name] if c not in df.columns]
    if missing:
        raise InvariRankError(f"{path}: missing column {missing[0]!r}; expected columns {', '.join(_REQUIRED[name])}")
    return df


def _year(value) -> int | None:
    if value is None or value is pd.NA:
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return int(value)


def _sha256(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def load_retrieval_data(data_dir: str | Path, positive_threshold: float = 4.0) -> RetrievalData:
    """Read a prepared folder; raise :class:`InvariRankError` (one line) on bad or empty input.

    ``graph_hash`` identifies what a retriever trains on (users, items, training positives);
    ``files_hash`` identifies the three files byte for byte (candidates depend on all of them).
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InvariRankError(
            f"--data {data_dir}: not a folder; expected a prepared data folder with {', '.join(FILES)}"
        )
    inter = _read(data_dir / "interactions.parquet")
    items_df = _read(data_dir / "items.parquet")
    queries = _read(data_dir / "queries.parquet")

    item_ids = [str(x) for x in items_df["item_id"].tolist()]
    if len(set(item_ids)) != len(item_ids):
        raise InvariRankError(f"{data_dir / 'items.parquet'}: repeated item_id; expected distinct ids")
    item_index = {iid: n for n, iid in enumerate(item_ids)}
    years = items_df["year"].tolist() if "year" in items_df.columns else [None] * len(item_ids)
    genres = items_df["genres"].tolist() if "genres" in items_df.columns else [None] * len(item_ids)
    titles = items_df["title"].tolist()
    items = [
        Item(iid, "" if t is None else str(t), _year(y), tuple(str(g) for g in _as_list(gs)))
        for iid, t, y, gs in zip(item_ids, titles, years, genres)
    ]

    inter_users = inter["user_id"].astype(str).to_numpy()
    inter_items = inter["item_id"].astype(str).to_numpy()
    splits = inter["split"].astype(str).to_numpy()
    ratings = inter["rating"].to_numpy(dtype=np.float64)
    unknown = [i for i in pd.unique(inter_items) if i not in item_index]
    if unknown:
        raise InvariRankError(
            f"{data_dir / 'interactions.parquet'}: item_id {unknown[0]!r} is not in "
            f"items.parquet ({len(unknown)} such ids); expected every item listed"
        )
    user_ids = canonical_order(inter_users.tolist())
    user_index = {u: n for n, u in enumerate(user_ids)}
    uidx = np.fromiter((user_index[u] for u in inter_users), dtype=np.int64, count=len(inter_users))
    iidx = np.fromiter((item_index[i] for i in inter_items), dtype=np.int64, count=len(inter_items))

    is_train = splits == "train"
    pos = is_train & (ratings >= positive_threshold)
    if not pos.any():
        what = (
            "no interactions with split == 'train'"
            if not is_train.any()
            else f"no training positives (split == 'train' and rating >= {positive_threshold:g})"
        )
        raise InvariRankError(f"{data_dir / 'interactions.parquet'}: empty training set: {what}; expected at least one")
    n_items = len(item_ids)
    keys = np.unique(uidx[pos] * n_items + iidx[pos])  # sorted, de-duplicated
    pos_user, pos_item = keys // n_items, keys % n_items

    def seen(mask: np.ndarray) -> dict[str, np.ndarray]:
        df = pd.DataFrame({"u": inter_users[mask], "i": iidx[mask]})
        return {str(u): np.unique(g.to_numpy()) for u, g in df.groupby("u", sort=False)["i"]}

    graph_hash = _sha256(
        json.dumps(user_ids).encode(),
        json.dumps(item_ids).encode(),
        keys.astype("<i8").tobytes(),
        repr(float(positive_threshold)).encode(),
    )
    files_hash = _sha256(*[(data_dir / f).read_bytes() for f in FILES])
    return RetrievalData(
        data_dir=data_dir,
        item_ids=item_ids,
        items=items,
        user_ids=user_ids,
        pos_user=pos_user,
        pos_item=pos_item,
        queries=queries.reset_index(drop=True),
        seen_train=seen(is_train),
        seen_validation=seen(splits == "validation"),
        positive_threshold=float(positive_threshold),
        graph_hash=graph_hash,
        files_hash=files_hash,
        item_index=item_index,
        user_index=user_index,
    )
