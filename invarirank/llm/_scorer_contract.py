"""The scorer contract, as checks that raise ``AssertionError`` naming what broke (``check_*``): the
:class:`~invarirank.types.BatchScorer` members, scores aligned under a permutation of the presented order, a stable
shared prefix, ``score_requests`` across queries equal to scoring each alone, determinism. A new scorer passes them
all (:func:`check_scorer` runs every one; ``tests/llm/test_scorer_contract.py`` runs them on the project's scorers).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invarirank.types import Item, Query


def contract_orders(query: Query) -> list[list[Item]]:
    """Presented orders for the contract checks: the retrieval order, its reverse and a rotation."""
    c = list(query.candidates)
    return [c, c[::-1], c[2:] + c[:2]]


def _scores(result: Any) -> Any:
    import numpy as np

    return np.asarray(result.scores, dtype=np.float64)


def _close(a: Any, b: Any, atol: float, what: str) -> None:
    import numpy as np

    assert a.shape == b.shape, f"{what}: {a.shape} scores against {b.shape}"
    if atol == 0:
        assert np.array_equal(a, b), f"{what}: {a} != {b}"
    else:
        assert np.abs(a - b).max() <= atol, f"{what}: {a} vs {b} (atol {atol})"


def check_declares_batching(scorer: Any) -> None:
    """The :class:`~invarirank.types.BatchScorer` members are there and well-formed: an integer ``batch_size``
    >= 1, a ``stats`` mapping of numbers, a JSON ``key_identity()`` and ``identity()``."""
    import json
    import numbers

    from invarirank.types import BatchScorer

    assert isinstance(scorer, BatchScorer), f"{type(scorer).__name__} is no BatchScorer"
    size = scorer.batch_size
    assert isinstance(size, int) and not isinstance(size, bool) and size >= 1, f"batch_size {size!r}"
    assert all(isinstance(v, numbers.Number) for v in dict(scorer.stats).values()), scorer.stats
    for ident in (scorer.key_identity(), scorer.identity()):
        assert json.loads(json.dumps(ident)) == ident, ident


def check_aligned_under_permutation(
    scorer: Any, fresh: Any, query: Query, *, atol: float = 0.0, position_free: bool = False
) -> None:
    """Scores stay with their candidates when the presented order is permuted.

    Every order of :func:`contract_orders`, scored through ``scorer`` after the others (so that any cache it
    keeps has seen permutations of the same candidates) and in one ``score_batch``, equals the scores a scorer
    from ``fresh()`` gives that order alone, slot by slot (a cache keyed on the candidate set, or results handed
    back in the wrong order, fail here). ``position_free``: the scorer's score of a candidate does not depend on
    its slot, so the score of each candidate must follow the candidate: ``score(permuted)[i]`` is the score of
    ``permuted[i]`` in the first order."""
    import numpy as np

    orders = contract_orders(query)
    alone = [_scores(fresh().score(query, o)) for o in orders]
    seen = [_scores(scorer.score(query, o)) for o in orders]
    batched = [_scores(r) for r in scorer.score_batch(query, orders[::-1])][::-1]
    for o, a, s, b in zip(orders, alone, seen, batched):
        where = f"order {[it.item_id for it in o]}"
        _close(s, a, atol, f"{where} after its permutations")
        _close(b, a, atol, f"{where} in a batch of its permutations")
    if position_free:
        first = {it.item_id: float(x) for it, x in zip(orders[0], alone[0])}
        for o, a in zip(orders[1:], alone[1:]):
            expected = np.array([first[it.item_id] for it in o], dtype=np.float64)
            _close(a, expected, atol, f"candidates of order {[it.item_id for it in o]} (position-free scorer)")


def check_prefix_stable(scorer: Any, query: Query, *, atol: float) -> None:
    """For a scorer whose score of the candidate in slot ``i`` reads only the prompt up to that candidate (the
    span scorer: causal attention): swapping the last two candidates leaves the scores of the other slots as they
    are (scores handed back in another slot order, e.g. reversed, fail here)."""
    c = list(query.candidates)
    a = _scores(scorer.score(query, c))
    b = _scores(scorer.score(query, c[:-2] + [c[-1], c[-2]]))
    _close(a[:-2], b[:-2], atol, "the slots before a swap of the last two")


def check_requests_across_queries(scorer: Any, fresh: Any, queries: Sequence[Query], *, atol: float = 0.0) -> None:
    """``score_requests`` over the orders of several queries, interleaved, equals scoring each request alone on a
    scorer from ``fresh()``, in order."""
    per_query = [[(q, o) for o in contract_orders(q)] for q in queries]
    interleaved = [r for group in zip(*per_query) for r in group]
    got = scorer.score_requests(interleaved)
    assert len(got) == len(interleaved), f"{len(got)} results for {len(interleaved)} requests"
    for (q, o), res in zip(interleaved, got):
        _close(
            _scores(res),
            _scores(fresh().score(q, o)),
            atol,
            f"query {q.query_id}, order {[it.item_id for it in o]} in a window of {len(queries)} queries",
        )


def check_deterministic(scorer: Any, query: Query) -> None:
    """The same order twice gives the same scores, bit for bit."""
    import numpy as np

    for o in contract_orders(query):
        a, b = _scores(scorer.score(query, o)), _scores(scorer.score(query, o))
        assert np.array_equal(a, b), f"order {[it.item_id for it in o]}: {a} then {b}"


def check_scorer(fresh: Any, queries: Sequence[Query], *, atol: float = 0.0, position_free: bool = False) -> None:
    """Every contract check on scorers from ``fresh()`` (a function building a new scorer; at least two queries
    with at least four candidates each): what a new scorer kind must pass. ``atol``: 0 for a scorer that is exact
    in any batch, a small float32 tolerance for a model scored in batches."""
    assert len(queries) >= 2 and all(len(q.candidates) >= 4 for q in queries), "two queries of >= 4 candidates"
    check_declares_batching(fresh())
    check_deterministic(fresh(), queries[0])
    check_aligned_under_permutation(fresh(), fresh, queries[0], atol=atol, position_free=position_free)
    check_requests_across_queries(fresh(), fresh, queries, atol=atol)
