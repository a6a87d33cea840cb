"""MovieLens raw layouts → a ratings table and an items frame.

Supported layouts (auto-detected in a folder, see :func:`detect_layout`):

=========  ==============================  =========================================================
layout     files                           format
=========  ==============================  =========================================================
``csv``    ``ratings.csv`` + ``movies.csv``  comma-separated with a header (``userId,movieId,rating,
                                           timestamp`` / ``movieId,title,genres``, genres ``|``-
                                           separated); 32M, 25M, 20M, latest, latest-small.
``dat``    ``ratings.dat`` + ``movies.dat``  ``::``-separated, no header (``UserID::MovieID::Rating::
                                           Timestamp`` / ``MovieID::Title::Genres``); 1M, 10M.
``100k``   ``u.data`` + ``u.item``           ``u.data`` tab-separated (user, item, rating, timestamp);
                                           ``u.item`` ``|``-separated with 19 genre flags.
``atomic`` ``<name>.inter`` + ``<name>.item`` RecBole atomic files: tab-separated, header fields
                                           ``name:type`` (``user_id:token item_id:token rating:float
                                           timestamp:float`` / ``item_id:token movie_title:token_seq
                                           release_year:token class:token_seq``).
=========  ==============================  =========================================================

Text files are read as UTF-8 and, when that fails, as latin-1 (the 1M/10M ``.dat`` files and
``u.item`` are latin-1). Title clean-up follows :mod:`invarirank.data._titles`. Timestamps are Unix
seconds. An item id listed twice in an item file keeps its first row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvariRankError
from ._tables import decode_text, numeric_column, read_delimited, read_header, require_file
from ._titles import parse_genres, parse_year, split_title_year

#: The 19 genre flags of ``u.item``, in file order (MovieLens-100K ``u.genre``).
ML100K_GENRES = (
    "unknown",
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)

_PAIRS = (("csv", "ratings.csv", "movies.csv"), ("dat", "ratings.dat", "movies.dat"), ("100k", "u.data", "u.item"))

_EXPECTED = "ratings.csv + movies.csv, ratings.dat + movies.dat, u.data + u.item, or <name>.inter + <name>.item"


@dataclass(frozen=True)
class Layout:
    """A detected raw layout: its name and the two files."""

    name: str
    ratings: Path
    items: Path


@dataclass
class RawData:
    """Raw interactions (``user_id`` str, ``item_id`` str, ``rating`` float64, ``timestamp`` int64, one
    row per raw line) and the item catalogue (``item_id``, ``title``, ``year`` Int64, ``genres`` list)."""

    ratings: pa.Table
    items: pd.DataFrame
    layout: str
    files: dict[str, Path] = field(default_factory=dict)
    titles_without_year: int = 0


def _detect_in(folder: Path) -> Layout | None:
    for name, ratings, items in _PAIRS:
        r, i = folder / ratings, folder / items
        if r.exists() and i.exists():
            return Layout(name, r, i)
        if r.exists():
            raise InvariRankError(f"{i}: file not found; {ratings} needs {items} beside it")
    inters = sorted(folder.glob("*.inter"))
    if len(inters) > 1:
        raise InvariRankError(
            f"{folder}: several *.inter files ({', '.join(p.name for p in inters)}); expected exactly one"
        )
    if inters:
        inter = inters[0]
        item = inter.with_suffix(".item")
        if not item.exists():
            items = sorted(folder.glob("*.item"))
            if len(items) != 1:
                raise InvariRankError(f"{item}: file not found; {inter.name} needs an .item file beside it")
            item = items[0]
        return Layout("atomic", inter, item)
    return None


def detect_layout(raw_dir: Path) -> Layout:
    """Find the MovieLens layout in ``raw_dir`` (or in its only sub-folder that holds one)."""
    raw_dir = Path(raw_dir)
    if not raw_dir.exists():
        raise InvariRankError(f"{raw_dir}: folder not found; expected MovieLens files ({_EXPECTED})")
    if not raw_dir.is_dir():
        raise InvariRankError(f"{raw_dir}: not a folder; expected a folder with {_EXPECTED}")
    found = _detect_in(raw_dir)
    if found:
        return found
    subs = [
        found for sub in sorted(p for p in raw_dir.iterdir() if p.is_dir()) if (found := _detect_in(sub)) is not None
    ]
    if len(subs) == 1:
        return subs[0]
    if len(subs) > 1:
        raise InvariRankError(
            f"{raw_dir}: several sub-folders hold MovieLens files "
            f"({', '.join(str(s.ratings.parent.name) for s in subs)}); name one with --raw-dir"
        )
    raise InvariRankError(f"{raw_dir}: no MovieLens files found; expected {_EXPECTED}")


# ---------------------------------------------------------------------------------------------------
# ratings


def _id_column(table: pa.Table, name: str, *, path: Path, shown: str, first_line: int) -> pa.Array:
    col = table.column(name)
    col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    col = pc.utf8_trim_whitespace(col)
    empty = pc.equal(col, "").to_numpy(zero_copy_only=False)
    if empty.any():
        i = int(np.argmax(empty))
        raise InvariRankError(f"{path}, line {first_line + i}, column {shown!r}: expected an id, found an empty value")
    return col


def ratings_table(table: pa.Table, names: dict[str, str], *, path: Path, first_line: int) -> pa.Table:
    """Standardise a raw string table into (user_id, item_id, rating, timestamp).

    ``names`` maps the standard names to the file's column names (used in error messages too).
    """
    if table.num_rows == 0:
        raise InvariRankError(f"{path}: no rating rows after the header; expected one rating per line")
    user = _id_column(table, names["user_id"], path=path, shown=names["user_id"], first_line=first_line)
    item = _id_column(table, names["item_id"], path=path, shown=names["item_id"], first_line=first_line)
    rating = numeric_column(
        table, names["rating"], path=path, shown_name=names["rating"], first_line=first_line, kind="float"
    )
    ts = numeric_column(
        table, names["timestamp"], path=path, shown_name=names["timestamp"], first_line=first_line, kind="int"
    )
    return pa.table(
        {
            "user_id": user,
            "item_id": item,
            "rating": pa.array(rating, pa.float64()),
            "timestamp": pa.array(ts, pa.int64()),
        }
    )


def _require_columns(path: Path, header: list[str], required: list[str], shown: list[str] | None = None) -> None:
    missing = [c for c in required if c not in header]
    if missing:
        raise InvariRankError(
            f"{path}, line 1: missing column {missing[0]!r}; expected columns "
            f"{', '.join(shown or required)} (found: {', '.join(header) or 'none'})"
        )


def _read_ratings_csv(path: Path) -> pa.Table:
    require_file(path, "MovieLens ratings (userId,movieId,rating,timestamp)")
    header = read_header(path, ",")
    cols = ["userId", "movieId", "rating", "timestamp"]
    _require_columns(path, header, cols)
    table = read_delimited(path, delimiter=",", column_names=header, header=True, include=cols)
    return ratings_table(table, dict(zip(["user_id", "item_id", "rating", "timestamp"], cols)), path=path, first_line=2)


def _read_ratings_dat(path: Path) -> pa.Table:
    require_file(path, "MovieLens ratings (UserID::MovieID::Rating::Timestamp)")
    data = path.read_bytes().replace(b"::", b"\t")
    cols = ["UserID", "MovieID", "Rating", "Timestamp"]
    table = read_delimited(
        path,
        delimiter="\t",
        column_names=cols,
        header=False,
        include=cols,
        quote=False,
        data=data,
        shown_delimiter="::",
    )
    return ratings_table(table, dict(zip(["user_id", "item_id", "rating", "timestamp"], cols)), path=path, first_line=1)


def _read_u_data(path: Path) -> pa.Table:
    require_file(path, "MovieLens-100K ratings (user id, item id, rating, timestamp; tab-separated)")
    cols = ["user id", "item id", "rating", "timestamp"]
    table = read_delimited(path, delimiter="\t", column_names=cols, header=False, include=cols, quote=False)
    return ratings_table(table, dict(zip(["user_id", "item_id", "rating", "timestamp"], cols)), path=path, first_line=1)


def _atomic_header(path: Path) -> tuple[list[str], dict[str, str]]:
    """Header fields of an atomic file and a map from base name (before ``:``) to the full field."""
    header = read_header(path, "\t", quote=False)
    base: dict[str, str] = {}
    for h in header:
        base.setdefault(h.split(":", 1)[0].strip(), h)
    return header, base


def _read_atomic_inter(path: Path) -> pa.Table:
    require_file(path, "atomic interactions (user_id:token, item_id:token, rating:float, timestamp:float)")
    header, base = _atomic_header(path)
    need = ["user_id", "item_id", "rating", "timestamp"]
    _require_columns(path, list(base), need, ["user_id:token", "item_id:token", "rating:float", "timestamp:float"])
    table = read_delimited(
        path, delimiter="\t", column_names=header, header=True, include=[base[c] for c in need], quote=False
    )
    return ratings_table(table, {c: base[c] for c in need}, path=path, first_line=2)


# ---------------------------------------------------------------------------------------------------
# items


def _items_frame(rows: list[tuple[str, str, int | None, tuple[str, ...]]]) -> pd.DataFrame:
    seen: set[str] = set()
    kept = []
    for row in rows:
        if row[0] in seen:
            continue
        seen.add(row[0])
        kept.append(row)
    frame = pd.DataFrame(
        {
            "item_id": pd.array([r[0] for r in kept], dtype=object),
            "title": pd.array([r[1] for r in kept], dtype=object),
            "year": pd.array([r[2] for r in kept], dtype="Int64"),
            "genres": pd.Series([list(r[3]) for r in kept], dtype=object),
        }
    )
    return frame


def _title_and_year(raw_title: str, year_field: str | None = None) -> tuple[str, int | None]:
    title, title_year = split_title_year(raw_title)
    if year_field is not None:
        year = parse_year(year_field)
        if year is not None:
            return title, year
    return title, title_year


def _read_movies_csv(path: Path) -> list:
    require_file(path, "MovieLens movies (movieId,title,genres)")
    header = read_header(path, ",")
    cols = ["movieId", "title", "genres"]
    _require_columns(path, header, cols)
    table = read_delimited(path, delimiter=",", column_names=header, header=True, include=cols)
    ids = _id_column(table, "movieId", path=path, shown="movieId", first_line=2).to_pylist()
    titles = table.column("title").to_pylist()
    genres = table.column("genres").to_pylist()
    rows = []
    for item_id, raw_title, g in zip(ids, titles, genres):
        title, year = _title_and_year(raw_title)
        rows.append((item_id, title, year, parse_genres(g, "|")))
    return rows


def _text_lines(path: Path, what: str) -> list[str]:
    require_file(path, what)
    return decode_text(path.read_bytes(), path, ("utf-8", "latin-1")).lstrip("\ufeff").splitlines()


def _read_movies_dat(path: Path) -> list:
    lines = _text_lines(path, "MovieLens movies (MovieID::Title::Genres)")
    rows = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("::")
        if len(parts) < 3:
            raise InvariRankError(
                f"{path}, line {n}: expected 3 fields separated by '::' (MovieID, Title, Genres), found {len(parts)}"
            )
        item_id = parts[0].strip()
        if not item_id:
            raise InvariRankError(f"{path}, line {n}, column 'MovieID': expected an id, found an empty value")
        title, year = _title_and_year("::".join(parts[1:-1]))
        rows.append((item_id, title, year, parse_genres(parts[-1], "|")))
    return rows


def _read_u_item(path: Path) -> list:
    lines = _text_lines(
        path, "MovieLens-100K items (movie id|title|release date|video release date|IMDb URL|19 genre flags)"
    )
    n_genres = len(ML100K_GENRES)
    rows = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < 5 + n_genres:
            raise InvariRankError(
                f"{path}, line {n}: expected {5 + n_genres} fields separated by '|' "
                f"(movie id, title, release date, video release date, IMDb URL, "
                f"{n_genres} genre flags), found {len(parts)}"
            )
        flags = parts[-n_genres:]
        head = parts[:-n_genres]
        item_id = head[0].strip()
        if not item_id:
            raise InvariRankError(f"{path}, line {n}, column 'movie id': expected an id, found an empty value")
        raw_title = "|".join(head[1 : len(head) - 3])  # a title holding '|' is re-joined
        genres = []
        for g, flag in zip(ML100K_GENRES, flags):
            flag = flag.strip()
            if flag not in ("0", "1"):
                raise InvariRankError(f"{path}, line {n}, genre flag {g!r}: expected 0 or 1, found {flag!r}")
            if flag == "1":
                genres.append(g)
        title, year = _title_and_year(raw_title)
        rows.append((item_id, title, year, tuple(genres)))
    return rows


def _read_atomic_item(path: Path) -> list:
    require_file(path, "atomic items (item_id:token, movie_title:token_seq, release_year:token, class:token_seq)")
    header, base = _atomic_header(path)
    title_col = next((base[c] for c in ("movie_title", "title") if c in base), None)
    if "item_id" not in base or title_col is None:
        missing = "item_id" if "item_id" not in base else "movie_title"
        raise InvariRankError(
            f"{path}, line 1: missing column {missing!r}; expected columns item_id:token, "
            f"movie_title:token_seq[, release_year:token, class:token_seq] "
            f"(found: {', '.join(header)})"
        )
    year_col = next((base[c] for c in ("release_year", "year") if c in base), None)
    genre_col = next((base[c] for c in ("class", "genre", "genres") if c in base), None)
    include = [base["item_id"], title_col] + [c for c in (year_col, genre_col) if c]
    table = read_delimited(path, delimiter="\t", column_names=header, header=True, include=include, quote=False)
    ids = _id_column(table, base["item_id"], path=path, shown=base["item_id"], first_line=2).to_pylist()
    titles = table.column(title_col).to_pylist()
    years = table.column(year_col).to_pylist() if year_col else [None] * len(ids)
    genres = table.column(genre_col).to_pylist() if genre_col else [None] * len(ids)
    rows = []
    for item_id, raw_title, y, g in zip(ids, titles, years, genres):
        title, year = _title_and_year(raw_title, y if year_col else None)
        rows.append((item_id, title, year, parse_genres(g, " ")))
    return rows


_READERS = {
    "csv": (_read_ratings_csv, _read_movies_csv),
    "dat": (_read_ratings_dat, _read_movies_dat),
    "100k": (_read_u_data, _read_u_item),
    "atomic": (_read_atomic_inter, _read_atomic_item),
}


def read_movielens(raw_dir: Path, layout: Layout | None = None) -> RawData:
    """Read the MovieLens files in ``raw_dir`` (layout auto-detected unless given)."""
    layout = layout or detect_layout(raw_dir)
    read_ratings, read_items = _READERS[layout.name]
    ratings = read_ratings(layout.ratings)
    rows = read_items(layout.items)
    if not rows:
        raise InvariRankError(f"{layout.items}: no item rows; expected one item per line")
    items = _items_frame(rows)
    return RawData(
        ratings=ratings,
        items=items,
        layout=layout.name,
        files={"ratings": layout.ratings, "items": layout.items},
        titles_without_year=int(items["year"].isna().sum()),
    )
