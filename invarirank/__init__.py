"""invarirank — position bias in listwise LLM reranking for recommendation.

The front door: a handful of names that take a candidates file to metrics. ::

    import invarirank as ir

    queries = ir.read_candidates("candidates.jsonl")          # the first stage's top-K per query
    scorer = ir.make_scorer("simulated")                      # or "span" / "choice" on a Hugging Face model
    rows = [row for q in queries for row in ir.rerank_query(scorer, q, M=20, seed=42)]
    ir.write_observations("observations.jsonl", rows)         # the public contract between running and measuring
    metrics = ir.evaluate(rows)                               # == ir.evaluate("observations.jsonl")

* :func:`read_candidates` — a candidates file → :class:`~invarirank.types.Query` objects;
* :func:`make_scorer` — a scorer by kind (:data:`invarirank.llm.SCORER_KINDS`);
* :data:`METHODS` — the reranking methods, in the paper's order;
* :func:`rerank_query` — every method on M presented orders of one query → observation rows;
* :func:`evaluate` — observations (a file, a DataFrame or rows) → the ``metrics.json`` dictionary;
* :func:`read_observations` / :func:`write_observations` — the observations file;
* :class:`Query`, :class:`Item`, :class:`HistoryEntry` — your own candidates and history (a rating is optional);
* :func:`audit` — any reranker (a callable returning ids or scores, a project scorer) over a seeded permutation
  design → observation rows; :func:`rerank` — one ranking of the order you give (:mod:`invarirank.audit`);
* :class:`InvariRankError` — the one error bad input raises (a single line naming the file, field or setting).

Stages (each hands the next a plain, documented artefact): ``data`` → prepared tables and queries; ``retrieval``
→ candidates; ``llm`` (scorers) and ``methods`` → observations; ``evaluation`` → metrics. Importing
``invarirank`` imports nothing heavy: each name above loads its module on first use, and the core never imports
torch or transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Stability: full (the package version).
__version__ = "0.2.0"

__all__ = [
    "read_candidates",
    "make_scorer",
    "METHODS",
    "rerank_query",
    "evaluate",
    "read_observations",
    "write_observations",
    "InvariRankError",
    "Query",
    "Item",
    "HistoryEntry",
    "audit",
    "rerank",
    "__version__",
]

#: public name → (module, attribute): loaded on first use, so ``import invarirank`` stays light
_FRONT_DOOR = {
    "read_candidates": ("invarirank.candidates", "read_candidates"),
    "make_scorer": ("invarirank.llm.factory", "make_scorer"),
    "METHODS": ("invarirank.methods.registry", "METHODS"),
    "rerank_query": ("invarirank.runner.rerank", "rerank_query"),
    "evaluate": ("invarirank.evaluation.engine", "evaluate"),
    "read_observations": ("invarirank.evaluation.observations", "read_observations"),
    "write_observations": ("invarirank.evaluation.observations", "write_observations"),
    "InvariRankError": ("invarirank.errors", "InvariRankError"),
    "Query": ("invarirank.types", "Query"),
    "Item": ("invarirank.types", "Item"),
    "HistoryEntry": ("invarirank.types", "HistoryEntry"),
    "audit": ("invarirank.audit", None),  # the subpackage, callable: ir.audit(...) and ir.audit.from_order(...)
    "rerank": ("invarirank.audit.driver", "rerank"),
}

if TYPE_CHECKING:
    from . import audit
    from .audit.driver import rerank
    from .candidates import read_candidates
    from .errors import InvariRankError
    from .evaluation.engine import evaluate
    from .evaluation.observations import read_observations, write_observations
    from .llm.factory import make_scorer
    from .methods.registry import METHODS
    from .runner.rerank import rerank_query
    from .types import HistoryEntry, Item, Query


def __getattr__(name: str) -> Any:
    if name in _FRONT_DOOR:
        module, attr = _FRONT_DOOR[name]
        value = importlib.import_module(module) if attr is None else getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
