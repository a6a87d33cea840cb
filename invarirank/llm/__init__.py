"""Scorers: given a query (history) and a presented candidate list, one score per candidate (higher = preferred).

* ``make_scorer(kind, model=None, *, seed=0, cache_dir=None, **options)`` — kind ``"span"`` (default; see the
  protocol chapter),
  ``"choice"`` or ``"simulated"``.
* real scorers: :mod:`invarirank.llm._span`, :mod:`invarirank.llm._choice` on any Hugging Face causal LM, sharing
  :mod:`invarirank.llm._engine` (pass plans, the persistent pass cache, prefix reuse, dispatch of the missing
  passes); prompts as data in :mod:`invarirank.llm._prompts`.
* by job: :mod:`~invarirank.llm._options` (every scorer's options, declared once), :mod:`~invarirank.llm._batching`
  (batch schedules, pure logic), :mod:`~invarirank.llm._forward` (the torch calls), :mod:`~invarirank.llm._accounting`
  (work counters, FLOPs), :mod:`~invarirank.llm._persistent_cache` (the on-disk pass cache),
  :mod:`~invarirank.llm._prefix` (prefix key/value reuse), :mod:`~invarirank.llm.models` (loading),
  :mod:`~invarirank.llm._gguf` (the embedded models' registry and conversion), :mod:`~invarirank.llm._weights`
  (weight-file checks, identity hashes), :mod:`~invarirank.llm._testing` (tiny models and the scorer contract).

Importing this package does not import torch or transformers: everything heavy loads lazily on first use.
"""

from __future__ import annotations

from typing import Any

from .factory import SCORER_KINDS, SCORER_OPTIONS, make_scorer

__all__ = ["make_scorer"]

_LAZY = {
    "SpanScorer": ("invarirank.llm._span", "SpanScorer"),
    "ChoiceScorer": ("invarirank.llm._choice", "ChoiceScorer"),
    "SimulatedScorer": ("invarirank.llm._simulated", "SimulatedScorer"),
    "load_model": ("invarirank.llm.models", "load_model"),
    "prepare_model": ("invarirank.llm.models", "prepare"),
    "TEMPLATE_VERSION": ("invarirank.llm._prompts", "TEMPLATE_VERSION"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
