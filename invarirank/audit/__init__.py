"""Audit any reranker: adapters for outside rerankers, seeded permutation designs, importers of other tools' logs.

Everything here ends in the observations file (:mod:`invarirank.evaluation.observations`), where the project's
own runs end too, so ``invarirank evaluate`` measures an outside reranker exactly as it measures the study's. ::

    import invarirank as ir

    def my_reranker(query, presented):              # presented: the Items in the order shown (0-based positions)
        return [item.item_id for item in sorted(presented, key=lambda it: it.title)]   # ranked ids, best first

    rows = ir.audit(ir.audit.from_order(my_reranker, name="by-title"), queries, design="random", M=20, seed=42)
    metrics = ir.evaluate(rows)                      # PPI, GPI, LOC, exposure, HR/nDCG ...

``invarirank.audit`` is both this package and the function :func:`~invarirank.audit.driver.audit` (the module is
callable), so ``ir.audit(reranker, queries, ...)`` and ``ir.audit.from_scores(f)`` both read as written.

* the interface and adapters (:mod:`.rerankers`): :class:`Reranker`, :class:`Presentation`, :class:`Ranking`,
  :func:`from_order`, :func:`from_scores` (single or batched callables), :func:`from_scorer` (the project's
  scorers with any registered method), :func:`served` (a model behind an OpenAI-compatible server, by label
  log-probs or by a generated RankGPT ranking: :mod:`.served_model`);
* the designs (:mod:`.designs`): :data:`DESIGNS` = random, pinned, sweep, label-swap; :func:`design_orders`;
* :func:`audit` (rows) and :func:`rerank` (one order you give); :func:`write_audit_run` (a run folder);
* importers and the TREC writer: :func:`write_trec_run`, :func:`read_trec_run` (:mod:`.trec`),
  :func:`read_rank_llm` (:mod:`.rank_llm`), :func:`read_authors` (:mod:`.authors`).

No model code lives here: a reranker is whatever answers :meth:`Reranker.rerank`.

Stability: full (any reranker over a seeded permutation design → observation rows; also the subpackage of its
adapters, designs and importers).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from .designs import DEFAULT_LABELS, DESIGNS, Design, design_orders
from .driver import audit, repair_totals, rerank
from .rerankers import REPAIR_KINDS, Presentation, Ranking, Reranker, from_order, from_scorer, from_scores

__all__ = [
    "from_order",
    "from_scores",
    "from_scorer",
    "served",
    "Reranker",
    "Presentation",
    "Ranking",
    "Design",
    "DESIGNS",
    "write_trec_run",
    "read_trec_run",
    "read_rank_llm",
    "read_authors",
]

if TYPE_CHECKING:
    from ._run_folder import write_audit_run
    from .authors import read_authors
    from .rank_llm import read_rank_llm
    from .served_model import served
    from .trec import read_trec_run, write_trec_run

_LAZY = {
    "write_audit_run": ("invarirank.audit._run_folder", "write_audit_run"),
    "write_trec_run": ("invarirank.audit.trec", "write_trec_run"),
    "read_trec_run": ("invarirank.audit.trec", "read_trec_run"),
    "read_rank_llm": ("invarirank.audit.rank_llm", "read_rank_llm"),
    "read_authors": ("invarirank.audit.authors", "read_authors"),
    "served": ("invarirank.audit.served_model", "served"),
}


class _CallableModule(types.ModuleType):
    """This package, callable: ``invarirank.audit(...)`` is :func:`audit` (see the module docstring)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return audit(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in _LAZY:
            import importlib

            module, attr = _LAZY[name]
            value = getattr(importlib.import_module(module), attr)
            setattr(self, name, value)
            return value
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")


sys.modules[__name__].__class__ = _CallableModule
