"""Hypothesis strategies for the evaluation tests: ranking families (observation rows) with tricky ids and ties."""

from __future__ import annotations

import random

from hypothesis import strategies as st

# ids that sort differently as strings and as numbers, case and non-ASCII included
ID_POOL = [
    "9",
    "10",
    "B0",
    "b0",
    "100",
    "011",
    "0",
    "1",
    "2",
    "a",
    "Z",
    "_",
    "é",
    "-1",
    "1e3",
    "x y",
    "B00X12",
    "99",
    "zz",
]
NOT_CANDIDATES = ["nc1", "Ω", "10"]  # "10" may or may not be a candidate


@st.composite
def families(draw, min_k: int = 2, max_k: int = 12, max_m: int = 20, max_queries: int = 3, max_methods: int = 2):
    """Observation rows of 1..max_queries queries x 1..max_methods methods.

    Outputs come from a few modes that force ties in the win scores: a small set of base rankings cycled over
    the rows, a position follower (output = input), its reverse, or free random permutations. Permutations are
    drawn from a seeded ``random.Random`` (fast) whose seed hypothesis chooses.
    """
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    n_queries = draw(st.integers(1, max_queries))
    methods = [f"m{n}" for n in range(draw(st.integers(1, max_methods)))]
    rows = []
    for q in range(n_queries):
        K = draw(st.integers(min_k, max_k))
        ids = draw(st.lists(st.sampled_from(ID_POOL), min_size=K, max_size=K, unique=True))
        relevant = draw(st.lists(st.sampled_from(ids + NOT_CANDIDATES), min_size=1, max_size=4))
        for method in methods:
            M = draw(st.integers(1, max_m))
            mode = draw(st.sampled_from(["bases", "bases", "follow", "reverse", "free", "mixed"]))
            bases = [rnd.sample(ids, K) for _ in range(draw(st.integers(1, 3)))]
            inputs_from = draw(st.sampled_from(["random", "random", "few"]))
            few = [rnd.sample(ids, K) for _ in range(2)]
            for t in range(M):
                inp = rnd.sample(ids, K) if inputs_from == "random" else list(few[t % 2])
                if mode == "bases":
                    out = list(bases[t % len(bases)])
                elif mode == "follow":
                    out = list(inp)
                elif mode == "reverse":
                    out = inp[::-1]
                elif mode == "free":
                    out = rnd.sample(ids, K)
                else:
                    out = list(inp) if rnd.random() < 0.5 else list(bases[0])
                rows.append(
                    {
                        "query_id": f"q{q}",
                        "method": method,
                        "permutation": t,
                        "input": inp,
                        "output": out,
                        "relevant": list(relevant),
                    }
                )
    rnd.shuffle(rows)
    return rows
