"""Permutation designs: which presented orders an audit shows a reranker, seeded and identity-preserving.

Stability: full. Conventions (:mod:`invarirank._orders`): an order is a tuple of 0-based indices into
``query.candidates`` (the retrieval order) — ``order[i]`` is the candidate shown at presented position ``i`` — so
a candidate keeps its identity whatever position it takes. Every random choice comes from a generator seeded by
``(seed, query_id, design, ...)`` through :func:`invarirank._orders.rng_for`: the same arguments give the same
orders on any machine, whatever else the audit holds.

* ``random`` — the study's M orders: exactly :func:`invarirank._orders.presented_orders` (never the retrieval
  order when K >= 2), so an audit reproduces the presented orders of every run of the same seed.
* ``pinned`` — candidate ``pin_item`` (0-based retrieval index) held at presented position ``pin_position``, the
  others shuffled: M orders. What a reranker does to one candidate when only its neighbours move.
* ``sweep`` — every candidate at every position, ``repeats`` times: each repeat is a K × K Latin square (rows =
  orders), a cyclic square whose rows, columns and symbols are permuted by the seeded generator; M = K·repeats
  orders. Balanced, so the exposure curve of a position-blind reranker is exactly flat.
* ``label-swap`` — the ``random`` orders, and the labels written before the positions (A, B, C, ...) permuted
  independently of them by their own seeded generator, so that label bias and position bias can be told apart.
  Only for a reranker that reads :attr:`~invarirank.audit.Presentation.labels`.

What the observations record: every row has ``design`` (the name); ``pinned`` rows ``pin`` =
``{"item": ID, "position": P}``; ``label-swap`` rows ``labels`` (the label at each presented position).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._orders import presented_orders, rng_for
from ..errors import InvariRankError

__all__ = ["Design", "DESIGNS"]

#: the designs, in the order the documentation lists them
#: Stability: full (the permutation designs an audit shows a reranker).
DESIGNS: tuple[str, ...] = ("random", "pinned", "sweep", "label-swap")
#: the labels ``label-swap`` permutes (A..Z, then a..z), the choice prompt's alphabet
DEFAULT_LABELS: tuple[str, ...] = tuple(string.ascii_uppercase + string.ascii_lowercase)


@dataclass(frozen=True)
class Design:
    """A design and its settings: ``name`` in :data:`DESIGNS`; ``M`` orders per query (``sweep``: ignored, it
    makes K·``repeats``); ``pin_item``/``pin_position`` for ``pinned``; ``labels`` (the alphabet) for
    ``label-swap``.

    Stability: full (the permutation designs an audit shows a reranker)."""

    name: str = "random"
    M: int = 20
    repeats: int = 1
    pin_item: int = 0
    pin_position: int = 0
    labels: tuple[str, ...] = field(default=DEFAULT_LABELS)

    def __post_init__(self) -> None:
        if self.name not in DESIGNS:
            raise InvariRankError(f"design {self.name!r} is not known; expected one of {', '.join(DESIGNS)}")
        for what, value, low in (("M", self.M, 1), ("repeats", self.repeats, 1), ("pin_item", self.pin_item, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise InvariRankError(f"design {self.name!r}: {what} = {value!r}; expected an integer >= {low}")
        if isinstance(self.pin_position, bool) or not isinstance(self.pin_position, (int, np.integer)):
            raise InvariRankError(f"design 'pinned': pin_position = {self.pin_position!r}; expected an integer")
        if len(set(self.labels)) != len(self.labels) or not all(isinstance(x, str) and x for x in self.labels):
            raise InvariRankError("design 'label-swap': labels must be distinct non-empty strings")

    def to_json(self) -> dict[str, Any]:
        """The settings that decide the orders (for the manifest)."""
        out: dict[str, Any] = {"name": self.name}
        if self.name == "sweep":
            out["repeats"] = int(self.repeats)
        else:
            out["M"] = int(self.M)
        if self.name == "pinned":
            out |= {"pin_item": int(self.pin_item), "pin_position": int(self.pin_position)}
        if self.name == "label-swap":
            out["labels"] = "".join(self.labels) if all(len(x) == 1 for x in self.labels) else list(self.labels)
        return out


@dataclass(frozen=True)
class DesignOrder:
    """One order of a design: ``t`` (the row index), ``key`` (what method-internal shuffles are seeded from),
    ``positions`` (indices into the retrieval order), ``labels`` (the label of each presented position: A, B, C, ...
    by position unless the design permutes them; ``()`` when K exceeds the alphabet) and ``fields`` (what the row
    records about the design)."""

    t: int
    key: int
    positions: tuple[int, ...]
    labels: tuple[str, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)


def _pinned(query_id: str, k: int, d: Design, seed: int) -> list[tuple[int, ...]]:
    if d.pin_item >= k:
        raise InvariRankError(f"query {query_id!r}: pin_item {d.pin_item} is not a candidate index (K = {k})")
    position = d.pin_position if d.pin_position >= 0 else k + d.pin_position
    if not 0 <= position < k:
        raise InvariRankError(f"query {query_id!r}: pin_position {d.pin_position} is not a position (K = {k})")
    rest = np.array([i for i in range(k) if i != d.pin_item])
    out = []
    for t in range(d.M):
        others = rng_for(seed, query_id, "pinned", d.pin_item, position, t).permutation(rest).tolist()
        out.append(tuple(others[:position] + [d.pin_item] + others[position:]))
    return out


def _sweep(query_id: str, k: int, d: Design, seed: int) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for r in range(d.repeats):
        rng = rng_for(seed, query_id, "sweep", r)
        rows, cols, symbols = rng.permutation(k), rng.permutation(k), rng.permutation(k)
        # L[a, p] = symbols[(rows[a] + cols[p]) mod k]: a Latin square (each symbol once per row and per column)
        square = symbols[(rows[:, None] + cols[None, :]) % k]
        out.extend(tuple(int(x) for x in row) for row in square)
    return out


def design_orders(query_id: str, k: int, design: Design, seed: int) -> list[DesignOrder]:
    """The presented orders of one query with ``k`` candidates under ``design`` (module docstring)."""
    if k < 1:
        raise InvariRankError(f"query {query_id!r}: no candidates")
    name = design.name
    if name in ("random", "label-swap"):
        base = [(o.t, o.key, o.positions) for o in presented_orders(query_id, k, int(design.M), seed)]
    else:
        made = _pinned(query_id, k, design, seed) if name == "pinned" else _sweep(query_id, k, design, seed)
        base = [(t, t, positions) for t, positions in enumerate(made)]
    orders = []
    by_position = tuple(design.labels[:k]) if k <= len(design.labels) else ()
    for t, key, positions in base:
        labels = by_position
        fields: dict[str, Any] = {"design": name}
        if name == "label-swap":
            if k > len(design.labels):
                raise InvariRankError(
                    f"query {query_id!r}: K = {k} candidates but only {len(design.labels)} labels to permute"
                )
            perm = rng_for(seed, query_id, "labels", t).permutation(k)
            labels = tuple(design.labels[int(i)] for i in perm)
            fields["labels"] = list(labels)
        orders.append(DesignOrder(t, key, tuple(positions), labels, fields))
    return orders


def pinned_field(design: Design, item_ids: Sequence[str], k: int) -> dict[str, Any]:
    """The ``pin`` field of a pinned design's rows: the pinned candidate's id and its (non-negative) position."""
    position = design.pin_position if design.pin_position >= 0 else k + design.pin_position
    return {"item": item_ids[design.pin_item], "position": int(position)}
