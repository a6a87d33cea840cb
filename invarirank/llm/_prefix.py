"""Shared-prefix reuse: the history part of a query's prompt is computed once, its key/value cache reused.

Every order of a query starts with the same ids (BOS + instruction + history), so their key/value states are the
same in every pass. :class:`PrefixStore` computes them once per distinct prefix (an LRU of a few entries: methods
score one query at a time) and hands each pass a *fork*: a new ``DynamicCache`` whose layers are shallow copies
that point at the stored prefix tensors. A forward pass extends a layer with ``torch.cat`` and rebinds the new
tensor on the fork only, so the stored prefix is never mutated (no copying, no cropping needed) — this is checked
for every layer class before the fork is handed out: only ``DynamicLayer`` and ``DynamicSlidingWindowLayer``
(Gemma 2/3, Mistral sliding windows) are forked. Any other cache layer type disables prefix reuse for that scorer
(with a warning; scores stay exact, only slower).

Sliding-window layers keep the last ``window - 1`` prefix positions plus their cumulative length, which is
exactly what a continued forward needs; the tests compare prefix-reused and full forwards on a tiny Gemma 3 with a
window far shorter than the prefix and on the real Gemma 3 270M (window 512) with a longer prompt.
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any


class UnsupportedCache(RuntimeError):
    """The model's cache layers cannot be forked safely."""


def _forkable_types() -> tuple[type, ...]:
    from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

    return (DynamicLayer, DynamicSlidingWindowLayer)


def new_cache(model: Any) -> Any:
    """An empty ``DynamicCache`` laid out for ``model`` (sliding layers where its config has them)."""
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers without the config argument
        return DynamicCache()


def fork_cache(cache: Any, batch: int = 1) -> Any:
    """A cache that starts from ``cache``'s states but whose updates never touch ``cache``.

    ``batch > 1`` expands the (batch 1) prefix states along the batch dimension (a view; the first update
    materialises it with ``torch.cat``).
    """
    allowed = _forkable_types()
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise UnsupportedCache(f"{type(cache).__name__} has no layers")
    new_layers = []
    for layer in layers:
        if type(layer) not in allowed:
            raise UnsupportedCache(f"cache layer {type(layer).__name__} is not forkable")
        twin = copy.copy(layer)  # shares the key/value tensors; update() rebinds, never writes in place
        if batch > 1 and getattr(twin, "is_initialized", False) and twin.keys is not None and twin.keys.numel():
            twin.keys = twin.keys.expand(batch, *twin.keys.shape[1:])
            twin.values = twin.values.expand(batch, *twin.values.shape[1:])
        new_layers.append(twin)
    fork = copy.copy(cache)
    fork.layers = new_layers
    return fork


class PrefixStore:
    """LRU of computed prefixes: ids → (cache, length). ``compute(ids) -> cache`` runs the model."""

    def __init__(self, size: int = 2):
        self.size = max(1, int(size))
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()

    @staticmethod
    def _key(ids: Sequence[int]) -> str:
        return hashlib.sha256((",".join(map(str, ids))).encode()).hexdigest()

    def get(self, ids: Sequence[int]) -> Any | None:
        key = self._key(ids)
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        return hit[0]

    def put(self, ids: Sequence[int], cache: Any) -> None:
        key = self._key(ids)
        self._items[key] = (cache, len(ids))
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()
