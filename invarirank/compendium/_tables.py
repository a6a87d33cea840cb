"""The results tables: a run's metrics, the paper's Table 1 for our runs and beside the paper's own values (the
span-vs-choice scorer comparison: :mod:`invarirank.compendium._scorer_pairs`). Every value is read from a run's
``metrics.json``.

Cells read ``value [95% interval]`` (the bootstrap interval over queries stored in ``metrics.json``: percentile,
but basic for the exposure deviations, :mod:`invarirank.evaluation._bootstrap`);
styled tables (pandas Stylers) carry the setting in their caption, so a glued table states what it shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvariRankError
from ..store import Run
from ._labels import (
    RUN_METRICS,
    TABLE1_METRICS,
    dataset_label,
    decimal,
    method_label,
    metric_label,
    model_label,
    paper_dataset,
    run_setting,
    setting_caption,
)
from ._select import main_k
from ._verdicts import MARKS, claim_marks

_FRAME_COLUMNS = [
    "grid",
    "run",
    "dataset",
    "model",
    "scorer",
    "K",
    "M",
    "queries",
    "method",
    "metric",
    "value",
    "low",
    "high",
]


def metrics_frame(runs: Sequence[Run], metrics: Sequence[str] = RUN_METRICS) -> pd.DataFrame:
    """Long table: one row per (run, method, metric) with ``value``, ``low``, ``high`` (95% interval)."""
    records = []
    for run in runs:
        for method in run.methods:
            ov = run.metrics["methods"][method]["overall"]
            for metric in metrics:
                value = ov.get(metric)
                low, high = ci_of(run, method, metric)
                records.append(
                    {
                        "grid": run.grid,
                        "run": run.name,
                        "dataset": run.dataset,
                        "model": run.model,
                        "scorer": run.scorer,
                        "K": run.K,
                        "M": run.M,
                        "queries": run.n_queries,
                        "method": method,
                        "metric": metric,
                        "value": np.nan if value is None else float(value),
                        "low": np.nan if low is None else float(low),
                        "high": np.nan if high is None else float(high),
                    }
                )
    return pd.DataFrame.from_records(records, columns=_FRAME_COLUMNS)


def ci_of(run: Run, method: str, metric: str) -> tuple[float | None, float | None]:
    """The stored 95% interval of ``metric`` for ``method`` (``(None, None)`` when there is none)."""
    ci = run.metrics["methods"][method]["overall"].get("ci", {}).get(metric)
    return (ci[0], ci[1]) if ci else (None, None)


def format_ci(value: float, low: float, high: float, digits: int = 3, html: bool = False) -> str:
    """``0.512 [0.480, 0.550]`` (``–`` for a missing value, no interval when it is missing); with
    ``html`` the interval goes on a second, smaller line (for the book's tables)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = decimal(value, digits)
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        interval = f"[{decimal(low, digits)}, {decimal(high, digits)}]"
        text += f'<br><span class="ci">{interval}</span>' if html else f" {interval}"
    return text


def with_caption(df: pd.DataFrame, caption: str) -> Any:
    """A pandas Styler with a caption (the glued HTML then carries the setting with the numbers). A named index
    (single-level columns) has its name in the columns' header row, top left, not in a header row of its own that
    is empty but for it (pandas' default); of a multi-level index, the last level's name."""
    names = any(n is not None for n in df.index.names) and not isinstance(df.columns, pd.MultiIndex)
    if names:
        df = df.copy()
        df.columns.name = df.index.names[-1]
    styler = df.style.set_caption(caption)
    if names:
        styler = styler.hide(names=True, axis="index")
    return styler.set_table_styles(
        [
            {
                "selector": "caption",
                "props": [
                    ("caption-side", "top"),
                    ("text-align", "left"),
                    ("font-weight", "normal"),
                    ("padding-bottom", "0.4em"),
                ],
            }
        ]
    )


def drop_constant_levels(df: pd.DataFrame) -> pd.DataFrame:
    """Drop index levels holding one value (the caption states them), keeping at least one level."""
    if isinstance(df.index, pd.MultiIndex):
        for name in list(df.index.names):
            if df.index.nlevels > 1 and df.index.get_level_values(name).nunique() == 1:
                df = df.droplevel(name)
    return df


def fold_columns(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Drop the columns that carry nothing (every cell missing or ``–``) and, when there are several rows, those
    holding one value in every row; returns the table and a sentence naming the folded values, for the caption."""

    def empty(v: Any) -> bool:
        return v is None or v == "–" or (isinstance(v, float) and math.isnan(v))

    folded = []
    for col in list(df.columns):
        values = list(df[col])
        if all(empty(v) for v in values):
            df = df.drop(columns=col)
        elif len(values) > 1 and len({str(v) for v in values}) == 1:
            v = values[0]
            folded.append(f"{col}: {v:,}" if isinstance(v, (int, np.integer)) else f"{col}: {v}")
            df = df.drop(columns=col)
    return df, ("In every row, " + "; ".join(folded) + ".") if folded else ""


def metric_cells(
    frame: pd.DataFrame,
    metrics: Sequence[str],
    digits: int,
    html: bool,
    marks: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, str]:
    """``{metric label: value [interval]}`` from the rows of one (run, method) of :func:`metrics_frame`, each cell
    followed by its ``marks[metric]`` (on lines of their own with ``html``, else in parentheses)."""
    sub = frame.set_index("metric")
    out = {}
    for m in metrics:
        text = format_ci(sub.loc[m, "value"], sub.loc[m, "low"], sub.loc[m, "high"], digits, html=html)
        extra = list((marks or {}).get(m, ()))
        if extra and html:
            text += "".join(f'<br><span class="claim-mark">{x}</span>' for x in extra)
        elif extra:
            text += f" ({'; '.join(extra)})"
        out[metric_label(m)] = text
    return out


#: the reference rows of ``metrics.json`` (``references``), in the order the tables show them, with their labels
REFERENCE_LABELS = {"first_stage": "first-stage order (reference)", "random": "random order (reference)"}


def reference_cells(
    run: Run, reference: str, metrics: Sequence[str], digits: int = 3, html: bool = False
) -> dict[str, str] | None:
    """``{metric label: value [interval]}`` of one reference row of a run (``metrics["references"]``), or ``None``
    when the run has no such reference (an older ``metrics.json``, or no first stage)."""
    block = (run.metrics.get("references") or {}).get(reference)
    if not block:
        return None
    ov, ci = block["overall"], block["overall"].get("ci") or {}
    out = {}
    for m in metrics:
        value, (low, high) = ov.get(m), ci.get(m) or (None, None)
        nan = float("nan")
        out[metric_label(m)] = format_ci(
            nan if value is None else value,
            nan if low is None else low,
            nan if high is None else high,
            digits,
            html=html,
        )
    return out


#: Said under a run's metrics table when it shows the exposure MAD (the protocol chapter gives the reason at length).
EXPOSURE_INTERVAL_NOTE = (
    " The exposure MAD's interval is a basic bootstrap interval: noise only raises a deviation "
    "from the flat line, so the value is biased upward and the interval, which corrects for "
    "that, can lie below it."
)


def run_table(run: Run, metrics: Sequence[str] = RUN_METRICS, digits: int = 3, styled: bool = True) -> Any:
    """One run's metrics per method, each ``value [95% interval]``, then its reference rows (first-stage order,
    random order) where ``metrics.json`` has them."""
    frame = metrics_frame([run], metrics)
    rows = {
        method_label(method): metric_cells(frame[frame.method == method], metrics, digits, styled)
        for method in run.methods
    }
    for ref, label in REFERENCE_LABELS.items():
        cells = reference_cells(run, ref, metrics, digits, styled)
        if cells is not None:
            rows[label] = cells
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index.name = "method"
    caption = f"{run_setting(run)}. Value [95% bootstrap interval over queries]."
    if any(m.startswith("exposure_mad@") for m in metrics):
        caption += EXPOSURE_INTERVAL_NOTE
    return with_caption(df, caption) if styled else df


def table1(
    runs: Sequence[Run], *, K: int | None = None, digits: int = 3, styled: bool = True, marks: bool = True
) -> Any:
    """The paper's Table 1 for our runs: rows (dataset, model, scorer, method), columns HR@5, nDCG@5,
    PPI, GPI, LOC (value [95% interval]); only runs at list length ``K`` (default: the K of the runs
    with the most methods). With ``marks``, each cell of a claimed metric also marks the paper's claimed pairs on
    the row of the method the paper finds better (:func:`invarirank.compendium._verdicts.claim_marks`:
    ● resolved in the paper's direction, ✗ resolved against it, ○ unresolved)."""
    if not runs:
        raise InvariRankError("table1: no finished runs")
    if K is None:
        K = main_k(runs)
    chosen = [r for r in runs if r.K == K]
    frame = metrics_frame(chosen, TABLE1_METRICS)
    records = []
    any_marks = False
    for run in chosen:
        run_marks = claim_marks(run) if marks else {}
        any_marks = any_marks or bool(run_marks)
        for method in run.methods:
            sub = frame[(frame.run == run.name) & (frame.grid == run.grid) & (frame.method == method)]
            own = {metric: run_marks.get((method, metric), ()) for metric in TABLE1_METRICS}
            records.append(
                {
                    "dataset": dataset_label(run.dataset),
                    "model": model_label(run.model),
                    "scorer": run.scorer,
                    "method": method_label(method),
                    **metric_cells(sub, TABLE1_METRICS, digits, styled, own),
                }
            )
        for ref, label in REFERENCE_LABELS.items():
            cells = reference_cells(run, ref, TABLE1_METRICS, digits, styled)
            if cells is not None:
                records.append(
                    {
                        "dataset": dataset_label(run.dataset),
                        "model": model_label(run.model),
                        "scorer": run.scorer,
                        "method": label,
                        **cells,
                    }
                )
    df = drop_constant_levels(pd.DataFrame.from_records(records).set_index(["dataset", "model", "scorer", "method"]))
    caption = (
        f"Table 1 (ours). {setting_caption(chosen)}. Higher is better for HR@5, nDCG@5 and LOC, lower "
        f"for PPI and GPI; value [95% bootstrap interval over queries]. Reference rows: the first stage's "
        f"own ranking of the same candidates (consistent by construction) and the expectation of a uniformly "
        f"random ranking."
    )
    models = list(dict.fromkeys((r.model, r.n_queries) for r in chosen))
    if len({m for m, _ in models}) > 1:
        caption += (
            " Each model's rows are on its own queries ("
            + ", ".join(f"{model_label(m)}: {n}" for m, n in models)
            + "): its methods, then its own reference rows."
        )
    if any_marks:
        caption += (
            f" Marks: the paper's claimed pairs, on the row of the method the paper finds better, against the "
            f"method named: {MARKS['resolved']} resolved in the paper's direction, {MARKS['against']} "
            f"resolved against it, {MARKS['unresolved']} unresolved (paired sign-flip test over queries, "
            f"Holm-adjusted p < 0.05 over the claim's pairs); “other way”: the observed difference has the wrong "
            f"sign."
        )
    return with_caption(df, caption) if styled else df


def paper_table(path: str | Path) -> pd.DataFrame:
    """The paper's Table 1 from the committed CSV (``#`` lines are the citation header)."""
    df = pd.read_csv(path, comment="#", dtype={"dataset": str, "model": str, "method": str})
    needed = {"dataset", "model", "method", "k", "m", *TABLE1_METRICS}
    if not needed <= set(df.columns):
        raise InvariRankError(f"{path}: expected columns {', '.join(sorted(needed))}")
    return df


def beside_paper(
    runs: Sequence[Run], paper: pd.DataFrame, *, K: int | None = None, digits: int = 3, styled: bool = True
) -> Any:
    """Our Table 1 values beside the paper's: for each method, one row *ours* per (dataset, model) of ours at ``K``,
    then one row per paper model on the closest paper dataset (only the same model when we ran it), each paper row
    once however many of our models stand beside it; columns HR@5, nDCG@5, PPI, GPI, LOC. The paper's values are at
    K = 25, M = 20, 500 queries."""
    if K is None:
        K = main_k(runs)
    chosen = [r for r in runs if r.K == K]
    if not chosen:
        raise InvariRankError(f"beside_paper: no finished runs at K = {K}")
    pdsets_all = {paper_dataset(r.dataset) for r in chosen}
    # our runs differ only in their model (the results page's Table 1 of two models): name the model alone
    only_model = len({(r.dataset, r.scorer, r.K) for r in chosen}) == 1

    def ours_label(run: Run) -> str:
        if len(chosen) == 1:
            return "ours"
        if only_model:
            return f"ours: {model_label(run.model)}"
        return f"ours: {model_label(run.model)}, {dataset_label(run.dataset)}, {run.scorer}, K = {run.K}"

    def paper_rows(run: Run) -> list[tuple[str, pd.DataFrame]]:
        """(source label, the paper's rows of one model) beside ``run``."""
        pdset = paper_dataset(run.dataset)
        cells = paper[paper.dataset == pdset] if pdset else paper.iloc[0:0]
        same = cells[cells.model.map(model_label) == model_label(run.model)]
        models = [run.model] if not same.empty else list(dict.fromkeys(cells.model))
        suffix = "" if len(pdsets_all) == 1 else f", {dataset_label(pdset)}"
        return [
            (f"paper: {model_label(pm)}{suffix}", cells[cells.model.map(model_label) == model_label(pm)])
            for pm in models
        ]

    methods = list(dict.fromkeys(m for r in chosen for m in r.methods))
    records, seen = [], set()
    for method in methods:
        beside = []
        for run in chosen:
            if method not in run.methods:
                continue
            ov = run.metrics["methods"][method]["overall"]
            rec = {"method": method_label(method), "source": ours_label(run)}
            for m in TABLE1_METRICS:
                rec[metric_label(m)] = "–" if ov.get(m) is None else f"{ov[m]:.{digits}f}"
            records.append(rec)
            beside += paper_rows(run)
        for source, cells in beside:
            hit = cells[cells.method == method]
            if hit.empty or (method, source) in seen:
                continue
            seen.add((method, source))
            rec = {"method": method_label(method), "source": source}
            for m in TABLE1_METRICS:
                rec[metric_label(m)] = f"{float(hit.iloc[0][m]):.4f}"
            records.append(rec)
    df = pd.DataFrame.from_records(records).set_index(["method", "source"])
    pdsets = sorted({dataset_label(paper_dataset(r.dataset) or "?") for r in chosen})
    caption = (
        f"Ours ({setting_caption(chosen)}) beside the paper's Table 1 ({', '.join(pdsets)}, K = 25, M = 20, "
        f"500 queries, 3-7 B models). The settings differ, so compare orderings, not absolute values."
    )
    return with_caption(df, caption) if styled else df
