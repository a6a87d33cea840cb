"""Toy queries for tests and device checks: MovieLens-like items (made-up titles from a fixed word list, years,
genres), one query around them (:func:`toy_query`), and a run's worth of test and validation queries whose
relevant items sit at known retrieval ranks (:func:`toy_split_queries`). Seeded; nothing touches the network.
"""

from __future__ import annotations

from invarirank.types import HistoryEntry, Item, Query

TOY_GENRES = (
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
TOY_WORDS = (
    "Star",
    "Wars",
    "Toy",
    "Story",
    "Fargo",
    "Return",
    "Jedi",
    "Contact",
    "English",
    "Patient",
    "Scream",
    "Liar",
    "Air",
    "Force",
    "One",
    "Independence",
    "Day",
    "Godfather",
    "Titanic",
    "Raiders",
    "Lost",
    "Ark",
    "Silence",
    "Lambs",
    "Pulp",
    "Fiction",
    "Twelve",
    "Monkeys",
    "Babe",
    "Heat",
    "Casino",
    "Sense",
    "Sensibility",
    "Empire",
    "Strikes",
    "Back",
    "Jerry",
    "Maguire",
    "Rock",
    "Saint",
    "Apt",
    "Pupil",
    "Kolya",
    "'Til",
    "There",
    "Was",
    "You",
    "City",
    "Lost",
    "Children",
    "Amélie",
    "Das",
    "Boot",
    "Léon",
)


def toy_items(n: int, *, seed: int = 0, offset: int = 0) -> list[Item]:
    """``n`` MovieLens-like items (titles, integer years, 1-3 genres), seeded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        words = rng.choice(len(TOY_WORDS), size=int(rng.integers(1, 4)), replace=False)
        title = " ".join(TOY_WORDS[w] for w in words)
        year = None if rng.random() < 0.1 else int(rng.integers(1930, 1999))
        genres = tuple(
            TOY_GENRES[g] for g in sorted(rng.choice(len(TOY_GENRES), size=int(rng.integers(1, 4)), replace=False))
        )
        items.append(Item(str(offset + i + 1), title, year, genres))
    return items


def toy_query(k: int = 5, history: int = 8, *, seed: int = 0, query_id: str = "u1") -> Query:
    """A query with ``history`` rated items (newest first) and ``k`` candidates; ground truth = first candidate."""
    hist_items = toy_items(history, seed=seed + 1000, offset=1000)
    ratings = [float(1 + (i * 7 + seed) % 5) for i in range(history)]
    cands = tuple(toy_items(k, seed=seed))
    return Query(
        query_id,
        query_id.lstrip("uv") or "1",
        tuple(HistoryEntry(it, r) for it, r in zip(hist_items, ratings)),
        cands,
        (cands[0].item_id,),
    )


def toy_split_queries(n_test: int = 8, n_validation: int = 3, k: int = 8) -> list[Query]:
    """``n_test`` test queries ``u0, u1, ...`` then ``n_validation`` validation queries ``v0, ...``, each with ``k``
    candidates; query j's relevant item sits at retrieval rank ``3j mod k`` (0-based; with k = 8: 0,3,6,1,4,7,2,5,
    so at K = 3 only u0, u3, u6 keep it), plus one ground-truth item that was never retrieved."""
    out = []
    for split, n, pre in (("test", n_test, "u"), ("validation", n_validation, "v")):
        for j in range(n):
            cands = tuple(Item(str(100 * j + i), f"Movie {j}-{i}", 1990 + i, ("Drama",)) for i in range(k))
            truth = (str(100 * j + (j * 3) % k), "unretrieved")
            hist = (HistoryEntry(Item("1", "Old Movie", 1980, ("Drama",)), 4.0),)
            out.append(Query(f"{pre}{j}", str(j), hist, cands, truth, split))
    return out
