"""The missing passes of a real scorer, computed: what one pass computes (:class:`PassPlan`), and the batch
schedule, prefix caches, forwards and reduction that turn the plans a pass cache could not answer into scores
(:class:`MissingPasses`, the part of :class:`~invarirank.llm._engine.CausalLMScorer` that runs the model; the
engine's module docstring gives the whole path).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._batching import group_by_prefix, packed_batches, per_prefix_batches
from ._prefix import UnsupportedCache


@dataclass
class PassPlan:
    """What one pass computes. Positions in ``needed`` are suffix-relative (0 = first suffix token).

    ``prefix + suffix + tail`` must be the canonical ids of ``text``: ``bos`` (the BOS ids the scorer puts in front,
    part of ``prefix``) followed by ``tokenizer(text, add_special_tokens=False)``;
    :meth:`~invarirank.llm._engine.CausalLMScorer.plan` checks this. ``segments`` names the prompt's parts as
    ``(name, start, end)`` character ranges (0-based, half-open) for error messages.
    """

    text: str
    prefix: tuple[int, ...]
    suffix: list[int]
    tail: list[int]
    needed: list[int]
    bos: tuple[int, ...] = ()
    segments: tuple[tuple[str, int, int], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def full_ids(self) -> list[int]:
        return list(self.prefix) + self.suffix + self.tail

    @property
    def full_length(self) -> int:
        return len(self.prefix) + len(self.suffix) + len(self.tail)


class MissingPasses:
    """The model work of :class:`~invarirank.llm._engine.CausalLMScorer` (a mixin: it reads the scorer's ``forwards``,
    ``vllm``, ``kind``, ``prefix_reuse``, ``max_batch_tokens``, ``batch_size``, ``trim_tail``, ``stats``, ``name``,
    its prefix store ``_prefixes`` and its reduction ``_reduce``)."""

    # attributes of the scorer class this mixes into (set by its constructor)
    forwards: Any
    vllm: Any
    kind: str
    name: str
    prefix_reuse: bool
    prefix_reuse_note: str | None
    max_batch_tokens: int | None
    batch_size: int
    trim_tail: bool
    stats: Any
    _prefixes: Any

    _reduce: Any  # the scorer's reduction of a pass's logits to one score per candidate

    def _compute(self, plans: list[PassPlan]) -> list[tuple[np.ndarray, int]]:
        """(scores, positions computed) of each plan, in order."""
        out: list[tuple[np.ndarray, int] | None] = [None] * len(plans)
        if self.vllm is not None:
            from . import _vllm_backend as vllm_backend

            compute = vllm_backend.span_scores if self.kind == "span" else vllm_backend.choice_scores
            return compute(self.vllm, plans)
        if not self.prefix_reuse:
            return [self._full(plan) for plan in plans]
        groups = group_by_prefix([plan.prefix for plan in plans])
        self._prefixes.size = max(self._prefixes.size, len(groups))  # every query of a window keeps its prefix
        if self.max_batch_tokens is not None and len(groups) > 1 and self.forwards.packable:
            try:
                return self._compute_packed(plans, list(groups.values()))
            except UnsupportedCache as exc:
                self._disable_prefix_reuse(str(exc))
                return [self._full(plan) for plan in plans]
        for chunk in per_prefix_batches(list(groups.values()), self.batch_size):
            if self.prefix_reuse:
                try:
                    cache, prefix_tokens = self._prefix_cache(plans[chunk[0]].prefix)
                    got = self.forwards.suffixes(cache, [plans[i] for i in chunk])
                except UnsupportedCache as exc:
                    self._disable_prefix_reuse(str(exc))
                else:
                    for n, (i, (logits, tokens)) in enumerate(zip(chunk, got)):
                        out[i] = (self._reduce(plans[i], logits.float()), tokens + (prefix_tokens if n == 0 else 0))
                    continue
            for i in chunk:
                out[i] = self._full(plans[i])
        return out  # type: ignore[return-value]

    def _compute_packed(self, plans: list[PassPlan], groups: list[list[int]]) -> list[tuple[np.ndarray, int]]:
        """Rows of all prefixes packed by :func:`~invarirank.llm._batching.packed_batches`; each prefix computed
        once (charged to its first row)."""
        out: list[tuple[np.ndarray, int] | None] = [None] * len(plans)
        prefix_of: dict[int, tuple[Any, int]] = {}
        charge: dict[int, int] = {}
        for idxs in groups:
            prefix = plans[idxs[0]].prefix
            cache, computed = self._prefix_cache(prefix)
            for i in idxs:
                prefix_of[i] = (cache, len(prefix))
            charge[idxs[0]] = computed
        lengths = [len(plan.suffix) for plan in plans]
        for batch in packed_batches(lengths, groups, self.batch_size, int(self.max_batch_tokens or 1)):
            rows = [plans[j] for j in batch]
            got = (
                self.forwards.suffixes(prefix_of[batch[0]][0], rows)
                if len({p.prefix for p in rows}) == 1
                else self.forwards.mixed(rows, [prefix_of[j] for j in batch])
            )
            for j, (logits, tokens) in zip(batch, got):
                out[j] = (self._reduce(plans[j], logits.float()), tokens + charge.get(j, 0))
        return out  # type: ignore[return-value]

    def _full(self, plan: PassPlan) -> tuple[np.ndarray, int]:
        logits, n = self.forwards.full(plan, tail=not self.trim_tail)
        return self._reduce(plan, logits.float()), n

    def _disable_prefix_reuse(self, why: str) -> None:
        self.prefix_reuse = False
        self.prefix_reuse_note = f"prefix reuse disabled: {why}"
        self._prefixes.clear()
        warnings.warn(f"{self.name}: {self.prefix_reuse_note}; falling back to full forward passes", stacklevel=3)

    def _prefix_cache(self, prefix: tuple[int, ...]) -> tuple[Any, int]:
        """The prefix's key/value cache (from the store, or computed and stored) and the positions computed."""
        cache = self._prefixes.get(prefix)
        if cache is not None:
            self.stats["prefix_reuses"] += 1
            return cache, 0
        cache = self.forwards.prefix(prefix)
        self._prefixes.put(prefix, cache)
        return cache, len(prefix)
