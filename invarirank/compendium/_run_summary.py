"""Every finished run in one table: a row per (grid, run, method), so that any run a user adds — re-executed with
papermill or computed by ``invarirank grid`` — has its numbers in the book without a list edited by hand.

Values are the runs' overall metrics as ``metrics.json`` holds them (no intervals: each run's own page gives
them); higher is better for HR@5, nDCG@5 and LOC, lower for PPI and GPI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..errors import InvariRankError
from ..store import Run
from ._labels import TABLE1_METRICS, dataset_label, method_label, metric_label, model_label
from ._tables import drop_constant_levels, fold_columns, with_caption

#: the columns that describe a run's setting (folded into the caption where every row shares them)
_SETTINGS = ("data set", "model, scorer", "K", "M", "queries")


def runs_summary(runs: Sequence[Run], *, grids: Sequence[str] = (), digits: int = 3, styled: bool = True) -> Any:
    """One row per (grid, run, method) of ``runs``: the run's data set, model and scorer, K, M and queries, then
    HR@5, nDCG@5, PPI, GPI and LOC. Grids in the order of ``grids`` (the book's priority order; grids not named
    there after them, by name), runs by K then name, methods in each run's order."""
    if not runs:
        raise InvariRankError("runs_summary: no finished runs")
    rank = {g: i for i, g in enumerate(grids)}
    ordered = sorted(runs, key=lambda r: (rank.get(r.grid, len(rank)), r.grid, r.K, r.name))
    records = []
    for run in ordered:
        for method in run.methods:
            overall = run.metrics["methods"][method]["overall"]
            record: dict[str, Any] = {
                "grid": run.grid,
                "run": run.name,
                "method": method_label(method),
                "data set": dataset_label(run.dataset),
                "model, scorer": f"{model_label(run.model)}, {run.scorer}",
                "K": run.K,
                "M": run.M,
                "queries": run.n_queries,
            }
            for metric in TABLE1_METRICS:
                value = overall.get(metric)
                record[metric_label(metric)] = "–" if value is None else f"{value:.{digits}f}"
            records.append(record)
    df = pd.DataFrame.from_records(records).set_index(["grid", "run", "method"])
    # the settings every row shares go to the caption, so that the table fits the page's column
    grids_shown = sorted({r.grid for r in ordered})
    df = drop_constant_levels(df)
    settings, folded = fold_columns(df[list(_SETTINGS)])
    df = pd.concat([settings, df.drop(columns=list(_SETTINGS))], axis=1)
    where = f" of grid {grids_shown[0]}" if len(grids_shown) == 1 else f" of {len(grids_shown)} grids"
    caption = (
        f"Every finished run ({len(ordered)} runs{where}), one row per method: overall values over the run's "
        f"queries (its own page gives the 95% intervals). Higher is better for HR@5, nDCG@5 and LOC, lower for "
        f"PPI and GPI.{' ' + folded if folded else ''}"
    )
    if not styled:
        return df
    styler = with_caption(df, caption)
    if "run" in df.index.names:  # long run names may break after a hyphen (a zero-width space), so the table fits
        styler = styler.format_index(lambda name: str(name).replace("-", "-\u200b"), axis=0, level="run")
    return styler
