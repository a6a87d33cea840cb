"""The figures, for the book and for ``invarirank report`` alike: top-k exposure by presented position (Figure 1),
metrics against the list length K (Figure 2), and the first stage's training loss.

Every interval drawn is a 95% percentile bootstrap interval over queries (none of them draws an exposure deviation,
whose interval is a basic one; the lab's sweep figure, :mod:`._lab`, does): the metric intervals are read from
``metrics.json``; the exposure bands are computed from the observations by
:func:`invarirank.evaluation._positional_exposure.exposure_band` (seeded, so a re-execution draws the same band).
Positions are 0-based presented positions. Methods keep one colour each across all figures (:func:`method_colors`),
in the paper's order. The lines are drawn with seaborn (``lineplot`` with ``errorbar=None``: the intervals are
precomputed and passed in, drawn with ``fill_between`` / ``errorbar``, never estimated by seaborn) in seaborn's
colour-blind-safe palette, with a distinct marker per method, so the methods stay apart in grey print too. Figures
are sized for the book's page width (about 7.5 inches at 150 dpi, 9-point text); :func:`slide_figure` draws one
panel alone, for slides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._io import atomic_path
from ..errors import InvariRankError
from ..evaluation._positional_exposure import exposure_band
from ..store import Run
from ._labels import (
    HIGHER_IS_BETTER,
    METHODS,
    dataset_label,
    method_label,
    metric_label,
    model_label,
    simulated_setting,
)
from ._tables import metrics_frame

#: panels per row before a figure wraps to the next row
_MAX_COLUMNS = 3
#: the page width the figures are drawn for (inches) and their resolution
PAGE_WIDTH = 7.5
DPI = 150
#: one marker per method, in the paper's order (zero-shot, bootstrapping, STELLA_LW, SGS)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_RC = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8.5,
    "ytick.labelsize": 8.5,
    "legend.fontsize": 8.5,
}


def method_colors() -> dict[str, Any]:
    """One colour per registered method, in the paper's order, from seaborn's colour-blind-safe palette."""
    import seaborn as sns

    palette = sns.color_palette("colorblind", n_colors=10)
    picked = [palette[i] for i in (0, 1, 2, 4, 3, 5, 6, 8, 9)]  # blue, orange, green, pink: apart in every kind
    return {m: picked[i % len(picked)] for i, m in enumerate(METHODS)}


def method_markers() -> dict[str, str]:
    """One marker per registered method, in the paper's order (circle, square, triangle, diamond, ...)."""
    return {m: _MARKERS[i % len(_MARKERS)] for i, m in enumerate(METHODS)}


def exposure_bands(
    run: Run, k: int = 5, n_bootstrap: int = 1000, seed: int = 0, rows: list[dict] | None = None
) -> pd.DataFrame:
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
    """A figure of ``n`` panels, at most :data:`_MAX_COLUMNS` per row (unused ones hidden), ``width`` inches per
    panel but never wider than :data:`PAGE_WIDTH` in all."""
    import matplotlib.pyplot as plt

    cols = min(n, _MAX_COLUMNS)
    rows = -(-n // cols)
    total = min(width * cols, PAGE_WIDTH)
    with plt.rc_context(_RC):
        fig, axes = plt.subplots(rows, cols, figsize=(total, height * rows), squeeze=False, dpi=DPI, **kw)
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
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    # the methods first, in their order; reference lines (the position-blind expectation) last
    handles = dict(sorted(handles.items(), key=lambda kv: kv[0].startswith("position-blind")))
    ncol = min(len(handles), 5)
    rows = -(-len(handles) // max(ncol, 1))
    fig.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=ncol,
        fontsize=_RC["legend.fontsize"],
        frameon=False,
    )
    fig.suptitle(title, fontsize=10)
    height = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, min(0.3 * rows / height, 0.4), 1, 1))
    plt.close(fig)
    return fig


def _style_axes(ax: Any) -> None:
    for item in [ax.title, ax.xaxis.label, ax.yaxis.label]:
        item.set_fontsize(_RC["axes.labelsize"])
    ax.tick_params(labelsize=_RC["xtick.labelsize"])
    ax.grid(alpha=0.3)


def _setting(run: Run) -> tuple[str, str, str]:
    return (run.model, run.dataset, run.scorer)


def _differing(setting: tuple[str, str, str], settings: Sequence[tuple[str, str, str]]) -> str:
    """The parts of ``setting`` (model, data set, scorer) in which ``settings`` differ, as display text."""
    shown = (model_label(setting[0]), dataset_label(setting[1]), f"{setting[2]} scorer")
    return ", ".join(text for i, text in enumerate(shown) if len({s[i] for s in settings}) > 1)


def _setting_text(run: Run) -> str:
    """Model, data set and scorer for a figure's title (a simulated run: "the simulated scorer on synthetic
    candidate sets", not "simulated, synthetic, simulated scorer")."""
    if run.scorer == "simulated":
        return simulated_setting(run)
    return f"{model_label(run.model)}, {dataset_label(run.dataset)}, {run.scorer} scorer"


def figure_exposure(runs: Sequence[Run], k: int = 5, n_bootstrap: int = 1000, seed: int = 0):
    """Figure 1: top-k exposure by presented position, one panel per run (sorted by K), one line per method with
    its 95% bootstrap band, and the position-blind expectation min(k, K)/K dashed. Runs with K <= k (every
    candidate in the top k) are left out when others remain. Runs of one setting (model, data set, scorer) name it
    in the title. Runs of several settings, one run each per K and at most three list lengths in all (the results
    page's Table 1 of two models), get one row of panels per setting, in the order given, and one column per K: a
    setting's row has panels only at its own list lengths, and panels of one K share their y range, so that the
    models compare at a glance; otherwise each panel names its own setting."""
    given = list(dict.fromkeys(_setting(r) for r in runs))
    runs = sorted(runs, key=lambda r: r.K)
    if not runs:
        raise InvariRankError("figure_exposure: no runs")
    runs = [r for r in runs if r.K > k] or runs
    settings = [s for s in given if any(_setting(r) == s for r in runs)]
    ks = sorted({r.K for r in runs})
    cells = {(_setting(r), r.K) for r in runs}
    if len(settings) > 1 and len(cells) == len(runs) and len(ks) <= _MAX_COLUMNS:
        return _exposure_grid(runs, settings, ks, k, n_bootstrap, seed)
    one_setting = len(settings) == 1
    fig, axes = _panels(
        len(runs), 5.0 if len(runs) == 1 else PAGE_WIDTH / min(len(runs), _MAX_COLUMNS), 3.0, sharey=False
    )  # each K its own scale: 5/K is 0.33 at K = 15, 0.1 at K = 50
    for ax, run in zip(axes, runs):
        bands = exposure_bands(run, k=k, n_bootstrap=n_bootstrap, seed=seed)
        _draw_exposure(ax, run, bands, k)
        panel = f"K = {run.K} (M = {run.M}, {run.n_queries} queries)"
        ax.set_title(panel if one_setting else f"{_setting_text(run)}\n{panel}")
        _style_axes(ax)
    for ax in axes[::_MAX_COLUMNS]:
        ax.set_ylabel(f"top-{k} exposure $E_{k}(p)$")
    setting = f": {_setting_text(runs[0])}" if one_setting else ""
    return _finish(fig, axes, f"Top-{k} exposure by input position{setting}")


def _exposure_grid(
    runs: Sequence[Run], settings: Sequence[tuple[str, str, str]], ks: Sequence[int], k: int, n_bootstrap: int,
    seed: int,
) -> Any:  # fmt: skip
    """Figure 1 of several settings: a row per setting, a column per K (see :func:`figure_exposure`)."""
    import matplotlib.pyplot as plt

    cols, rows = len(ks), len(settings)
    with plt.rc_context(_RC):
        fig, grid = plt.subplots(
            rows, cols, figsize=(min(2.5 * cols, PAGE_WIDTH) if cols > 1 else 5.0, 3.0 * rows), squeeze=False,
            dpi=DPI,
        )  # fmt: skip
    drawn, tops = [], {}
    for i, setting in enumerate(settings):
        for j, K in enumerate(ks):
            ax = grid[i][j]
            run = next((r for r in runs if _setting(r) == setting and r.K == K), None)
            if run is None:
                ax.set_visible(False)
                continue
            bands = exposure_bands(run, k=k, n_bootstrap=n_bootstrap, seed=seed)
            _draw_exposure(ax, run, bands, k)
            tops[K] = max(tops.get(K, 0.0), exposure_ylim(bands)[1])
            ax.set_title(f"{_differing(setting, settings)}\nK = {run.K} (M = {run.M}, {run.n_queries} queries)")
            if not any(a.get_visible() for a in grid[i][:j]):
                ax.set_ylabel(f"top-{k} exposure $E_{k}(p)$")
            _style_axes(ax)
            drawn.append((ax, K))
    for ax, K in drawn:  # one y range per list length: the models' panels at one K compare directly
        ax.set_ylim(0.0, tops[K])
    shared = [
        text
        for i, text in enumerate((None, dataset_label(settings[0][1]), f"{settings[0][2]} scorer"))
        if text and len({s[i] for s in settings}) == 1
    ]
    title = f"Top-{k} exposure by input position" + (f": {', '.join(shared)}" if shared else "")
    return _finish(fig, [ax for ax, _ in drawn], title)


def _draw_exposure(ax: Any, run: Run, bands: pd.DataFrame, k: int) -> None:
    """One panel of Figure 1: a seaborn line and marker per method, its precomputed band, the expectation."""
    import seaborn as sns

    colors, markers = method_colors(), method_markers()
    for method in run.methods:
        b = bands[bands.method == method]
        sns.lineplot(
            x=b.position.to_numpy(),
            y=b.exposure.to_numpy(),
            color=colors[method],
            marker=markers[method],
            markersize=5,
            linewidth=1.4,
            label=method_label(method),
            errorbar=None,
            ax=ax,
        )
        ax.fill_between(b.position, b.low, b.high, color=colors[method], alpha=0.15, lw=0)
    expected = bands[bands.method == run.methods[0]]
    ax.plot(expected.position, expected.expected, ls="--", color="0.3", lw=1, label=f"position-blind ({k}/K)")
    ax.set_xlabel("input position p (0-based)")
    ax.set_ylim(*exposure_ylim(bands))


def exposure_ylim(bands: pd.DataFrame) -> tuple[float, float]:
    """A panel's y range: from 0 to a little above its highest band or expectation (at most 1.02), so that the
    curves of a long list, all near 5/K, fill the panel instead of a strip at the bottom of [0, 1]."""
    top = float(
        np.nanmax(
            np.r_[
                bands.high.to_numpy(dtype=float),
                bands.exposure.to_numpy(dtype=float),
                bands.expected.to_numpy(dtype=float),
            ]
        )
    )
    return 0.0, min(1.02, top * 1.12 + 0.01)


def slide_figure(run: Run, k: int = 5, n_bootstrap: int = 1000, seed: int = 0):
    """One run's top-k exposure by input position as a single panel for a slide (16:9, 14-point text)."""
    import matplotlib.pyplot as plt

    with plt.rc_context({key: 14 for key in _RC}):
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=DPI)
        _draw_exposure(ax, run, exposure_bands(run, k=k, n_bootstrap=n_bootstrap, seed=seed), k)
        ax.set_ylabel(f"top-{k} exposure")
        ax.set_title(f"K = {run.K}, M = {run.M}, {run.n_queries} queries")
        ax.grid(alpha=0.3)
        ax.legend(loc="best", frameon=False)
        fig.tight_layout()
    plt.close(fig)
    return fig


def figure_k_sweep(runs: Sequence[Run], metrics: Sequence[str] = ("ppi", "gpi")):
    """Figure 2: PPI and GPI (by default; any metrics of ``metrics.json``) across K, one panel per metric, one
    line per method with its 95% interval as error bars (dodged sideways so that they stay apart). Methods appear
    at the Ks where they were run. Runs of several settings (model, data set, scorer) get one line style each."""
    if not runs:
        raise InvariRankError("figure_k_sweep: no runs")
    frame = metrics_frame(runs, metrics)
    settings = list(dict.fromkeys(_setting(r) for r in runs))
    by_setting = {s: [r.name for r in runs if _setting(r) == s] for s in settings}
    import seaborn as sns

    colors, markers = method_colors(), method_markers()
    fig, axes = _panels(len(metrics), 3.75, 3.0)
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
                label = (
                    method_label(method)
                    if len(settings) == 1
                    else f"{method_label(method)} ({_differing(setting, settings)})"
                )
                sns.lineplot(
                    x=s.K + dodge,
                    y=s.value,
                    marker=markers[method],
                    markersize=6,
                    linewidth=1.4,
                    linestyle=("-", "--", ":", "-.")[si % 4],
                    color=colors[method],
                    label=label,
                    errorbar=None,
                    ax=ax,
                )
                ax.errorbar(s.K + dodge, s.value, yerr=yerr, fmt="none", capsize=3, lw=1.2, color=colors[method])
        ax.set_xlabel("list length K")
        lower = not HIGHER_IS_BETTER.get(metric, True)
        ax.set_ylabel(metric_label(metric) + (" (lower is better)" if lower else ""))
        ax.set_xticks(sorted(sub.K.unique()))
        _style_axes(ax)
    r0 = runs[0]
    setting = f"{_setting_text(r0)}, " if len(settings) == 1 else ""
    names = [metric_label(m) for m in metrics]
    names = " and ".join(names) if len(names) <= 2 else f"{', '.join(names[:-1])} and {names[-1]}"
    return _finish(
        fig,
        axes,
        f"{names} across K: {setting}"
        f"M = {'/'.join(map(str, sorted({r.M for r in runs})))}, "
        f"{'/'.join(map(str, sorted({r.n_queries for r in runs})))} queries",
    )


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
    plt.close(fig)  # shown once: by the cell's value or by glue, not again by the inline backend
    return fig
