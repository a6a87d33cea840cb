"""Method orderings: under each metric, a run's methods best first, and how far two metrics' orderings agree.

"Best" follows :data:`~invarirank.compendium._labels.HIGHER_IS_BETTER` (higher for HR, nDCG and LOC, lower for
PPI, GPI and the exposure deviation); ties keep the paper's order of presentation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..evaluation._agreement import kendall_tau
from ..store import Run
from ._labels import HIGHER_IS_BETTER, METHODS, ORDERING_METRICS, decimal, method_label, metric_label, run_setting
from ._tables import with_caption


def ordering(run: Run, metric: str) -> list[str]:
    """The run's methods with a value for ``metric``, best first."""
    vals = {m: run.metrics["methods"][m]["overall"].get(metric) for m in run.methods}
    vals = {m: v for m, v in vals.items() if v is not None}
    sign = -1.0 if HIGHER_IS_BETTER.get(metric, True) else 1.0
    return sorted(vals, key=lambda m: (sign * vals[m], METHODS.index(m) if m in METHODS else 99))


def orderings(run: Run, metrics: Sequence[str] = ORDERING_METRICS, digits: int = 3, styled: bool = True) -> Any:
    """Per metric, the run's methods best first with their values (``SGS (0.810) ≻ bootstrapping (0.740) ≻ ...``).
    Two neighbours with the same value are joined by ``=``, and by ``≈`` when they differ only beyond the
    ``digits`` shown (a tie is never written as a win); a metric no method has a value for (the exposure deviation
    at K ≤ 5) has no row."""
    rows = {}
    for metric in metrics:
        order = ordering(run, metric)
        if not order:
            continue
        vals = {m: run.metrics["methods"][m]["overall"].get(metric) for m in order}
        text = f"{method_label(order[0])} ({decimal(vals[order[0]], digits)})"
        for a, b in zip(order, order[1:]):
            shown_a, shown_b = decimal(vals[a], digits), decimal(vals[b], digits)
            join = " = " if vals[a] == vals[b] else " ≈ " if shown_a == shown_b else " ≻ "
            text += f"{join}{method_label(b)} ({shown_b})"
        rows[metric_label(metric)] = {
            "better": "higher" if HIGHER_IS_BETTER.get(metric, True) else "lower",
            "ordering (best first)": text,
        }
    df = pd.DataFrame.from_dict(rows, orient="index", columns=["better", "ordering (best first)"])
    df.index.name = "metric"
    caption = f"Method orderings, {run_setting(run)}; = a tie, ≈ equal to {digits} decimals."
    return with_caption(df, caption) if styled else df


def ordering_agreement(run: Run, metrics: Sequence[str] = ORDERING_METRICS, styled: bool = True) -> Any:
    """Kendall's tau (:func:`invarirank.evaluation._agreement.kendall_tau`) between the method orderings (best
    first) of every two metrics: 1 = the same ordering, -1 = reversed. PPI, GPI and LOC agreeing with each other
    but not with HR@5 or the exposure deviation is the paper's finding."""
    orders = {m: ordering(run, m) for m in metrics}
    labels = [metric_label(m) for m in metrics]
    mat = pd.DataFrame(index=labels, columns=labels, dtype=float)
    for a, la in zip(metrics, labels):
        for b, lb in zip(metrics, labels):
            t = kendall_tau(orders[a], orders[b])
            mat.loc[la, lb] = np.nan if t is None else t
    if not styled:
        return mat
    return with_caption(mat, f"Agreement (Kendall's tau) between method orderings, {run_setting(run)}.").format(
        "{:+.2f}", na_rep="–"
    )
