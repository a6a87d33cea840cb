"""A simulated listwise scorer: no model, no torch, deterministic and fast.

The score of the candidate at presented position ``p`` of an order of length ``L`` is::

    utility(seed, query, item)                      # latent preference, N(0, utility_sd^2)
  + relevance * [item is in the query's ground truth]
  + position_effect(p, L)                           # shape and strength below
  + noise_sd * noise(seed, query, presented order, p)   # N(0, 1)

* ``utility`` depends only on ``(seed, query_id, item_id)``: the same item gets the same utility in
  every order of the query.
* ``position_effect``: with ``x = p / (L - 1)`` (``x = 0`` when ``L = 1``) the shapes are
  ``primacy``: ``strength * (1 - x)`` (early positions preferred), ``recency``: ``strength * x``,
  ``u``: ``strength * (2x - 1)^2`` (both ends preferred), ``none``: 0.
* ``noise`` is a deterministic function of ``(seed, query_id, the presented ids in order, p)``: the
  same serialised input always gets the same scores (like a real model in float32 on one machine),
  while a different order of the same items gets different noise.

Higher scores are preferred; scores are float32. All pseudo-random numbers come from blake2b hashes
of strings and a vectorised splitmix64 in numpy ``uint64`` arithmetic, so they are identical across
processes and platforms and never depend on Python's ``hash``. :meth:`SimulatedScorer.score_indices`
scores many orders of one item list at once (tens of thousands of orders per second).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvariRankError
from ..types import Item, Query, ScorerBase, ScoreResult
from ._options import SIMULATED_OPTIONS, resolve_options

BIAS_SHAPES = ("primacy", "recency", "u", "none")
#: changes whenever the same settings would give other scores (it is in every run's manifest and reuse check)
VERSION = 1

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31, _S11 = (np.uint64(s) for s in (30, 27, 31, 11))
_TWO53 = 1.0 / float(1 << 53)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser, element-wise on a uint64 array (wrap-around arithmetic)."""
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


def _normal(h: np.ndarray) -> np.ndarray:
    """Standard normal deviates from uint64 hashes (Box-Muller on two derived uniforms)."""
    a = _splitmix(h)
    b = _splitmix(a)
    u1 = ((a >> _S11).astype(np.float64) + 1.0) * _TWO53  # (0, 1]
    u2 = (b >> _S11).astype(np.float64) * _TWO53  # [0, 1)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)


def position_effect(shape: str, strength: float, length: int) -> np.ndarray:
    """The additive position effect for presented positions ``0..length-1`` (float64)."""
    if shape not in BIAS_SHAPES:
        raise InvariRankError(f"simulated scorer: bias_shape {shape!r}, expected one of {', '.join(BIAS_SHAPES)}")
    x = np.arange(length, dtype=np.float64) / (length - 1) if length > 1 else np.zeros(length)
    if shape == "primacy":
        return strength * (1.0 - x)
    if shape == "recency":
        return strength * x
    if shape == "u":
        return strength * (2.0 * x - 1.0) ** 2
    return np.zeros(length)


class SimulatedScorer(ScorerBase):
    """A seeded stand-in for an LLM scorer (see the module docstring for the score model).

    Parameters (all keyword; the options and their defaults: :data:`invarirank.llm._options.SIMULATED_OPTIONS`):
    ``seed``; ``bias_shape`` (``primacy`` | ``recency`` | ``u`` | ``none``);
    ``bias_strength`` (in utility standard deviations); ``noise_sd``; ``relevance`` (bonus of a
    ground-truth item); ``utility_sd``. ``stats`` counts ``calls`` (orders scored), ``cache_hits``
    (always 0), ``forward_passes`` (= calls: one simulated pass per order) and ``tokens_computed`` (0).
    Batching: the :class:`~invarirank.types.ScorerBase` defaults (``batch_size`` 1, one ``score`` per request;
    :meth:`score_indices` is its fast path for many orders of one list).
    """

    name = "simulated"

    def __init__(self, *, seed: int = 0, **options: Any) -> None:
        o = resolve_options(SIMULATED_OPTIONS, options, "simulated scorer")
        for key in ("bias_shape", "bias_strength", "noise_sd", "relevance", "utility_sd"):
            if not SIMULATED_OPTIONS[key].check(o[key]):  # non-JSON values too (numpy numbers, ...)
                raise InvariRankError(
                    f"simulated scorer: option {key!r} = {o[key]!r}, expected {SIMULATED_OPTIONS[key].expected}"
                )
        bias_shape, bias_strength, noise_sd = o["bias_shape"], o["bias_strength"], o["noise_sd"]
        relevance, utility_sd, model = o["relevance"], o["utility_sd"], o["model"]
        self.seed = int(seed)
        self.bias_shape = bias_shape
        self.bias_strength = float(bias_strength)
        self.noise_sd = float(noise_sd)
        self.relevance = float(relevance)
        self.utility_sd = float(utility_sd)
        self.model = model or "simulated"
        self.stats: dict[str, int] = {"calls": 0, "cache_hits": 0, "forward_passes": 0, "tokens_computed": 0}
        self._item_cache: dict[tuple[str, str], tuple[int, float]] = {}
        self._query_hash: dict[str, int] = {}

    # -- identity ------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """JSON-able description used in manifests and cache keys (e.g. STELLA calibration)."""
        return {
            "scorer": "simulated",
            "model": self.model,
            "version": VERSION,
            "seed": self.seed,
            "bias_shape": self.bias_shape,
            "bias_strength": self.bias_strength,
            "noise_sd": self.noise_sd,
            "relevance": self.relevance,
            "utility_sd": self.utility_sd,
        }

    # -- internals -----------------------------------------------------------------------------
    def _item_terms(self, query: Query, items: Sequence[Item]) -> tuple[np.ndarray, np.ndarray]:
        """Per item: its uint64 hash and its base score (utility + relevance bonus)."""
        if len(self._item_cache) > 200_000:
            self._item_cache.clear()
        truth = set(query.ground_truth)
        hashes = np.empty(len(items), dtype=np.uint64)
        base = np.empty(len(items), dtype=np.float64)
        for i, item in enumerate(items):
            key = (query.query_id, item.item_id)
            got = self._item_cache.get(key)
            if got is None:
                h = _hash64(f"{self.seed}|{query.query_id}|item|{item.item_id}")
                u = float(_normal(np.array([h], dtype=np.uint64))[0])
                got = (h, u)
                self._item_cache[key] = got
            hashes[i] = got[0]
            base[i] = self.utility_sd * got[1] + (self.relevance if item.item_id in truth else 0.0)
        return hashes, base

    def _order_seed(self, query_id: str) -> np.uint64:
        h = self._query_hash.get(query_id)
        if h is None:
            h = _hash64(f"{self.seed}|{query_id}|order")
            self._query_hash[query_id] = h
        return np.uint64(h)

    # -- scoring -------------------------------------------------------------------------------
    def score_indices(self, query: Query, items: Sequence[Item], orders: np.ndarray) -> np.ndarray:
        """Scores of many orders of one item list at once.

        ``orders`` is an integer array of shape (n, L): row ``r`` presents ``items[orders[r, i]]`` at
        position ``i``. Returns float32 scores of shape (n, L) aligned with the presented positions;
        row ``r`` equals ``score(query, [items[j] for j in orders[r]]).scores``.
        """
        orders = np.asarray(orders, dtype=np.int64)
        if orders.ndim != 2:
            raise ValueError("orders must be a 2-D array of item indices")
        n, length = orders.shape
        hashes, base = self._item_terms(query, items)
        pres_hash = hashes[orders]  # (n, L)
        h = np.full(n, self._order_seed(query.query_id), dtype=np.uint64)
        for p in range(length):  # fold the whole order into h
            h = _splitmix(h ^ pres_hash[:, p])
        steps = (np.arange(1, length + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        noise = _normal(_splitmix(h[:, None] ^ steps))  # (n, L), depends on (order, p)
        scores = (
            base[orders] + position_effect(self.bias_shape, self.bias_strength, length)[None, :] + self.noise_sd * noise
        )
        self.stats["calls"] += n
        self.stats["forward_passes"] += n
        return scores.astype(np.float32)

    def score(self, query: Query, presented: Sequence[Item]) -> ScoreResult:
        """One score per presented candidate (float32, higher = preferred); ``tokens`` is 0."""
        if len(presented) == 0:
            raise InvariRankError(f"query {query.query_id!r}: nothing to score (empty candidate list)")
        orders = np.arange(len(presented), dtype=np.int64)[None, :]
        return ScoreResult(scores=self.score_indices(query, presented, orders)[0], tokens=0, cached=False)
