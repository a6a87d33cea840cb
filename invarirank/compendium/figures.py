"""The figures, for the book and for ``invarirank report`` alike: top-k exposure by presented position (Figure 1),
metrics against the list length K (Figure 2), and the first stage's training loss.

Every interval drawn is a 95% percentile bootstrap interval over queries: the metric intervals are read from
``metrics.json``; the exposure bands are computed from the observations by
:func:`invarirank.evaluation.exposure.exposure_band` (seeded, so a re-execution draws the same band). Positions are
0-based presented positions. Methods keep one colour each across all figures (:func:`method_colors`), in the
paper's order. The intervals are precomputed, so the lines are drawn with matplotlib's ``fill_between`` /
``errorbar`` rather than seaborn's plotting functions, which would estimate intervals of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import InvariRankError
from ..evaluation.exposure import exposure_band
from ..io import atomic_path
from ..store import Run
from .labels import HIGHER_IS_BETTER, METHODS, dataset_label, method_label, metric_label, model_label
from .tables import metrics_frame

__all__ = ["method_colors", "exposure_bands", "figure_exposure", "figure_k_sweep", "figure_training_loss",
           "save_png"]

#: panels per row before a figure wraps to the next row
_MAX_COLUMNS = 3


def method_colors() -> dict[str, Any]:
    """One colour per registered method (the current matplotlib colour cycle, in the paper's order)."""
    import matplotlib.pyplot as plt

    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2", "C3"])
    return {m: cycle[i % len(cycle)] for i, m in enumerate(METHODS)}


def exposure_bands(run: Run, k: int = 5, n_bootstrap: int = 1000, seed: int = 0,
                   rows: list[dict] | None = None) -> pd.DataFrame:
    """E_k(p) per method and presented position p, with a 95% bootstrap band over queries.

    Columns: method, position (0-based), exposure, low, high, expected. ``exposure`` equals the run's
    ``metrics.json`` value (pooled over rows); the band resamples queries with replacement.
    """
    if rows is None:
        from ..evaluation import read_observations

        rows = read_observations(run.observations)
    out = []
    for method in run.methods:
        band = exposure_band([r for r in rows if r["method"] == method], k=k, n_bootstrap=n_bootstrap, seed=seed)
        out.append(pd.DataFrame({"method": method, "position": np.arange(len(band["exposure"])), **band}))
    return pd.concat(out, ignore_index=True)


def _panels(n: int, width: float, height: float, **kw: Any) -> tuple[Any, list[Any]]:
    """A figure of ``n`` panels, at most :data:`_MAX_COLUMNS` per row (unused ones hidden)."""
    import matplotlib.pyplot as plt

    cols = min(n, _MAX_COLUMNS)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False, **kw)
    flat = list(axes.flat)
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _finish(fig: Any, axes: Sequence[Any], title: str) -> Any:
    """One legend under the figure for the labelled lines of all ``axes`` (each label once), the title, and the
    figure closed (shown once: by the cell's value or by glue, not again by the inline backend)."""
    import matplotlib.pyplot as plt

    handles: dict[str, Any] = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(len(handles), 6), fontsize=9,
               frameon=False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.close(fig)
    return fig


def _setting(run: Run) -> tuple[str, str, str]:
    return (run.model, run.dataset, run.scorer)


def _differing(setting: tuple[str, str, str], settings: Sequence[tuple[str, str, str]]) -> str:
    """The parts of ``setting`` (model, data set, scorer) in which ``settings`` differ, as display text."""
    shown = (model_label(setting[0]), dataset_label(setting[1]), f"{setting[2]} scorer")
    return ", ".join(text for i, text in enumerate(shown) if len({s[i] for s in settings}) > 1)


def _setting_text(run: Run) -> str:
    return f"{model_label(run.model)}, {dataset_label(run.dataset)}, {run.scorer} scorer"


def figure_exposure(runs: Sequence[Run], k: int = 5, n_bootstrap: int = 1000, seed: int = 0):
    """Figure 1: top-k exposure by presented position, one panel per run (sorted by K), one line per method with
    its 95% bootstrap band, and the position-blind expectation min(k, K)/K dashed. Runs with K <= k (every
    candidate in the top k) are left out when others remain. Runs of one setting (model, data set, scorer) name it
    in the title; otherwise each panel names its own."""
    runs = sorted(runs, key=lambda r: r.K)
    if not runs:
        raise InvariRankError("figure_exposure: no runs")
    runs = [r for r in runs if r.K > k] or runs
    one_setting = len({_setting(r) for r in runs}) == 1
    colors = method_colors()
    fig, axes = _panels(len(runs), 6.0 if len(runs) == 1 else 4.8, 4.0, sharey=True)
    for ax, run in zip(axes, runs):
        bands = exposure_bands(run, k=k, n_bootstrap=n_bootstrap, seed=seed)
        for method in run.methods:
            b = bands[bands.method == method]
            ax.plot(b.position, b.exposure, marker="o", ms=3, lw=1.5, color=colors.get(method),
                    label=method_label(method))
            ax.fill_between(b.position, b.low, b.high, color=colors.get(method), alpha=0.15, lw=0)
        expected = bands[bands.method == run.methods[0]]
        ax.plot(expected.position, expected.expected, ls="--", color="0.3", lw=1, label=f"position-blind ({k}/K)")
        panel = f"K = {run.K} (M = {run.M}, {run.n_queries} queries)"
        ax.set_title(panel if one_setting else f"{_setting_text(run)}\n{panel}", fontsize=10)
        ax.set_xlabel("input position p (0-based)")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[::_MAX_COLUMNS]:
        ax.set_ylabel(f"top-{k} exposure $E_{k}(p)$")
    setting = f": {_setting_text(runs[0])}" if one_setting else ""
    return _finish(fig, axes, f"Top-{k} exposure by input position{setting}")


def figure_k_sweep(runs: Sequence[Run], metrics: Sequence[str] = ("ppi", "gpi")):
    """Figure 2: PPI and GPI (by default; any metrics of ``metrics.json``) across K, one panel per metric, one
    line per method with its 95% interval as error bars (dodged sideways so that they stay apart). Methods appear
    at the Ks where they were run. Runs of several settings (model, data set, scorer) get one line style each."""
    if not runs:
        raise InvariRankError("figure_k_sweep: no runs")
    frame = metrics_frame(runs, metrics)
    settings = list(dict.fromkeys(_setting(r) for r in runs))
    by_setting = {s: [r.name for r in runs if _setting(r) == s] for s in settings}
    colors = method_colors()
    fig, axes = _panels(len(metrics), 5.2, 4.0)
    for ax, metric in zip(axes, metrics):
        sub = frame[frame.metric == metric]
        span = max(float(sub.K.max() - sub.K.min()), 1.0)
        for si, setting in enumerate(settings):
            of_setting = sub[sub.run.isin(by_setting[setting])]
            for method in [m for m in METHODS if m in set(of_setting.method)]:
                s = of_setting[of_setting.method == method].sort_values("K")
                yerr = np.vstack([s.value - s.low, s.high - s.value])
                yerr = np.where(np.isnan(yerr), 0, yerr)
                dodge = (METHODS.index(method) - 1.5 + 4 * si) * 0.012 * span
                label = method_label(method) if len(settings) == 1 else \
                    f"{method_label(method)} ({_differing(setting, settings)})"
                ax.errorbar(s.K + dodge, s.value, yerr=yerr, marker="o", ms=4, capsize=3, lw=1.5,
                            ls=("-", "--", ":", "-.")[si % 4], color=colors.get(method), label=label)
        ax.set_xlabel("list length K")
        lower = not HIGHER_IS_BETTER.get(metric, True)
        ax.set_ylabel(metric_label(metric) + (" (lower is better)" if lower else ""))
        ax.set_xticks(sorted(sub.K.unique()))
        ax.grid(alpha=0.3)
    r0 = runs[0]
    setting = f"{_setting_text(r0)}, " if len(settings) == 1 else ""
    names = [metric_label(m) for m in metrics]
    names = " and ".join(names) if len(names) <= 2 else f"{', '.join(names[:-1])} and {names[-1]}"
    return _finish(fig, axes, f"{names} across K: {setting}"
                              f"M = {'/'.join(map(str, sorted({r.M for r in runs})))}, "
                              f"{'/'.join(map(str, sorted({r.n_queries for r in runs})))} queries")


def save_png(fig: Any, path: str | Path) -> Path:
    """Write ``fig`` as a PNG atomically (no timestamp in the file, so the same figure gives the same bytes)."""
    with atomic_path(Path(path)) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
    return Path(path)


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
