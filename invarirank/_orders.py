"""Presented orders: the M candidate permutations each query is reranked under, and stable seeds.

Conventions:

* An order is a tuple of 0-based indices into ``query.candidates`` (the retrieval order):
  ``order[i]`` is the candidate written at presented position ``i``.
* Order ``t`` (0-based) of a query is drawn from a generator seeded by ``(seed, query_id, t)`` through
  :func:`stable_seed`, so it depends on nothing else: the same orders for every method, model, K-sweep
  run and machine. An order equal to the retrieval order is redrawn from the same generator. With K = 1
  there is only one order, which *is* the retrieval order: it is used as it is (documented edge case);
  with K = 2 every order is the single swap.
* Noise floor: ``noise_floor=True`` gives M copies of order 0, each with ``key`` 0, so every copy is the
  same input in every respect (method-internal shuffles are seeded from ``key`` too); any difference
  between the copies' outputs then comes from the scorer itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from the ``|``-joined string of ``parts`` (blake2b; never Python's ``hash``).

    Stable across processes, platforms and Python versions.
    """
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def rng_for(*parts: object) -> np.random.Generator:
    """``numpy.random.default_rng`` seeded with :func:`stable_seed` of ``parts``."""
    return np.random.default_rng(stable_seed(*parts))


@dataclass(frozen=True)
class PresentedOrder:
    """One presented order of a query.

    ``t`` is the 0-based row index (the observations' ``permutation``); ``key`` is the index the order
    was drawn with and the one method-internal shuffles are seeded from (equal to ``t`` except in a
    noise-floor run, where every copy has key 0); ``positions`` are indices into the retrieval order.
    """

    t: int
    key: int
    positions: tuple[int, ...]


def draw_order(k: int, seed: int, query_id: str, t: int) -> tuple[int, ...]:
    """Order ``t`` of a query with ``k`` candidates: a seeded permutation of ``range(k)`` that differs
    from the identity (retrieval order) whenever ``k >= 2``."""
    if k < 1:
        raise ValueError(f"query {query_id!r}: no candidates")
    if k == 1:
        return (0,)
    rng = rng_for(seed, query_id, "order", t)
    identity = np.arange(k)
    while True:
        perm = rng.permutation(k)
        if not np.array_equal(perm, identity):
            return tuple(int(i) for i in perm)


def presented_orders(query_id: str, k: int, m: int, seed: int, *, noise_floor: bool = False) -> list[PresentedOrder]:
    """The ``m`` presented orders of a query with ``k`` candidates (see the module docstring)."""
    if m < 1:
        raise ValueError("m must be at least 1")
    if noise_floor:
        first = draw_order(k, seed, query_id, 0)
        return [PresentedOrder(t, 0, first) for t in range(m)]
    return [PresentedOrder(t, t, draw_order(k, seed, query_id, t)) for t in range(m)]
