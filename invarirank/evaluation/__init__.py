"""Evaluation core: observations file → effectiveness, preference consistency, exposure (the book's metrics chapter).

Torch-free and light (numpy only; pandas/pyarrow are imported only for DataFrames and Parquet), so
``invarirank evaluate`` starts fast and works on logs from any reranker.

Public API:

- :func:`read_observations` / :func:`write_observations` — the observations file (schema in
  :mod:`invarirank.evaluation.observations`): JSONL, JSONL.gz or Parquet, validated with ``FILE:LINE`` errors.
- :func:`evaluate` — observations (path, DataFrame or list of dicts) → the ``metrics.json`` dictionary
  (shape in :mod:`invarirank.evaluation.engine`).
- :func:`format_table` — a readable table of that dictionary; :func:`format_comparisons` — its paired comparisons
  and claim verdicts.
- paired comparisons of methods (:mod:`._comparisons`): :func:`compare_methods` on :class:`PerQuery` values (one
  per method; :func:`per_query_from_block` makes them from a ``metrics.json`` method block), :func:`comparison`
  (one pair, either orientation), :func:`sign_flip_p`, :func:`queries_for_power`.
- the paper's claims (:mod:`._claims`): :data:`PAPER_CLAIMS`, :class:`Claim`, :func:`judge_claim`,
  :func:`judge_claims`, :func:`holm`.
- per-metric functions on plain lists (and on rows as dicts / a DataFrame with ``input``/``output``):
  :func:`hit_rate`, :func:`ndcg`, :func:`recall`, :func:`reciprocal_rank` (one ranking);
  :func:`ppi`, :func:`gpi`, :func:`gpi_exact`, :func:`loc`, :func:`win_counts` (one query's rows);
  :func:`exposure` (rows of any queries).
- :func:`sister_measures` — mean pairwise Spearman, top-k Jaccard, first-place agreement, the relevant items' rank
  mean and spread, the order-flip rate and the share of intransitive triads (:mod:`.sister`), on request: they are
  not part of ``metrics.json``.
"""

from ._claims import PAPER_CLAIMS, Claim, holm, judge_claim, judge_claims
from ._comparisons import PerQuery, compare_methods, comparison, per_query_from_block, queries_for_power, sign_flip_p
from ._consistency import gpi, loc, ppi, win_counts
from ._effectiveness import hit_rate, ndcg, recall, reciprocal_rank
from ._kemeny import gpi_exact
from ._observation_rows import SCHEMA_VERSION
from ._positional_exposure import exposure
from .engine import METRICS_SCHEMA_VERSION, check_metrics_version, evaluate
from .observations import read_observations, write_observations
from .report import format_comparisons, format_table
from .sister import sister_measures

__all__ = ["evaluate", "read_observations", "write_observations", "format_table", "sister_measures"]
