"""The teaching lab's precomputed sweep: its long table and its figure (metrics against the simulated position
bias's strength, per bias shape). Torch-free: numpy, pandas, matplotlib and the run folders only.

The sweep's runs (``results/lab/<shape>-s<strength>/``) are made by the grid from the ``lab:`` section of the grid
file, with the same runner as every other run, on synthetic candidates (:mod:`invarirank.data.synthetic`). The
lab's one call that computes, :func:`invarirank.runner.lab.live_run`, lives with the runner: the compendium only
reads finished runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..evaluation.comparisons import ALPHA, comparison
from ..store import Run

from .figures import method_colors
from .labels import METHODS, RUN_METRICS, method_label, metric_label
from .select import collect_runs
from .tables import metrics_frame
from .verdicts import fewest_queries

__all__ = ["sweep_frame", "figure_sweep", "planned_queries", "resolution_table"]


def sweep_frame(results_dir: str | Path, grid: str = "lab", metrics: Sequence[str] = RUN_METRICS) -> pd.DataFrame:
    """The lab sweep as a long table: bias shape, bias strength, method, metric, value, low, high (plus
    K, M, queries), from the finished runs under ``results_dir/<grid>/``."""
    runs = collect_runs(results_dir, grids=[grid], exclude=())
    if not runs:
        return pd.DataFrame(columns=["shape", "strength", "method", "metric", "value", "low", "high"])
    frames = []
    for run in runs:
        opts = (run.spec.get("scorer_options") or {})
        f = metrics_frame([run], metrics)
        f.insert(0, "shape", opts.get("bias_shape", "?"))
        f.insert(1, "strength", float(opts.get("bias_strength", float("nan"))))
        frames.append(f)
    return pd.concat(frames, ignore_index=True).sort_values(["shape", "strength", "method", "metric"],
                                                           ignore_index=True)


def figure_sweep(frame: pd.DataFrame, metrics: Sequence[str] = ("ppi", "gpi", "loc", "hr@5", "exposure_mad@5"),
                 shapes: Sequence[str] | None = None):
    """One row of panels per bias shape, one column per metric: the metric against the bias strength,
    one line per method with its 95% interval as a band."""
    import matplotlib.pyplot as plt

    shapes = list(shapes or dict.fromkeys(frame["shape"]))
    colors = method_colors()
    fig, axes = plt.subplots(len(shapes), len(metrics), figsize=(3.3 * len(metrics), 2.7 * len(shapes)),
                             squeeze=False, sharex=True)
    for i, shape in enumerate(shapes):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            sub = frame[(frame["shape"] == shape) & (frame.metric == metric)]
            for method in METHODS:
                s = sub[sub.method == method].sort_values("strength")
                if s.empty:
                    continue
                ax.plot(s.strength, s.value, marker="o", ms=3, color=colors[method], label=method_label(method))
                ax.fill_between(s.strength, s.low, s.high, color=colors[method], alpha=0.15, lw=0)
            if i == 0:
                ax.set_title(metric_label(metric), fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{shape} bias", fontsize=10)
            if i == len(shapes) - 1:
                ax.set_xlabel("bias strength (utility s.d.)")
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    k = sorted(set(frame.K)) if "K" in frame else []
    m = sorted(set(frame.M)) if "M" in frame else []
    q = sorted(set(frame.queries)) if "queries" in frame else []
    fig.suptitle(f"Simulated scorer: metrics against position-bias strength (K = {'/'.join(map(str, k))}, "
                 f"M = {'/'.join(map(str, m))}, {'/'.join(map(str, q))} queries per point)", fontsize=11)
    fig.tight_layout()
    plt.close(fig)   # shown once: by the cell's value, not again by the inline backend
    return fig


def planned_queries(run: Run, metric: str, better: str, worse: str, cap: int = 200) -> int:
    """The queries a fresh run needs to resolve ``better`` - ``worse`` on ``metric`` with 80% power, planned from
    ``run`` (a pilot): the comparison's ``queries_80`` (normal approximation from the pilot's mean difference and
    spread), at least the 6 queries the exact sign-flip test needs to reach p < 0.05 at all, at most ``cap``."""
    record = comparison(run.metrics["comparisons"], metric, better, worse)
    wanted = (record or {}).get("queries_80") or cap
    return int(min(max(wanted, fewest_queries(1)), cap))


def resolution_table(runs: Mapping[float, Mapping[str, Run]], metric: str, better: str, worse: str) -> pd.DataFrame:
    """Observed versus resolved: for each bias strength and each labelled run of it, the paired comparison of
    ``better`` - ``worse`` on ``metric`` (one pair, so no Holm correction): queries, mean difference [95% paired
    bootstrap interval], sign-flip p, resolved (p < 0.05) and the queries that would resolve it with 80% power."""
    records = []
    for strength, labelled in runs.items():
        for label, run in labelled.items():
            rec = comparison(run.metrics["comparisons"], metric, better, worse)
            ci = rec.get("ci")
            records.append({
                "bias strength": strength, "run": label, "queries": rec["n"],
                f"{method_label(better)} − {method_label(worse)}": f"{rec['mean_diff']:+.3f}"
                + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""),
                "p": round(rec["p"], 4), f"resolved (p < {ALPHA})": rec["p"] < ALPHA,
                "queries for 80% power": rec["queries_80"]})
    return pd.DataFrame.from_records(records).set_index(["bias strength", "run"])
