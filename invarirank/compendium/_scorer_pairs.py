"""The span-vs-choice scorer comparison: runs of the reference scorer and another real scorer on the same data set,
model and K, which grid holds such a pair, and the table that sets them side by side. Every value is read from a
run's ``metrics.json`` (cells as in :mod:`invarirank.compendium._tables`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..store import Run
from ._labels import (
    METHODS,
    REFERENCE_SCORER,
    RUN_METRICS,
    dataset_label,
    method_label,
    model_label,
    setting_caption,
)
from ._tables import drop_constant_levels, metric_cells, metrics_frame, with_caption


def _scorer_pairs(runs: Sequence[Run]) -> list[list[Run]]:
    """Per (dataset, model, K) of ``runs``: the :data:`~invarirank.compendium._labels.REFERENCE_SCORER` run then
    every other real scorer's run, where there is at least one of each."""
    groups: dict[tuple, dict[str, Run]] = {}
    for r in runs:
        groups.setdefault((r.dataset, r.model, r.K), {})[r.scorer] = r
    pairs = []
    for by in groups.values():
        others = sorted(s for s in by if s not in (REFERENCE_SCORER, "simulated"))
        if REFERENCE_SCORER in by and others:
            pairs.append([by[REFERENCE_SCORER], *(by[s] for s in others)])
    return pairs


def scorer_pair_grid(runs: Sequence[Run], grids: Sequence[str]) -> str | None:
    """The first of ``grids`` whose runs hold a pair :func:`scorer_comparison` shows (span and another real scorer
    on the same data set, model and K), or None: the results page takes its span-vs-choice section from the grid it
    shows, else from the next grid that has one."""
    return next((g for g in grids if _scorer_pairs([r for r in runs if r.grid == g])), None)


def choice_and_span(runs: Sequence[Run], k: int | None = None) -> tuple[Run | None, Run | None]:
    """``(choice, span)``: a choice-scorer run of ``runs`` and the span run on its data set, model and K, from the
    pair at list length ``k`` when there is one, else the first pair; ``(None, None)`` without a pair."""
    pairs = sorted(_scorer_pairs(runs), key=lambda pair: pair[0].K != k)
    for pair in pairs:
        choice = next((r for r in pair if r.scorer == "choice"), None)
        if choice is not None:
            return choice, pair[0]
    return None, None


def scorer_comparison(
    runs: Sequence[Run], metrics: Sequence[str] = RUN_METRICS, digits: int = 3, styled: bool = True
) -> Any | None:
    """The :data:`~invarirank.compendium._labels.REFERENCE_SCORER` (span) beside every other real scorer (e.g.
    choice) on the same (dataset, model, K), methods in common; ``None`` when the runs hold no such pair."""
    records = []
    used = []
    for pair in _scorer_pairs(runs):
        dataset, model, K = pair[0].dataset, pair[0].model, pair[0].K
        used += pair
        common = [m for m in METHODS if all(m in r.methods for r in pair)]
        for method in common:
            for run in pair:
                frame = metrics_frame([run], metrics)
                rec = {
                    "dataset": dataset_label(dataset),
                    "model": model_label(model),
                    "K": K,
                    "method": method_label(method),
                    "scorer": run.scorer,
                    "queries": run.n_queries,
                    "M": run.M,
                }
                rec.update(metric_cells(frame[frame.method == method], metrics, digits, styled))
                records.append(rec)
    if not records:
        return None
    df = drop_constant_levels(
        pd.DataFrame.from_records(records).set_index(["dataset", "model", "K", "M", "queries", "method", "scorer"])
    )  # the caption states the constant ones
    caption = f"Span vs choice scorer: {setting_caption(used)}. Value [95% bootstrap interval over queries]."
    return with_caption(df, caption) if styled else df
