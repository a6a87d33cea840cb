"""The book's tables and figures, computed from finished run folders (``results/<grid>/<run>/``).

The notebooks under ``notebooks/`` hold narrative and calls into this module; every number they show
comes from a run's ``metrics.json`` (written by :func:`invarirank.evaluation.evaluate`), its
``manifest.json`` or its ``observations.jsonl.gz``. Nothing here reranks or scores anything.

Conventions:

* Methods are shown in the paper's order (zero-shot, bootstrapping, STELLA_LW, SGS) under their display
  names (:data:`METHOD_LABELS`).
* "Better" is higher for HR@k, nDCG@k and LOC and lower for PPI, GPI and the exposure deviation
  (:data:`HIGHER_IS_BETTER`). An ordering lists methods best first.
* Intervals are the 95% percentile bootstrap intervals over queries stored in ``metrics.json``; the
  exposure bands of Figure 1 are bootstrap intervals over queries computed here from the observations
  (seeded, so a re-execution draws the same band).
* Positions are 0-based presented positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import InvariRankError
from .io import read_json
from .store import Run, complete_runs
from .store import load_run as _load_run

__all__ = [
    "METHOD_ORDER", "METHOD_LABELS", "METRIC_LABELS", "HIGHER_IS_BETTER", "PAPER_LOC_ORDER", "TABLE1_METRICS",
    "Run", "load_run", "collect_runs", "main_run", "main_k", "sweep_runs", "other_grids", "run_setting",
    "metrics_frame", "format_ci", "setting_caption", "run_table", "table1", "paper_table", "beside_paper",
    "exposure_bands", "figure_exposure", "figure_k_sweep", "orderings", "ordering_agreement",
    "paper_ordering_sentence", "summary_sentence", "setting_groups", "scorer_comparison", "cost_table", "scale_table",
    "data_stats_table", "coverage_table", "figure_training_loss", "model_label", "dataset_label", "html_escape",
    "key",
]

METHOD_ORDER = ("zero_shot", "bootstrapping", "stella", "sgs")
METHOD_LABELS = {"zero_shot": "zero-shot", "bootstrapping": "bootstrapping", "stella": "STELLA_LW",
                 "sgs": "SGS"}
METRIC_LABELS = {"hr@5": "HR@5", "ndcg@5": "nDCG@5", "ppi": "PPI", "gpi": "GPI", "loc": "LOC",
                 "exposure_mad@5": "exposure MAD", "hr@1": "HR@1", "ndcg@10": "nDCG@10", "hr@10": "HR@10"}
HIGHER_IS_BETTER = {"hr@1": True, "hr@5": True, "hr@10": True, "ndcg@5": True, "ndcg@10": True,
                    "loc": True, "ppi": False, "gpi": False, "exposure_mad@5": False}
TABLE1_METRICS = ("hr@5", "ndcg@5", "ppi", "gpi", "loc")
#: The paper's LOC ordering, best first (PPI and GPI: the same methods best first, i.e. reversed values).
PAPER_LOC_ORDER = ("sgs", "bootstrapping", "zero_shot", "stella")

_MODEL_LABELS = {
    "smollm2-135m": "SmolLM2-135M", "gemma3-270m": "Gemma-3-270M", "simulated": "simulated",
    "llama-3.2-3b-instruct": "Llama-3B", "mistral-7b-instruct-v0.3": "Mistral-7B",
    "qwen2.5-7b-instruct": "Qwen-7B",
}
_DATASET_LABELS = {"ml-100k": "MovieLens-100K", "ml-1m": "MovieLens-1M", "ml-32m": "MovieLens-32M",
                   "movielens-32m": "MovieLens-32M", "amazon-books": "Amazon Books"}


def model_label(model: str) -> str:
    """Short display name of a model id (``meta-llama/Llama-3.2-3B-Instruct`` → ``Llama-3B``)."""
    key = str(model).rstrip("/").split("/")[-1].lower()
    return _MODEL_LABELS.get(key, str(model).split("/")[-1])


def dataset_label(dataset: str) -> str:
    """Display name of a dataset id (``ml-100k`` → ``MovieLens-100K``)."""
    return _DATASET_LABELS.get(str(dataset).lower(), str(dataset))


def _paper_dataset(dataset: str) -> str | None:
    """The paper's dataset closest to ours: MovieLens-32M for any MovieLens, Amazon Books for Amazon."""
    d = str(dataset).lower()
    if d.startswith("ml") or "movielens" in d:
        return "movielens-32m"
    if "amazon" in d or "book" in d:
        return "amazon-books"
    return None


# --------------------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------------------
def collect_runs(results_dir: str | Path, grids: Iterable[str] | None = None,
                 exclude: Iterable[str] = ("lab",)) -> list[Run]:
    """Every finished run under ``results_dir/<grid>/<run>/`` (the lab's sweep excluded by default),
    sorted by grid, dataset, model, scorer, K."""
    skip = set(exclude)
    runs = [load_run(p) for p in complete_runs(results_dir, grids) if p.parent.name not in skip]
    return sorted(runs, key=lambda r: (r.grid, r.dataset, r.model, r.scorer, r.K, r.name))


def load_run(path: str | Path) -> Run:
    """Read one finished run folder (:func:`invarirank.store.load_run`), methods in the paper's order."""
    return _in_paper_order(_load_run(path))


def _in_paper_order(run: Run) -> Run:
    """The run with its methods in the paper's order of presentation (others after them)."""
    run.methods = [m for m in METHOD_ORDER if m in run.methods] + [m for m in run.methods if m not in METHOD_ORDER]
    return run


def run_setting(run: Run) -> str:
    """``model, dataset, scorer, K, M, queries`` of a run, as one phrase."""
    return (f"{model_label(run.model)} on {dataset_label(run.dataset)}, {run.scorer} scorer, "
            f"K = {run.K}, M = {run.M}, {run.n_queries} queries")


def metrics_frame(runs: Sequence[Run], metrics: Sequence[str] = ("hr@5", "ndcg@5", "ppi", "gpi", "loc",
                                                                   "exposure_mad@5")) -> pd.DataFrame:
    """Long table: one row per (run, method, metric) with ``value``, ``low``, ``high`` (95% interval)."""
    records = []
    for run in runs:
        for method in run.methods:
            ov = run.metrics["methods"][method]["overall"]
            ci = ov.get("ci", {})
            for metric in metrics:
                value = ov.get(metric)
                low, high = (ci.get(metric) or [None, None])
                records.append({
                    "grid": run.grid, "run": run.name, "dataset": run.dataset, "model": run.model,
                    "scorer": run.scorer, "K": run.K, "M": run.M, "queries": run.n_queries, "method": method,
                    "metric": metric, "value": np.nan if value is None else float(value),
                    "low": np.nan if low is None else float(low), "high": np.nan if high is None else float(high)})
    return pd.DataFrame.from_records(records, columns=["grid", "run", "dataset", "model", "scorer", "K", "M",
                                                       "queries", "method", "metric", "value", "low", "high"])


def format_ci(value: float, low: float, high: float, digits: int = 3, html: bool = False) -> str:
    """``0.512 [0.480, 0.550]`` (``–`` for a missing value, no interval when it is missing); with
    ``html`` the interval goes on a second, smaller line (for the book's tables)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    text = f"{value:.{digits}f}"
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        interval = f"[{low:.{digits}f}, {high:.{digits}f}]"
        text += f'<br><span class="ci">{interval}</span>' if html else f" {interval}"
    return text


def setting_caption(runs: Sequence[Run]) -> str:
    """What a table shows: model(s), dataset(s), scorer(s), K, M and queries, in one line."""
    def join(values: Iterable[Any]) -> str:
        vals = list(dict.fromkeys(values))
        return ", ".join(str(v) for v in vals)
    return (f"model {join(model_label(r.model) for r in runs)}; "
            f"dataset {join(dataset_label(r.dataset) for r in runs)}; "
            f"{join(r.scorer for r in runs)} scorer; K = {join(r.K for r in runs)}; M = {join(r.M for r in runs)}; "
            f"queries = {join(r.n_queries for r in runs)}")


def _styled(df: pd.DataFrame, caption: str) -> Any:
    """A pandas Styler with a caption (the glued HTML then carries the setting with the numbers)."""
    styler = df.style.set_caption(caption)
    styler = styler.set_table_styles([{"selector": "caption",
                                       "props": [("caption-side", "top"), ("text-align", "left"),
                                                 ("font-weight", "normal"), ("padding-bottom", "0.4em")]}])
    return styler


# --------------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------------
def run_table(run: Run, metrics: Sequence[str] = ("hr@5", "ndcg@5", "ppi", "gpi", "loc", "exposure_mad@5"),
              digits: int = 3, styled: bool = True) -> Any:
    """One run's metrics per method, each ``value [95% interval]``."""
    frame = metrics_frame([run], metrics)
    rows = {}
    for method in run.methods:
        sub = frame[frame.method == method].set_index("metric")
        rows[METHOD_LABELS.get(method, method)] = {
            METRIC_LABELS.get(m, m): format_ci(sub.loc[m, "value"], sub.loc[m, "low"], sub.loc[m, "high"], digits,
                                               html=styled)
            for m in metrics}
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index.name = "method"
    return _styled(df, f"{run_setting(run)}. Value [95% bootstrap interval over queries].") if styled else df


def table1(runs: Sequence[Run], *, K: int | None = None, digits: int = 3, styled: bool = True) -> Any:
    """The paper's Table 1 for our runs: rows (dataset, model, scorer, method), columns HR@5, nDCG@5,
    PPI, GPI, LOC (value [95% interval]); only runs at list length ``K`` (default: the K of the runs
    with the most methods)."""
    if not runs:
        raise InvariRankError("table1: no finished runs")
    if K is None:
        K = main_k(runs)
    chosen = [r for r in runs if r.K == K]
    frame = metrics_frame(chosen, TABLE1_METRICS)
    records = []
    for run in chosen:
        for method in run.methods:
            sub = frame[(frame.run == run.name) & (frame.grid == run.grid) & (frame.method == method)]
            sub = sub.set_index("metric")
            rec = {"dataset": dataset_label(run.dataset), "model": model_label(run.model), "scorer": run.scorer,
                   "method": METHOD_LABELS.get(method, method)}
            for m in TABLE1_METRICS:
                rec[METRIC_LABELS[m]] = format_ci(sub.loc[m, "value"], sub.loc[m, "low"], sub.loc[m, "high"], digits,
                                                  html=styled)
            records.append(rec)
    df = _drop_constant_levels(pd.DataFrame.from_records(records).set_index(["dataset", "model", "scorer", "method"]))
    caption = (f"Table 1 (ours). {setting_caption(chosen)}. Higher is better for HR@5, nDCG@5 and LOC, lower "
               f"for PPI and GPI; value [95% bootstrap interval over queries].")
    return _styled(df, caption) if styled else df


def _drop_constant_levels(df: pd.DataFrame) -> pd.DataFrame:
    """Drop index levels holding one value (the caption states them), keeping at least one level."""
    if isinstance(df.index, pd.MultiIndex):
        for name in list(df.index.names):
            if df.index.nlevels > 1 and df.index.get_level_values(name).nunique() == 1:
                df = df.droplevel(name)
    return df


def main_k(runs: Sequence[Run]) -> int:
    """The K of the runs with the most methods (ties: the most queries, then the larger K)."""
    best = max(runs, key=lambda r: (len(r.methods), r.n_queries, r.K))
    return best.K


def paper_table(path: str | Path) -> pd.DataFrame:
    """The paper's Table 1 from the committed CSV (``#`` lines are the citation header)."""
    df = pd.read_csv(path, comment="#", dtype={"dataset": str, "model": str, "method": str})
    needed = {"dataset", "model", "method", "k", "m", *TABLE1_METRICS}
    if not needed <= set(df.columns):
        raise InvariRankError(f"{path}: expected columns {', '.join(sorted(needed))}")
    return df


def beside_paper(runs: Sequence[Run], paper: pd.DataFrame, *, K: int | None = None, digits: int = 3,
                 styled: bool = True) -> Any:
    """Our Table 1 values beside the paper's: for each of our (dataset, model) at ``K`` and each method, one
    row *ours* and one row per paper model on the closest paper dataset (only the same model when we ran
    it), columns HR@5, nDCG@5, PPI, GPI, LOC. The paper's values are at K = 25, M = 20, 500 queries."""
    if K is None:
        K = main_k(runs)
    chosen = [r for r in runs if r.K == K]
    if not chosen:
        raise InvariRankError(f"beside_paper: no finished runs at K = {K}")
    records = []
    pdsets_all = {_paper_dataset(r.dataset) for r in chosen}
    for run in chosen:
        pdset = _paper_dataset(run.dataset)
        cells = paper[paper.dataset == pdset] if pdset else paper.iloc[0:0]
        same = cells[cells.model.map(model_label) == model_label(run.model)]
        models = [run.model] if not same.empty else list(dict.fromkeys(cells.model))
        ours_label = ("ours" if len(chosen) == 1 else
                      f"ours: {model_label(run.model)}, {dataset_label(run.dataset)}, {run.scorer}, K = {run.K}")
        for method in run.methods:
            ov = run.metrics["methods"][method]["overall"]
            rec = {"method": METHOD_LABELS.get(method, method), "source": ours_label}
            for m in TABLE1_METRICS:
                rec[METRIC_LABELS[m]] = "–" if ov.get(m) is None else f"{ov[m]:.{digits}f}"
            records.append(rec)
            for pm in models:
                hit = cells[(cells.model.map(model_label) == model_label(pm)) & (cells.method == method)]
                if hit.empty:
                    continue
                rec = {"method": METHOD_LABELS.get(method, method),
                       "source": f"paper: {model_label(pm)}"
                                 + ("" if len(pdsets_all) == 1 else f", {dataset_label(pdset)}")}
                for m in TABLE1_METRICS:
                    rec[METRIC_LABELS[m]] = f"{float(hit.iloc[0][m]):.4f}"
                records.append(rec)
    df = pd.DataFrame.from_records(records).set_index(["method", "source"])
    pdsets = sorted({dataset_label(_paper_dataset(r.dataset) or "?") for r in chosen})
    caption = (f"Ours ({setting_caption(chosen)}) beside the paper's Table 1 ({', '.join(pdsets)}, K = 25, M = 20, "
               f"500 queries, 3-7 B models). The settings differ, so compare orderings, not absolute values.")
    return _styled(df, caption) if styled else df


# --------------------------------------------------------------------------------------------------
# exposure (Figure 1)
# --------------------------------------------------------------------------------------------------
def _read_rows(run: Run) -> list[dict]:
    from .evaluation import read_observations

    return read_observations(run.observations)


def exposure_bands(run: Run, k: int = 5, n_bootstrap: int = 1000, seed: int = 0,
                   rows: list[dict] | None = None) -> pd.DataFrame:
    """E_k(p) per method and presented position p, with a 95% bootstrap band over queries.

    Columns: method, position (0-based), exposure, low, high, expected. ``exposure`` equals the run's
    ``metrics.json`` value (pooled over rows); the band resamples queries with replacement.
    """
    rows = _read_rows(run) if rows is None else rows
    out = []
    for method in run.methods:
        mrows = [r for r in rows if r["method"] == method]
        qids = list(dict.fromkeys(r["query_id"] for r in mrows))
        index = {q: i for i, q in enumerate(qids)}
        max_k = max(len(r["input"]) for r in mrows)
        hits = np.zeros((len(qids), max_k))
        n = np.zeros((len(qids), max_k))
        expect = np.zeros((len(qids), max_k))
        for r in mrows:
            i = index[r["query_id"]]
            K = len(r["input"])
            top = set(r["output"][:k])
            hits[i, :K] += [x in top for x in r["input"]]
            n[i, :K] += 1
            expect[i, :K] += min(k, K) / K
        e = hits.sum(0) / np.maximum(n.sum(0), 1)
        x = expect.sum(0) / np.maximum(n.sum(0), 1)
        rng = np.random.default_rng(seed)
        if n_bootstrap > 0 and len(qids) > 1:
            draws = rng.integers(0, len(qids), size=(n_bootstrap, len(qids)))
            weights = np.stack([np.bincount(d, minlength=len(qids)) for d in draws]).astype(float)
            eb = (weights @ hits) / np.maximum(weights @ n, 1)
            low, high = np.percentile(eb, [2.5, 97.5], axis=0)
        else:
            low = high = e
        for p in range(max_k):
            out.append({"method": method, "position": p, "exposure": e[p], "low": low[p], "high": high[p],
                        "expected": x[p]})
    return pd.DataFrame(out)


def _method_colors() -> dict[str, Any]:
    import matplotlib.pyplot as plt

    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2", "C3"])
    return {m: cycle[i % len(cycle)] for i, m in enumerate(METHOD_ORDER)}


def _shared_legend(fig: Any, axes: Sequence[Any]) -> None:
    """One legend under the figure for the labelled lines of all ``axes`` (each label once)."""
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=9,
               frameon=False)


def figure_exposure(runs: Sequence[Run], k: int = 5, n_bootstrap: int = 1000, seed: int = 0):
    """Figure 1: top-k exposure by presented position, one panel per run (K), one line per method with
    its 95% bootstrap band, and the position-blind expectation k/K dashed."""
    import matplotlib.pyplot as plt

    runs = sorted(runs, key=lambda r: r.K)
    if not runs:
        raise InvariRankError("figure_exposure: no runs")
    informative = [r for r in runs if r.K > k]   # with K <= k every candidate is in the top k
    runs = informative or runs
    colors = _method_colors()
    fig, axes = plt.subplots(1, len(runs), figsize=(max(6.0, 4.8 * len(runs)), 4.0), squeeze=False,
                             sharey=True)
    for ax, run in zip(axes[0], runs):
        bands = exposure_bands(run, k=k, n_bootstrap=n_bootstrap, seed=seed)
        for method in run.methods:
            b = bands[bands.method == method]
            ax.plot(b.position, b.exposure, marker="o", ms=3, lw=1.5, color=colors.get(method),
                    label=METHOD_LABELS.get(method, method))
            ax.fill_between(b.position, b.low, b.high, color=colors.get(method), alpha=0.15, lw=0)
        expected = bands[bands.method == run.methods[0]]
        ax.plot(expected.position, expected.expected, ls="--", color="0.3", lw=1, label=f"position-blind ({k}/K)")
        ax.set_title(f"K = {run.K} (M = {run.M}, {run.n_queries} queries)", fontsize=10)
        ax.set_xlabel("input position p (0-based)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"top-{k} exposure $E_{k}(p)$")
    _shared_legend(fig, axes[0])
    r0 = runs[0]
    fig.suptitle(f"Top-{k} exposure by input position: {model_label(r0.model)}, {dataset_label(r0.dataset)}, "
                 f"{r0.scorer} scorer", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.close(fig)   # shown once: by the cell's value or by glue, not again by the inline backend
    return fig


# --------------------------------------------------------------------------------------------------
# K sweep (Figure 2)
# --------------------------------------------------------------------------------------------------
def figure_k_sweep(runs: Sequence[Run], metrics: Sequence[str] = ("ppi", "gpi")):
    """Figure 2: PPI and GPI (by default) across K, one line per method, 95% intervals as error bars.
    Methods appear at the Ks where they were run."""
    import matplotlib.pyplot as plt

    frame = metrics_frame(runs, metrics)
    colors = _method_colors()
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 4.0), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        sub = frame[frame.metric == metric]
        for method in METHOD_ORDER:
            s = sub[sub.method == method].sort_values("K")
            if s.empty:
                continue
            yerr = np.vstack([s.value - s.low, s.high - s.value])
            yerr = np.where(np.isnan(yerr), 0, yerr)
            span = max(float(sub.K.max() - sub.K.min()), 1.0)
            dodge = (METHOD_ORDER.index(method) - 1.5) * 0.012 * span   # keep the error bars apart
            ax.errorbar(s.K + dodge, s.value, yerr=yerr, marker="o", ms=4, capsize=3, lw=1.5,
                        color=colors[method], label=METHOD_LABELS[method])
        ax.set_xlabel("list length K")
        lower = not HIGHER_IS_BETTER.get(metric, True)
        ax.set_ylabel(METRIC_LABELS.get(metric, metric) + (" (lower is better)" if lower else ""))
        ax.set_xticks(sorted(sub.K.unique()))
        ax.grid(alpha=0.3)
    _shared_legend(fig, axes[0])
    r0 = runs[0]
    qs = sorted({r.n_queries for r in runs})
    fig.suptitle(f"{' and '.join(METRIC_LABELS.get(m, m) for m in metrics)} across K: {model_label(r0.model)}, "
                 f"{dataset_label(r0.dataset)}, {r0.scorer} scorer, M = {r0.M}, "
                 f"{'/'.join(map(str, qs))} queries", fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.close(fig)   # shown once: by the cell's value or by glue, not again by the inline backend
    return fig


# --------------------------------------------------------------------------------------------------
# orderings
# --------------------------------------------------------------------------------------------------
ORDERING_METRICS = ("ppi", "gpi", "loc", "hr@5", "ndcg@5", "exposure_mad@5")


def _ordering(run: Run, metric: str) -> list[str]:
    vals = {m: run.metrics["methods"][m]["overall"].get(metric) for m in run.methods}
    vals = {m: v for m, v in vals.items() if v is not None}
    sign = -1.0 if HIGHER_IS_BETTER.get(metric, True) else 1.0
    return sorted(vals, key=lambda m: (sign * vals[m], METHOD_ORDER.index(m) if m in METHOD_ORDER else 99))


def orderings(run: Run, metrics: Sequence[str] = ORDERING_METRICS, digits: int = 3, styled: bool = True) -> Any:
    """Per metric, the run's methods best first with their values (``SGS 0.81 > bootstrapping 0.74 ...``)."""
    rows = {}
    for metric in metrics:
        order = _ordering(run, metric)
        vals = {m: run.metrics["methods"][m]["overall"].get(metric) for m in order}
        rows[METRIC_LABELS.get(metric, metric)] = {
            "better": "higher" if HIGHER_IS_BETTER.get(metric, True) else "lower",
            "ordering (best first)": " > ".join(f"{METHOD_LABELS.get(m, m)} ({vals[m]:.{digits}f})" for m in order)}
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index.name = "metric"
    return _styled(df, f"Method orderings, {run_setting(run)}.") if styled else df


def _kendall(a: Sequence[str], b: Sequence[str]) -> float | None:
    common = [m for m in a if m in b]
    if len(common) < 2:
        return None
    ra = {m: i for i, m in enumerate(x for x in a if x in common)}
    rb = {m: i for i, m in enumerate(x for x in b if x in common)}
    s = 0
    pairs = list(combinations(common, 2))
    for x, y in pairs:
        s += np.sign(ra[x] - ra[y]) * np.sign(rb[x] - rb[y])
    return float(s / len(pairs))


def ordering_agreement(run: Run, metrics: Sequence[str] = ORDERING_METRICS, styled: bool = True) -> Any:
    """Kendall's tau between the method orderings (best first) of every two metrics: 1 = the same
    ordering, -1 = reversed. PPI, GPI and LOC agreeing with each other but not with HR@5 or the exposure
    deviation is the paper's finding."""
    orders = {m: _ordering(run, m) for m in metrics}
    labels = [METRIC_LABELS.get(m, m) for m in metrics]
    mat = pd.DataFrame(index=labels, columns=labels, dtype=float)
    for a, la in zip(metrics, labels):
        for b, lb in zip(metrics, labels):
            t = _kendall(orders[a], orders[b])
            mat.loc[la, lb] = np.nan if t is None else t
    if not styled:
        return mat
    styler = _styled(mat, f"Agreement (Kendall's tau) between method orderings, {run_setting(run)}.")
    return styler.format("{:+.2f}", na_rep="–")


def _ci_of(run: Run, method: str, metric: str) -> tuple[float | None, float | None]:
    ci = run.metrics["methods"][method]["overall"].get("ci", {}).get(metric)
    return (ci[0], ci[1]) if ci else (None, None)


def paper_ordering_sentence(run: Run) -> str:
    """A computed sentence: does this run show the paper's ordering SGS > bootstrapping > zero-shot >
    STELLA_LW on LOC (and the same methods best first on PPI and GPI)? Also says which neighbouring
    differences are within the 95% intervals."""
    wanted = [m for m in PAPER_LOC_ORDER if m in run.methods]
    if len(wanted) < 2:
        return (f"In {run_setting(run)} fewer than two of the paper's methods were run, so the paper's "
                f"ordering cannot be checked.")
    parts, matches = [], []
    for metric in ("loc", "ppi", "gpi"):
        got = [m for m in _ordering(run, metric) if m in wanted]
        ok = got == wanted
        matches.append(ok)
        text = " > ".join(METHOD_LABELS[m] for m in got)
        parts.append(f"{METRIC_LABELS[metric]}: {text} ({'as in the paper' if ok else 'not as in the paper'})")
    overlaps = []
    for metric in ("loc", "ppi", "gpi"):
        got = [m for m in _ordering(run, metric) if m in wanted]
        for a, b in zip(got, got[1:]):
            la, ha = _ci_of(run, a, metric)
            lb, hb = _ci_of(run, b, metric)
            if None not in (la, ha, lb, hb) and not (ha < lb or hb < la):
                overlaps.append(f"{METHOD_LABELS[a]}/{METHOD_LABELS[b]} on {METRIC_LABELS[metric]}")
    subset = "" if len(wanted) == len(PAPER_LOC_ORDER) else \
        f" (restricted to the methods run: {', '.join(METHOD_LABELS[m] for m in wanted)})"
    if all(matches):
        head = f"Our run ({run_setting(run)}) shows the paper's ordering{subset} on all three consistency measures"
    elif any(matches):
        n = sum(matches)
        head = (f"Our run ({run_setting(run)}) shows the paper's ordering{subset} on {n} of the three consistency "
                f"measures")
    else:
        head = f"Our run ({run_setting(run)}) does not show the paper's ordering{subset} on any consistency measure"
    tail = ("" if not overlaps else
            f" Neighbouring methods whose 95% intervals overlap (order not established at this sample size): "
            f"{'; '.join(overlaps)}.")
    return f"{head}. " + "; ".join(parts) + "." + tail


def summary_sentence(run: Run) -> str:
    """Which method is best on HR@5 and on LOC in a run (a computed sentence for the text)."""
    hr = _ordering(run, "hr@5")
    loc = _ordering(run, "loc")
    mad = _ordering(run, "exposure_mad@5")
    return (f"In our run ({run_setting(run)}), the highest HR@5 goes to {METHOD_LABELS.get(hr[0], hr[0])}, "
            f"the most consistent "
            f"outputs (LOC) to {METHOD_LABELS.get(loc[0], loc[0])} and the flattest exposure to "
            f"{METHOD_LABELS.get(mad[0], mad[0])}.")


# --------------------------------------------------------------------------------------------------
# scorer comparison and cost
# --------------------------------------------------------------------------------------------------
def scorer_comparison(runs: Sequence[Run], metrics: Sequence[str] = ("hr@5", "ndcg@5", "ppi", "gpi", "loc",
                                                                       "exposure_mad@5"),
                      digits: int = 3, styled: bool = True) -> Any | None:
    """Span vs choice scorer on the same (dataset, model, K), methods in common; ``None`` when the
    runs hold no such pair."""
    groups: dict[tuple, dict[str, Run]] = {}
    for r in runs:
        groups.setdefault((r.dataset, r.model, r.K), {})[r.scorer] = r
    records = []
    used = []
    for (dataset, model, K), by in groups.items():
        if "span" not in by or "choice" not in by:
            continue
        used += [by["span"], by["choice"]]
        common = [m for m in METHOD_ORDER if m in by["span"].methods and m in by["choice"].methods]
        for method in common:
            for scorer in ("span", "choice"):
                run = by[scorer]
                ov = run.metrics["methods"][method]["overall"]
                rec = {"dataset": dataset_label(dataset), "model": model_label(model), "K": K,
                       "method": METHOD_LABELS[method], "scorer": scorer, "queries": run.n_queries, "M": run.M}
                for m in metrics:
                    lo, hi = _ci_of(run, method, m)
                    rec[METRIC_LABELS.get(m, m)] = format_ci(ov.get(m), lo, hi, digits, html=styled)
                records.append(rec)
    if not records:
        return None
    df = pd.DataFrame.from_records(records).set_index(["dataset", "model", "K", "M", "queries", "method", "scorer"])
    caption = f"Span vs choice scorer: {setting_caption(used)}. Value [95% bootstrap interval over queries]."
    return _styled(df, caption) if styled else df


def cost_table(runs: Sequence[Run], styled: bool = True) -> Any:
    """Cost per run and method, from the manifests.

    Passes are exact and hardware-independent: the scorer passes each method requested (per presented
    order and in all; zero-shot 1, bootstrapping 3, SGS K, STELLA_LW up to 10) and STELLA_LW's calibration
    passes. The methods of a run share one pass cache, so the run's *distinct* passes are fewer; the
    persistent pass cache may also have served some of them from an earlier session. Seconds: the model's
    measured seconds per computed pass in the run's last session (``scorer_stats``), times the method's
    share of the run's distinct passes (plus calibration for STELLA_LW) — an estimate of what the method
    costs when nothing is cached; ``–`` when the session computed fewer than 10 passes.
    """
    records = []
    for run in runs:
        man = run.manifest
        passes = man.get("passes", {})
        per = passes.get("per_method", {})
        stats = (man.get("run") or {}).get("scorer_stats", {}) or {}
        computed = int(stats.get("forward_passes") or 0)
        seconds = float(stats.get("forward_seconds") or 0.0)
        s_per_pass = seconds / computed if computed >= 10 and seconds > 0 else None
        distinct = int(passes.get("scorer_calls") or 0)
        requested_all = sum(int(v.get("passes", 0)) for v in per.values()) or 1
        cal = passes.get("calibration") or {}
        cal_passes = sum(int(v.get("passes", 0)) for v in cal.values())
        cached = int(stats.get("cache_hits") or 0)
        calls = int(stats.get("calls") or 0)
        for method in run.methods:
            info = per.get(method, {})
            req = int(info.get("passes", 0))
            own_cal = cal_passes if method == "stella" else 0
            est = None if s_per_pass is None else round((distinct * req / requested_all + own_cal) * s_per_pass, 1)
            records.append({
                "model": model_label(run.model), "dataset": dataset_label(run.dataset), "scorer": run.scorer,
                "K": run.K, "M": run.M, "queries": run.n_queries, "method": METHOD_LABELS.get(method, method),
                "passes per order": info.get("per_order_mean"),
                "passes (requested)": req,
                "calibration passes": own_cal,
                "distinct passes in run": distinct,
                "from pass cache": f"{cached}/{calls}" if calls else "–",
                "s per computed pass": None if s_per_pass is None else round(s_per_pass, 2),
                "seconds (est.)": est,
            })
    df = _drop_constant_levels(pd.DataFrame.from_records(records).set_index(
        ["model", "dataset", "scorer", "K", "M", "queries", "method"]))
    caption = (f"Cost per method ({setting_caption(runs)}), from the run manifests. Passes are exact: every scorer "
               "call a method requested; one run's methods share a pass cache, so its distinct passes are fewer. "
               "Seconds are an estimate: the model's measured seconds per computed pass in the run's last session "
               "times the method's share of the distinct passes (plus calibration for STELLA_LW); they depend on "
               "the machine and its load, and read – when that session computed (almost) nothing itself.")
    if not styled:
        return df
    return _styled(df, caption).format({"passes per order": "{:.2f}", "s per computed pass": "{:.2f}",
                                        "seconds (est.)": "{:.0f}"}, na_rep="–")


# --------------------------------------------------------------------------------------------------
# what was scaled down
# --------------------------------------------------------------------------------------------------
def scale_table(runs: Sequence[Run], styled: bool = True) -> Any:
    """The paper's setting beside what our runs used (models, data, K, M, queries, calibration)."""
    def uniq(values: Iterable[Any]) -> str:
        vals = sorted(set(values), key=lambda v: (str(type(v)), v))
        return ", ".join(str(v) for v in vals) or "–"
    cal_q = [r.spec.get("calibration_queries") for r in runs if "stella" in r.methods and r.spec]
    cal_r = [r.spec.get("calibration_repeats") for r in runs if "stella" in r.methods and r.spec]
    rows = {
        "models": ("Llama-3.2-3B, Mistral-7B-v0.3, Qwen2.5-7B (Instruct)", uniq(model_label(r.model) for r in runs)),
        "datasets": ("MovieLens-32M, Amazon Books", uniq(dataset_label(r.dataset) for r in runs)),
        "scorer": ("log-probabilities, one pass per order", uniq(r.scorer for r in runs)),
        "list lengths K": ("15, 25, 50", uniq(r.K for r in runs)),
        "presented orders M": ("20", uniq(r.M for r in runs)),
        "queries per run": ("500", uniq(r.n_queries for r in runs)),
        "STELLA_LW calibration queries": ("up to 150", uniq(cal_q) if cal_q else "–"),
        "STELLA_LW calibration repeats": ("5", uniq(cal_r) if cal_r else "–"),
    }
    df = pd.DataFrame.from_dict(rows, orient="index", columns=["paper", "this book"])
    df.index.name = "setting"
    return _styled(df, "What the runs shown here used, beside the paper's setting.") if styled else df


# --------------------------------------------------------------------------------------------------
# helpers for the results notebook
# --------------------------------------------------------------------------------------------------
def html_escape(text: str) -> str:
    """HTML-escape a computed sentence before it is glued as HTML."""
    import html

    return html.escape(str(text))


def key(text: str) -> str:
    """A glue-key friendly form of a name (``ml-100k`` → ``ml_100k``)."""
    return "".join(c if c.isalnum() else "_" for c in str(text).lower())


def main_run(runs: Sequence[Run], name: str | None = None) -> Run:
    """The run that sets Table 1: the one called ``name`` when given (the grid file's main run), else the
    one with the most methods, then real over simulated scorers, span over choice, the most queries and
    the larger K."""
    if not runs:
        raise InvariRankError("no finished runs")
    if name:
        for r in runs:
            if r.name == name:
                return r
        raise InvariRankError(f"main run {name!r} is not among the finished runs ({', '.join(r.name for r in runs)})")
    return max(runs, key=lambda r: (len(r.methods), r.scorer != "simulated", r.scorer == "span", r.n_queries, r.K))


def sweep_runs(runs: Sequence[Run], main: Run) -> list[Run]:
    """The runs with the main run's data set, first stage, model and scorer, one per K (sorted by K)."""
    same = [r for r in runs if (r.dataset, r.retriever, r.model, r.scorer) ==
            (main.dataset, main.retriever, main.model, main.scorer)]
    by_k: dict[int, Run] = {}
    for r in same:
        if r.K not in by_k or (len(r.methods), r.n_queries) > (len(by_k[r.K].methods), by_k[r.K].n_queries):
            by_k[r.K] = r
    by_k[main.K] = main
    return [by_k[k] for k in sorted(by_k)]


def setting_groups(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Runs grouped by (data set, first stage, model, scorer), each group sorted by K; keys are display
    names (``Llama-3B on MovieLens-32M, span scorer``)."""
    out: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: (r.dataset, r.retriever, r.model, r.scorer, r.K)):
        label = f"{model_label(r.model)} on {dataset_label(r.dataset)} ({r.retriever}), {r.scorer} scorer"
        out.setdefault(label, []).append(r)
    return out


def other_grids(runs: Sequence[Run], grid: str) -> dict[str, list[Run]]:
    """Runs of grids other than ``grid``, grouped by grid (for the 'other grids' section)."""
    out: dict[str, list[Run]] = {}
    for r in runs:
        if r.grid != grid:
            out.setdefault(r.grid, []).append(r)
    return out


# --------------------------------------------------------------------------------------------------
# data and first stage
# --------------------------------------------------------------------------------------------------
_DATA_ROWS = [
    ("raw_users", "users (raw)"), ("raw_items", "items (raw)"), ("raw_interactions", "ratings (raw)"),
    ("users_dropped", "users below the minimum"), ("users", "users kept"), ("items", "items"),
    ("interactions", "ratings kept"), ("positives", "positives (rating ≥ 4)"), ("train", "train"),
    ("validation", "validation"), ("test", "test"), ("test_queries", "test queries"),
    ("validation_queries", "validation queries"),
]


def data_stats_table(stats: Mapping[str, Any], styled: bool = True) -> Any:
    """The prepared data set's counts (``stats.json`` of the data layer) as a two-column table."""
    rows = [(label, f"{int(stats[k]):,}") for k, label in _DATA_ROWS if k in stats]
    df = pd.DataFrame(rows, columns=["count", "value"]).set_index("count")
    caption = (f"{dataset_label(stats.get('dataset', '?'))}: {stats.get('split', '?')} split, at least "
               f"{stats.get('min_interactions', '?')} ratings per user, positives rating ≥ "
               f"{stats.get('positive_threshold', '?')}, histories of at most {stats.get('history_len', '?')} items.")
    return _styled(df, caption) if styled else df


def coverage_table(stats: Mapping[tuple[str, int], Mapping[str, Any]], dataset: str = "", styled: bool = True) -> Any:
    """First-stage coverage per (retriever, K): test queries kept / dropped, coverage@K, recall@K, nDCG@K
    (over all test queries), from the first stage's ``stats.json``."""
    records = []
    for (retriever, K), st in sorted(stats.items()):
        records.append({
            "first stage": retriever, "K": K, "test queries": st.get("test_queries"),
            "kept": st.get("queries_kept"), "dropped": st.get("queries_dropped"),
            "coverage@K": st.get(f"coverage@{K}"), "recall@K": st.get(f"recall@{K}"),
            "nDCG@K": st.get(f"ndcg@{K}"),
            "validation kept": (st.get("validation") or {}).get("queries_kept")})
    df = pd.DataFrame.from_records(records).set_index(["first stage", "K"])
    caption = (f"First-stage coverage on {dataset_label(dataset)}: a test query is kept only when its top-K holds a "
               f"ground-truth item; coverage, recall and nDCG are over all test queries.")
    if not styled:
        return df
    return _styled(df, caption).format({"coverage@K": "{:.3f}", "recall@K": "{:.3f}", "nDCG@K": "{:.3f}"})


def figure_training_loss(stats_by_retriever: Mapping[str, Mapping[str, Any]], dataset: str = ""):
    """The first stage's training loss per epoch (iteration), one line per retriever that records one."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.2))
    shown = False
    for retriever, st in stats_by_retriever.items():
        curve = [float(x) for x in (st.get("loss_curve") or [])]
        if curve:
            ax.plot(range(1, len(curve) + 1), curve, label=f"{retriever} ({st.get('train_seconds', 0):.0f} s)")
            shown = True
    if not shown:
        ax.text(0.5, 0.5, "no loss curve recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    ax.set_title(f"First-stage training on {dataset_label(dataset)}", fontsize=10)
    ax.grid(alpha=0.3)
    if shown:
        ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)   # shown once: by the cell's value or by glue, not again by the inline backend
    return fig
