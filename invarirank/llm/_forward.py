"""The torch calls of the real scorers: one forward pass over a prefix, over a batch of suffixes (of one prefix or
of several), or over a whole prompt, asking the model for logits only where a score reads them.

:class:`Forwards` wraps a :class:`~invarirank.llm.models.LoadedModel` and counts the work of every pass in a
counters dict (:mod:`invarirank.llm._accounting`). Its methods return, per pass, the logits at that pass's
``needed`` positions (a ``(len(needed), vocab)`` tensor in the model's dtype, positions in ascending order) and
the number of positions computed; the scorer reduces them to scores.

Logits only where needed: ``logits_to_keep`` with a position tensor makes the output projection run on those rows
only. In a batch each row needs its own positions: model code that slices through transformers'
``slice_logits_to_keep`` (transformers 5.24 has it) takes a ``(rows, width)`` boolean mask; older model code
(transformers 5.17 indexes ``hidden_states[:, logits_to_keep, :]``) takes only 1-D positions kept for every row,
so the union of the rows' positions is projected for each row and each row's own positions are read out of it
(more projected rows, the same logits): :meth:`Forwards.batch_logits`.

Suffix batches are right-padded and need no attention mask: with causal attention a real token never sees the
padding after it. Rows of *different* prefixes (:meth:`Forwards.mixed`) get their prefix key/values left-padded
to the longest, masked, and their own positions.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

from ._accounting import attention_shape
from ._prefix import UnsupportedCache, fork_cache, new_cache


class Forwards:
    """Forward passes on ``loaded`` (a :class:`~invarirank.llm.models.LoadedModel`), counted in ``counters()``
    (a callable returning the live counters dict, so that the scorer may replace it). ``logits_mode``:
    ``"needed"`` (project only the positions read) or ``"all"`` (project every position; forced where the model's
    forward has no ``logits_to_keep``)."""

    def __init__(self, loaded: Any, counters: Callable[[], dict[str, float]], logits_mode: str = "needed"):
        self.loaded = loaded
        self._counters = counters
        model = loaded.model
        params = inspect.signature(model.forward).parameters
        self.cache_arg = "cache" if "cache" in params else "past_key_values"
        self.has_logits_to_keep = "logits_to_keep" in params
        self.logits_mode = logits_mode if self.has_logits_to_keep else "all"
        self.mask_rows = getattr(sys.modules.get(type(model).__module__), "slice_logits_to_keep", None) is not None
        self.shape = attention_shape(model.config)

    @property
    def packable(self) -> bool:
        """Whether rows of different prefixes may share a batch: plain full-attention layers only."""
        return self.shape.sliding == 0

    def run(self, **kwargs: Any) -> Any:
        """One model call under ``inference_mode`` (timed into ``forward_seconds``)."""
        import torch

        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.loaded.model(**kwargs)
        if self.loaded.device.type == "cuda":
            torch.cuda.synchronize(self.loaded.device)
        self._counters()["forward_seconds"] += time.perf_counter() - t0
        return out

    def _count(self, n: int, start: int, projected: int, batch: int = 1) -> None:
        stats = self._counters()
        stats["forward_passes"] += 1
        stats["tokens_computed"] += n
        stats["positions_projected"] += projected
        stats["attention_context"] += batch * self.shape.context(start, n // batch)

    def pad_id(self) -> int:
        """The id suffixes are right-padded with: the tokenizer's pad id, else its EOS id, else 0."""
        tok = self.loaded.tokenizer
        for cand in (getattr(tok, "pad_token_id", None), getattr(tok, "eos_token_id", None)):
            if isinstance(cand, int):
                return cand
        return 0

    def prefix(self, prefix: tuple[int, ...]) -> Any:
        """The key/value cache of ``prefix`` (one forward; raises :class:`UnsupportedCache` for layer types that
        cannot be forked)."""
        import torch

        cache = new_cache(self.loaded.model)
        ids = torch.tensor([list(prefix)], dtype=torch.long, device=self.loaded.device)
        kwargs: dict[str, Any] = {"input_ids": ids, self.cache_arg: cache, "use_cache": True}
        if self.has_logits_to_keep:
            kwargs["logits_to_keep"] = 1
        self.run(**kwargs)
        n = len(prefix)
        stats = self._counters()
        stats["prefix_passes"] += 1
        stats["prefix_tokens"] += n
        stats["tokens_computed"] += n
        stats["positions_projected"] += 1 if self.has_logits_to_keep else n
        stats["attention_context"] += self.shape.context(0, n)
        fork_cache(cache)  # raises UnsupportedCache early for layer types that cannot be forked
        return cache

    def batch_logits(self, kwargs: dict[str, Any], keep: Any) -> tuple[Any, int]:
        """Run one batched forward whose row ``b`` needs the logits at the suffix positions ``keep[b]`` (a
        (rows, width) boolean mask on the CPU); returns those logits, row after row and each row's positions in
        ascending order (``(needed positions, vocab)``), and the number of rows the output projection ran on
        (see the module docstring for the two ways of asking)."""
        dev = self.loaded.device
        rows, width = keep.shape
        if self.logits_mode != "needed":
            out = self.run(**kwargs)
            return out.logits[keep.to(out.logits.device)], rows * width
        if self.mask_rows:
            kwargs["logits_to_keep"] = keep.to(dev)
            logits = self.run(**kwargs).logits
            if logits.dim() == 3:  # some models return (1, rows, vocab) for a boolean selection
                logits = logits.reshape(-1, logits.shape[-1])
            return logits, int(keep.sum())
        union = keep.any(dim=0).nonzero().flatten()
        kwargs["logits_to_keep"] = union.to(dev)
        logits = self.run(**kwargs).logits  # (rows, len(union), vocab)
        return logits[keep[:, union].to(logits.device)], rows * len(union)

    @staticmethod
    def _split(logits: Any, plans: list[Any], width: int) -> list[tuple[Any, int]]:
        res, row = [], 0
        for pl in plans:
            k = len(pl.needed)
            res.append((logits[row : row + k], width))
            row += k
        return res

    def suffixes(self, cache: Any, plans: list[Any]) -> list[tuple[Any, int]]:
        """One forward over the suffixes of ``plans`` (all of the prefix whose key/values are ``cache``, which is
        forked, not changed): per plan its needed logits and the positions computed for it."""
        import torch

        dev = self.loaded.device
        p = len(plans[0].prefix)
        if len(plans) == 1:
            plan = plans[0]
            ids = torch.tensor([plan.suffix], dtype=torch.long, device=dev)
            kwargs: dict[str, Any] = {"input_ids": ids, self.cache_arg: fork_cache(cache), "use_cache": True}
            if self.logits_mode == "needed":
                kwargs["logits_to_keep"] = torch.tensor(plan.needed, dtype=torch.long, device=dev)
            out = self.run(**kwargs)
            logits = out.logits[0]
            if self.logits_mode == "all":
                logits = logits[torch.tensor(plan.needed, dtype=torch.long, device=dev)]
            n = len(plan.suffix)
            self._count(n, p, len(plan.needed) if self.logits_mode == "needed" else n)
            return [(logits, n)]
        width = max(len(pl.suffix) for pl in plans)
        ids = torch.full((len(plans), width), self.pad_id(), dtype=torch.long)
        mask = torch.zeros((len(plans), width), dtype=torch.bool)
        for b, pl in enumerate(plans):
            ids[b, : len(pl.suffix)] = torch.tensor(pl.suffix, dtype=torch.long)
            mask[b, pl.needed] = True
        kwargs = {"input_ids": ids.to(dev), self.cache_arg: fork_cache(cache, batch=len(plans)), "use_cache": True}
        logits, projected = self.batch_logits(kwargs, mask)
        self._count(len(plans) * width, p, projected, batch=len(plans))
        return self._split(logits, plans, width)

    def mixed(self, plans: list[Any], prefixes: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """One forward over suffixes of *different* prefixes (``prefixes[b]``: row ``b``'s prefix cache and
        length): each row's prefix key/values left-padded to the longest, masked, and the row's own positions
        (prefix length + offset)."""
        import torch

        dev = self.loaded.device
        longest = max(n for _, n in prefixes)
        width = max(len(pl.suffix) for pl in plans)
        batch = len(plans)
        cache = new_cache(self.loaded.model)
        layers = [getattr(c, "layers", None) for c, _ in prefixes]
        if any(ls is None for ls in layers):
            raise UnsupportedCache("prefix caches without layers")
        for li in range(len(layers[0])):
            keys, values = [], []
            for ls, (_, n) in zip(layers, prefixes):
                k, v = ls[li].keys, ls[li].values
                pad = longest - n
                if pad:
                    k = torch.cat([k.new_zeros((*k.shape[:2], pad, k.shape[3])), k], dim=2)
                    v = torch.cat([v.new_zeros((*v.shape[:2], pad, v.shape[3])), v], dim=2)
                keys.append(k)
                values.append(v)
            cache.update(torch.cat(keys), torch.cat(values), li)
        ids = torch.full((batch, width), self.pad_id(), dtype=torch.long)
        attn = torch.zeros((batch, longest + width), dtype=torch.long)
        pos = torch.zeros((batch, width), dtype=torch.long)
        keep = torch.zeros((batch, width), dtype=torch.bool)
        for b, (pl, (_, n)) in enumerate(zip(plans, prefixes)):
            ids[b, : len(pl.suffix)] = torch.tensor(pl.suffix, dtype=torch.long)
            attn[b, longest - n : longest + len(pl.suffix)] = 1
            pos[b] = torch.arange(n, n + width)
            keep[b, pl.needed] = True
        kwargs: dict[str, Any] = {
            "input_ids": ids.to(dev),
            "attention_mask": attn.to(dev),
            "position_ids": pos.to(dev),
            self.cache_arg: cache,
            "use_cache": True,
        }
        logits, projected = self.batch_logits(kwargs, keep)
        stats = self._counters()
        stats["forward_passes"] += 1
        stats["tokens_computed"] += batch * width
        stats["positions_projected"] += projected
        stats["attention_context"] += sum(self.shape.context(n, width) for _, n in prefixes)
        return self._split(logits, plans, width)

    def full(self, plan: Any, *, tail: bool) -> tuple[Any, int]:
        """One forward over the whole prompt without any cache (with the plan's ``tail`` when ``tail``): its
        needed logits and the positions computed."""
        import torch

        dev = self.loaded.device
        full = list(plan.prefix) + plan.suffix + (plan.tail if tail else [])
        ids = torch.tensor([full], dtype=torch.long, device=dev)
        needed = torch.tensor([len(plan.prefix) + q for q in plan.needed], dtype=torch.long, device=dev)
        kwargs: dict[str, Any] = {"input_ids": ids, "use_cache": False}
        if self.logits_mode == "needed":
            kwargs["logits_to_keep"] = needed
        out = self.run(**kwargs)
        logits = out.logits[0]
        if self.logits_mode == "all":
            logits = logits[needed]
        n = len(full)
        self._count(n, 0, len(plan.needed) if self.logits_mode == "needed" else n)
        return logits, n
