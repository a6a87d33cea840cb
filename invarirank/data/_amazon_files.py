"""Finding Amazon Reviews 2023 files: the authors' ``reviews.jsonl[.gz]`` + ``metadata.jsonl[.gz]``, or the
official dump's ``<Category>.jsonl[.gz]`` + ``meta_<Category>.jsonl[.gz]`` (e.g. ``Books.jsonl.gz`` +
``meta_Books.jsonl.gz``) in a folder, or files named explicitly (``--reviews`` / ``--metadata``, the metadata then
looked for beside the reviews). Reading them: :mod:`invarirank.data._amazon`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvariRankError
from ._tables import require_file

#: what each file must hold, as the errors about it say
REVIEWS_WHAT = "Amazon reviews as JSON lines with user_id, parent_asin, rating, timestamp (ms)"
METADATA_WHAT = "Amazon metadata as JSON lines with parent_asin, title, categories"


def _strip_ext(name: str) -> str | None:
    for ext in (".jsonl.gz", ".jsonl", ".json.gz", ".json"):
        if name.endswith(ext):
            return name[: -len(ext)]
    return None


def _first_existing(folder: Path, stem: str) -> Path | None:
    for ext in (".jsonl.gz", ".jsonl", ".json.gz", ".json"):
        p = folder / f"{stem}{ext}"
        if p.exists():
            return p
    return None


def _metadata_beside(reviews: Path) -> Path | None:
    stem = _strip_ext(reviews.name)
    if stem is None:
        return None
    if stem == "reviews":
        return _first_existing(reviews.parent, "metadata") or _first_existing(reviews.parent, "meta")
    return _first_existing(reviews.parent, f"meta_{stem}")


def find_amazon_files(
    raw_dir: Path | None, reviews: Path | None = None, metadata: Path | None = None, category: str = "Books"
) -> tuple[Path, Path]:
    """Resolve the (reviews, metadata) files.

    Explicit ``reviews`` / ``metadata`` win. Otherwise ``raw_dir`` is searched for
    ``reviews.jsonl[.gz]``, then ``<category>.jsonl[.gz]``, then the only ``<X>.jsonl[.gz]`` that is not
    a metadata file; the metadata file is the matching ``metadata.jsonl[.gz]`` / ``meta_<X>.jsonl[.gz]``.
    """
    if reviews is None:
        if raw_dir is None:
            raise InvariRankError("amazon-books needs --raw-dir DIR (or --reviews FILE and --metadata FILE)")
        raw_dir = Path(raw_dir)
        if not raw_dir.is_dir():
            raise InvariRankError(
                f"{raw_dir}: folder not found; expected a folder with reviews.jsonl[.gz] + "
                f"metadata.jsonl[.gz] or <Category>.jsonl.gz + meta_<Category>.jsonl.gz"
            )
        reviews = _first_existing(raw_dir, "reviews") or _first_existing(raw_dir, category)
        if reviews is None:
            cands = sorted(
                p
                for p in raw_dir.iterdir()
                if _strip_ext(p.name) and not p.name.startswith(("meta_", "metadata.", "meta."))
            )
            if len(cands) != 1:
                what = (
                    f"several candidates ({', '.join(p.name for p in cands)}); name one with --reviews"
                    if cands
                    else "no reviews file"
                )
                raise InvariRankError(
                    f"{raw_dir}: {what}; expected reviews.jsonl[.gz] or <Category>.jsonl.gz (e.g. {category}.jsonl.gz)"
                )
            reviews = cands[0]
    reviews = Path(reviews)
    require_file(reviews, REVIEWS_WHAT)
    if metadata is None:
        metadata = _metadata_beside(reviews)
        if metadata is None and raw_dir is not None:
            metadata = _first_existing(Path(raw_dir), "metadata") or _first_existing(Path(raw_dir), f"meta_{category}")
        if metadata is None:
            stem = _strip_ext(reviews.name) or reviews.name
            expected = "metadata.jsonl[.gz]" if stem == "reviews" else f"meta_{stem}.jsonl[.gz]"
            raise InvariRankError(
                f"{reviews.parent / expected}: file not found; expected {METADATA_WHAT} "
                f"beside {reviews.name} (or name it with --metadata)"
            )
    metadata = Path(metadata)
    require_file(metadata, METADATA_WHAT)
    return reviews, metadata
