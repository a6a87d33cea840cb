"""The raw input of a preparation: which files a data set reads (the embedded ML-100K, a MovieLens layout, or Amazon
Books' reviews and metadata), and their fingerprints — content sha256 up to 1 GiB, size and modification time
above — which enter the prepared data's cache key.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ._prepared import MANIFEST_KIND, TABLES, Prepared, format_stats, load_prepared  # noqa: F401 (re-exported)

HASH_LIMIT = 1 << 30  # files up to 1 GiB are fingerprinted by content sha256


#: sha256 of the embedded ML-100K files (RecBole atomic layout): ``--dataset ml-100k`` names these files only
EMBEDDED_ML100K = {
    "ratings": "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
    "items": "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
}


def raw_fingerprint(path: Path, role: str) -> dict[str, Any]:
    """Fingerprint of a raw file: sha256 of the content (<= 1 GiB) or size + mtime (bigger files)."""
    st = path.stat()
    entry: dict[str, Any] = {"role": role, "name": path.name, "size": st.st_size}
    if st.st_size <= HASH_LIMIT:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        entry["sha256"] = h.hexdigest()
    else:
        entry["size_mtime"] = f"{st.st_size}:{st.st_mtime_ns}"
    return entry


@dataclass
class RawSource:
    """The resolved raw input of a preparation."""

    kind: str  # "movielens" | "amazon"
    files: dict[str, Path]
    layout: Any = None


def raw_files(dataset: str, raw_dir: str | os.PathLike | None) -> dict[str, Path]:
    """The raw files a preparation of ``dataset`` reads from ``raw_dir`` (role → path; the embedded ML-100K
    when ``raw_dir`` is None), as :func:`prepare` finds them."""
    return dict(resolve_source(dataset, Path(raw_dir).expanduser() if raw_dir is not None else None, None, None).files)


def resolve_source(dataset: str, raw_dir: Path | None, reviews: Path | None, metadata: Path | None) -> RawSource:
    if dataset in ("ml-100k", "movielens"):
        if reviews is not None or metadata is not None:
            raise InvariRankError("--reviews/--metadata apply to --dataset amazon-books only")
        from ._movielens import detect_layout

        if raw_dir is None:
            if dataset == "movielens":
                raise InvariRankError(
                    "--dataset movielens needs --raw-dir DIR (a folder with ratings.csv + "
                    "movies.csv, ratings.dat + movies.dat, u.data + u.item or *.inter + *.item)"
                )
            from ..assets import AssetError, ml100k_dir

            try:
                raw_dir = ml100k_dir()
            except AssetError as exc:
                raise InvariRankError(f"embedded ml-100k: {exc} (run `make setup` once)") from None
        layout = detect_layout(Path(raw_dir))
        files = {"ratings": layout.ratings, "items": layout.items}
        if dataset == "ml-100k":
            _check_embedded(Path(raw_dir), files)
        return RawSource("movielens", files, layout)
    from ._amazon_files import find_amazon_files

    rev, meta = find_amazon_files(
        Path(raw_dir) if raw_dir is not None else None,
        Path(reviews) if reviews is not None else None,
        Path(metadata) if metadata is not None else None,
    )
    return RawSource("amazon", {"reviews": rev, "metadata": meta})


def _check_embedded(raw_dir: Path, files: dict[str, Path]) -> None:
    """``--dataset ml-100k`` with ``--raw-dir``: the files must be the embedded ML-100K's (content sha256), so
    other data is never labelled ``ml-100k`` (in run names, tables and the book)."""
    for role, path in files.items():
        if raw_fingerprint(path, role).get("sha256") != EMBEDDED_ML100K[role]:
            raise InvariRankError(
                f"--raw-dir {raw_dir}: {path.name} is not the embedded ML-100K file (its content "
                f"differs); prepare other MovieLens files with --dataset movielens"
            )
