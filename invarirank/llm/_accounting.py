"""Work accounting of the real scorers: the counters in ``scorer.stats``, the attention work of a forward pass and
the model FLOPs the benchmarks report from them (imports no torch).

Counters (:data:`WORK_COUNTERS`): ``calls`` (requests scored), ``cache_hits`` (of which ``disk_hits``: answered
by the persistent pass cache), ``forward_passes`` (model forwards over suffixes or full prompts),
``prefix_passes``, ``prefix_reuses``, ``tokens_computed`` (all token positions run through the model, prefixes
and padding included), ``prefix_tokens``, ``positions_projected`` (rows of the output projection),
``attention_context`` (sum over computed positions and layers of the number of keys attended; sliding-window
layers count at most their window) and ``forward_seconds``.

:func:`model_flops` turns counters into model FLOPs with the parameter counts of :func:`flop_counts`:
``2 · non-embedding parameters · tokens_computed + 2 · output-projection parameters · positions_projected +
4 · hidden size · attention_context``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the counters of ``scorer.stats`` of a real scorer, in the order they are reported
WORK_COUNTERS = (
    "calls",
    "cache_hits",
    "disk_hits",
    "forward_passes",
    "prefix_passes",
    "prefix_reuses",
    "tokens_computed",
    "prefix_tokens",
    "positions_projected",
    "attention_context",
    "forward_seconds",
)


def new_counters() -> dict[str, float]:
    """All :data:`WORK_COUNTERS` at zero (``forward_seconds`` a float, the rest integers)."""
    return {name: (0.0 if name == "forward_seconds" else 0) for name in WORK_COUNTERS}


@dataclass(frozen=True)
class AttentionShape:
    """The layers of a model as far as attention work goes: ``full`` full-attention layers, ``sliding`` layers
    with a window of ``window`` positions, ``hidden_size``, ``layers`` (all of them)."""

    full: int
    sliding: int
    window: int
    hidden_size: int
    layers: int

    def context(self, start: int, n: int) -> int:
        """Sum over the positions ``start .. start + n - 1`` (0-based) and the layers of the number of keys each
        position attends to (itself and everything before it; at most ``window`` on a sliding layer)."""
        if n <= 0:
            return 0
        first, last = start + 1, start + n  # context sizes of the first and the last position
        total = self.full * (first + last) * n // 2
        if self.sliding:
            ctx = np.minimum(np.arange(first, last + 1, dtype=np.int64), self.window)
            total += self.sliding * int(ctx.sum())
        return int(total)


def attention_shape(config: Any) -> AttentionShape:
    """The :class:`AttentionShape` of a transformers model config (its text config where it has one):
    ``layer_types`` where the config lists them, else every layer sliding when ``sliding_window`` is set."""
    cfg = config.get_text_config() if hasattr(config, "get_text_config") else config
    n_layers = int(getattr(cfg, "num_hidden_layers", 0) or 0)
    window = getattr(cfg, "sliding_window", None)
    layer_types = getattr(cfg, "layer_types", None)
    if layer_types is None:
        layer_types = ["sliding_attention" if window else "full_attention"] * n_layers
    full = sum(1 for t in layer_types if t not in ("sliding_attention", "chunked_attention"))
    return AttentionShape(
        full=full,
        sliding=len(layer_types) - full,
        window=int(window) if window else 0,
        hidden_size=int(getattr(cfg, "hidden_size", 0) or 0),
        layers=n_layers,
    )


def flop_counts(model: Any, shape: AttentionShape) -> dict[str, int]:
    """Parameter counts for :func:`model_flops`: non-embedding parameters (every parameter except the input
    embedding and the output projection), output-projection parameters, layers and hidden size."""
    emb = model.get_input_embeddings().weight
    out = model.get_output_embeddings()
    out_w = out.weight if out is not None else emb
    seen = {id(p): p.numel() for p in model.parameters()}
    total = sum(seen.values())
    non_emb = total - emb.numel() - (out_w.numel() if id(out_w) != id(emb) else 0)
    return {
        "non_embedding_params": int(non_emb),
        "output_projection_params": int(out_w.numel()),
        "layers": shape.layers,
        "hidden_size": shape.hidden_size,
    }


def model_flops(stats: Mapping[str, Any], counts: Mapping[str, int]) -> float:
    """Model FLOPs of the work counted in ``stats`` (see the module docstring) with ``counts`` from
    :func:`flop_counts` (``scorer.model_flop_counts()``)."""
    return (
        2 * counts["non_embedding_params"] * stats["tokens_computed"]
        + 2 * counts["output_projection_params"] * stats["positions_projected"]
        + 4 * counts["hidden_size"] * stats["attention_context"]
    )
