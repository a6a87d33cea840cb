"""Helpers for the data-layer tests: tiny raw files in every layout, written by the tests themselves.

(No tests here; the module is imported by the other ``test_data_*`` files.)
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

from invarirank.data._movielens import ML100K_GENRES

# (item id, raw MovieLens title, genres) — covers a trailing year, a title without a year, a title
# with a year in the middle, "(no genres listed)", a latin-1 character and a comma inside a title.
ITEMS = [
    ("1", "Toy Story (1995)", ["Animation", "Children's", "Comedy"]),
    ("2", "GoldenEye (1995)", ["Action", "Adventure", "Thriller"]),
    ("3", "Four Rooms (1995)", ["Thriller"]),
    ("4", "American President, The (1995)", ["Comedy", "Drama", "Romance"]),
    ("5", "unknown", []),
    ("6", "Café au lait (1993)", ["Comedy"]),
    ("7", "2001: A Space Odyssey (1968)", ["Drama", "Sci-Fi"]),
    ("8", "Blade Runner (1982)", ["Sci-Fi", "Thriller"]),
    ("9", "Heat (1995)", ["Action", "Crime", "Thriller"]),
    ("10", "Brazil (1985)", ["Sci-Fi"]),
    ("11", "Casablanca (1942)", ["Drama", "Romance", "War"]),
    ("12", "Fargo (1996)", ["Crime", "Drama", "Thriller"]),
    ("13", "Alien (1979)", ["Action", "Horror", "Sci-Fi"]),
    ("14", "Jaws (1975)", ["Action", "Horror"]),
    ("15", "Vertigo (1958)", ["Mystery", "Thriller"]),
    ("16", "Psycho (1960)", ["Horror", "Thriller"]),
    ("17", "Rear Window (1954)", ["Mystery", "Thriller"]),
    ("18", "Amadeus (1984)", ["Drama"]),
    ("19", "Ran (1985)", ["Drama", "War"]),
    ("20", "Babe (1995)", ["Children's", "Comedy", "Drama"]),
    ("21", "Heavy Metal (1981)", []),
    ("22", "Chinatown (1974)", ["Film-Noir", "Mystery", "Thriller"]),
    ("23", "Annie Hall (1977)", ["Comedy", "Romance"]),
    ("24", "Nashville (1975)", ["Musical"]),
    ("25", "Unforgiven (1992)", ["Western"]),
    ("26", "Never rated (2000)", ["Drama"]),
]

EXPECTED_TITLES = {
    "1": ("Toy Story", 1995),
    "4": ("American President, The", 1995),
    "5": ("unknown", None),
    "6": ("Café au lait", 1993),
    "7": ("2001: A Space Odyssey", 1968),
    "21": ("Heavy Metal", 1981),
}


def make_ratings() -> list[tuple[str, str, float, int]]:
    """Ratings of users with 3, 4, 9, 10, 12 and 25 interactions (user "9" falls below 10).

    Timestamps include ties (several items at the same second) to exercise the (timestamp, item id)
    order; ratings cycle through 1..5 so histories hold low ratings too.
    """
    rows = []
    sizes = {"1": 12, "2": 25, "3": 10, "9": 9, "10": 4, "11": 3}
    for u, n in sizes.items():
        for k in range(n):
            item = str((int(u) * 7 + k * 2) % 25 + 1)
            ts = 1_000_000 + int(u) * 1000 + (k // 2) * 10  # pairs share a timestamp
            rating = float((k * 3 + int(u)) % 5 + 1)
            rows.append((u, item, rating, ts))
    # make sure no (user, item) pair repeats
    assert len({(r[0], r[1]) for r in rows}) == len(rows)
    return rows


def _items_with_year(items):
    from invarirank.data._titles import split_title_year

    return [(i, *split_title_year(t), g) for i, t, g in items]


def write_csv_layout(folder: Path, ratings=None, items=None) -> Path:
    ratings = make_ratings() if ratings is None else ratings
    items = ITEMS if items is None else items
    folder.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["userId", "movieId", "rating", "timestamp"])
    for u, i, r, t in ratings:
        w.writerow([u, i, f"{r:.1f}", t])
    (folder / "ratings.csv").write_text(buf.getvalue(), encoding="utf-8")
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["movieId", "title", "genres"])
    for i, title, genres in items:
        w.writerow([i, title, "|".join(genres) if genres else "(no genres listed)"])
    (folder / "movies.csv").write_text(buf.getvalue(), encoding="utf-8")
    return folder


def write_dat_layout(folder: Path, ratings=None, items=None) -> Path:
    ratings = make_ratings() if ratings is None else ratings
    items = ITEMS if items is None else items
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ratings.dat").write_bytes(
        "".join(f"{u}::{i}::{int(r)}::{t}\n" for u, i, r, t in ratings).encode("latin-1")
    )
    (folder / "movies.dat").write_bytes(
        "".join(f"{i}::{title}::{'|'.join(g) if g else '(no genres listed)'}\n" for i, title, g in items).encode(
            "latin-1"
        )
    )
    return folder


def write_100k_layout(folder: Path, ratings=None, items=None) -> Path:
    ratings = make_ratings() if ratings is None else ratings
    items = ITEMS if items is None else items
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "u.data").write_text("".join(f"{u}\t{i}\t{int(r)}\t{t}\n" for u, i, r, t in ratings), encoding="ascii")
    lines = []
    for i, title, genres in items:
        flags = ["1" if g in genres else "0" for g in ML100K_GENRES]
        lines.append("|".join([i, title, "01-Jan-1995", "", "http://example.org/x"] + flags) + "\n")
    (folder / "u.item").write_bytes("".join(lines).encode("latin-1"))
    return folder


def write_atomic_layout(folder: Path, ratings=None, items=None, name: str = "tiny") -> Path:
    ratings = make_ratings() if ratings is None else ratings
    items = ITEMS if items is None else items
    folder.mkdir(parents=True, exist_ok=True)
    inter = ["user_id:token\titem_id:token\trating:float\ttimestamp:float"]
    inter += [f"{u}\t{i}\t{r:g}\t{t}" for u, i, r, t in ratings]
    (folder / f"{name}.inter").write_text("\n".join(inter) + "\n", encoding="utf-8")
    lines = ["item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq"]
    for i, title, year, genres in _items_with_year(items):
        lines.append(f"{i}\t{title}\t{year if year is not None else ''}\t{' '.join(genres)}")
    (folder / f"{name}.item").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


LAYOUT_WRITERS = {
    "csv": write_csv_layout,
    "dat": write_dat_layout,
    "100k": write_100k_layout,
    "atomic": write_atomic_layout,
}


# ---------------------------------------------------------------------------------------------------
# Amazon


def amazon_reviews(n_users: int = 5, per_user: int = 4) -> list[dict]:
    rows = []
    for u in range(n_users):
        for k in range(per_user + u % 3):
            rows.append(
                {
                    "rating": float((u + k) % 5 + 1),
                    "title": "nice",
                    "text": "long text " * 3,
                    "images": [],
                    "asin": f"X{k}",
                    "parent_asin": f"B{(u * 3 + k) % 9:03d}",
                    "user_id": f"AUSER{u:02d}",
                    "timestamp": 1_588_000_000_000 + u * 10_000 + k * 1000,
                    "helpful_vote": 0,
                    "verified_purchase": True,
                }
            )
    return rows


def amazon_metadata(ids=None) -> list[dict]:
    ids = [f"B{k:03d}" for k in range(9)] if ids is None else ids
    return [
        {
            "main_category": "Books",
            "title": f"Book number {k}",
            "average_rating": 4.5,
            "rating_number": 10,
            "features": [],
            "description": ["d"],
            "price": None,
            "images": [],
            "videos": [],
            "store": "S",
            "categories": ["Books", "Literature & Fiction"] if k % 2 else [],
            "details": {},
            "parent_asin": i,
            "bought_together": None,
        }
        for k, i in enumerate(ids)
    ]


def write_jsonl(path: Path, rows: list[dict], gz: bool | None = None) -> Path:
    gz = path.name.endswith(".gz") if gz is None else gz
    text = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        with gzip.GzipFile(path, "wb", mtime=0) as fh:
            fh.write(text)
    else:
        path.write_bytes(text)
    return path
