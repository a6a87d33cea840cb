"""The titles of the book's executed pages (the sidebar shows them), in display names.

The grid layer that executes the pages knows run and data-set ids only (:class:`invarirank.grid._book_build.
PageTitles`); the command line hands it :func:`run_page_title` for the run pages and
:func:`invarirank.compendium._labels.dataset_label` for the data pages' names (the grid's
:func:`~invarirank.grid._book_build.data_page_title` writes the rest). A run is given as any object with the settings
of :class:`invarirank.runner.RunConfig` (this layer does not import the runner).
"""

from __future__ import annotations

from typing import Any

from ..evaluation._comparisons import ALPHA
from ._labels import dataset_label, model_label
from ._verdicts import smallest_p


def run_page_title(config: Any) -> str:
    """Model, K, scorer, then data set, queries and M, e.g. ``SmolLM2-135M at K = 10, span scorer (MovieLens-100K,
    40 queries, M = 20)``. When the queries were sampled among those kept at another K (``sample_k``), that K
    too (``…, 40 queries kept at K = 5, M = 20)``; "× M" read as "K = 5 × M"): it tells apart two grids' runs at
    one K. A run of the first N of its sampled users (``first_queries``) says so (``the first 20 of 40 queries kept
    at K = 15``), and its smoke test counts the N it reranks. "Smoke run: " comes first when the run's queries are
    too few for the paired test to resolve any claim (its smallest p-value is not below 0.05) or its scorer is the
    simulated one."""
    n = config.n_queries
    queries = "all queries" if n is None else f"{n:,} queries"
    first = getattr(config, "first_queries", None)
    if first is not None:  # a prefix of a larger sample's users: the count reranked, and of what
        queries = f"the first {first:,} of {queries}" if n is not None and first < n else f"{first:,} queries"
    sample_k = getattr(config, "sample_k", None)
    if sample_k is not None and sample_k != config.effective_k:
        queries += f" kept at K = {sample_k}"
    title = (
        f"{model_label(config.model_name)} at K = {config.effective_k}, {config.scorer} scorer "
        f"({dataset_label(config.data_label)}, {queries}, M = {config.M})"
    )
    reranked = first if first is not None else n
    smoke = config.scorer == "simulated" or (reranked is not None and smallest_p(reranked) >= ALPHA)
    return f"Smoke run: {title}" if smoke else title
