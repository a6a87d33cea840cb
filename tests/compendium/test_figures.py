"""The one figure module (invarirank.compendium._figures), for the book and ``invarirank report``: the exposure
bands agree with metrics.json and are drawn as computed; metrics against K get one line style per setting; the
report writes both figures with it."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from invarirank import compendium as C
from invarirank.commands._report import FIGURE_EXPOSURE, FIGURE_METRIC_VS_K, report


def test_exposure_bands_agree_with_metrics(simulated_run):
    bands = C.exposure_bands(simulated_run, n_bootstrap=50)
    for method in simulated_run.methods:
        b = bands[bands.method == method].sort_values("position")
        overall = simulated_run.metrics["methods"][method]["overall"]
        assert b.exposure.tolist() == pytest.approx(overall["exposure@5"])
        assert b.expected.tolist() == pytest.approx(overall["expected_exposure@5"])
        assert (b.low <= b.exposure + 1e-12).all() and (b.exposure <= b.high + 1e-12).all()


def test_figures_are_drawn(simulated_run):
    fig1 = C.figure_exposure([simulated_run], n_bootstrap=20)
    fig2 = C.figure_k_sweep([simulated_run])
    assert len(fig1.axes) == 1 and len(fig2.axes) == 2
    assert fig1.axes[0].get_title().startswith("K = 6")


def test_k_sweep_lines_plot_the_metrics_of_metrics_json(simulated_run):
    # one panel per metric (PPI, GPI), one line per method; its y values are metrics.json's overall values, read
    # here straight from the file's dictionary (not through the compendium's metrics frame)
    fig = C.figure_k_sweep([simulated_run])
    for ax, metric in zip(fig.axes, ("ppi", "gpi")):
        lines = {line.get_label(): line for line in ax.get_lines() if not line.get_label().startswith("_")}
        assert len(lines) == len(simulated_run.methods)  # a seaborn line each
        assert len(ax.containers) == len(simulated_run.methods)  # and its interval bars
        for method in simulated_run.methods:
            expected = simulated_run.metrics["methods"][method]["overall"][metric]
            line = lines[C.METHOD_LABELS[method]]
            assert list(line.get_ydata()) == pytest.approx([expected])
            assert list(line.get_xdata()) == pytest.approx([6], abs=0.5)  # K = 6, dodged sideways a little


def test_exposure_figure_plots_the_bands(simulated_run):
    bands = C.exposure_bands(simulated_run, n_bootstrap=30, seed=1)
    ax = C.figure_exposure([simulated_run], n_bootstrap=30, seed=1).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines() if len(line.get_ydata())}  # not legend proxies
    for method in simulated_run.methods:
        b = bands[bands.method == method]
        assert list(lines[C.METHOD_LABELS[method]].get_ydata()) == pytest.approx(b.exposure.tolist())
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    first = bands[bands.method == simulated_run.methods[0]]
    assert set(np.round(band, 12)) == set(np.round([*first.low, *first.high], 12))


def test_k_sweep_gives_each_setting_its_own_line_style(simulated_run):
    other = copy.deepcopy(simulated_run)
    other.scorer, other.name = "choice", "other"
    fig = C.figure_k_sweep([simulated_run, other], metrics=("ppi",))
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "zero-shot (simulated scorer)" in texts and "zero-shot (choice scorer)" in texts
    styles = {line.get_linestyle() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
    assert len(styles) == 2


def test_methods_get_colour_blind_safe_colours_and_distinct_markers(simulated_run):
    import seaborn as sns

    colors, markers = C.method_colors(), C._figures.method_markers()
    assert len(set(map(tuple, colors.values()))) == len(colors) == len(set(markers.values()))
    assert all(tuple(c) in {tuple(x) for x in sns.color_palette("colorblind", 10)} for c in colors.values())
    ax = C.figure_exposure([simulated_run], n_bootstrap=20).axes[0]
    drawn = {line.get_label(): line.get_marker() for line in ax.get_lines()}
    for method in simulated_run.methods:
        assert drawn[C.METHOD_LABELS[method]] == markers[method]


def test_figures_fit_the_page_and_slides_are_single_panels(simulated_run):
    from invarirank.compendium._figures import PAGE_WIDTH, slide_figure

    for fig in (C.figure_exposure([simulated_run] * 3, n_bootstrap=10), C.figure_k_sweep([simulated_run])):
        assert fig.get_size_inches()[0] <= PAGE_WIDTH + 1e-9
    slide = slide_figure(simulated_run, n_bootstrap=10)
    assert len(slide.axes) == 1 and slide.get_size_inches()[0] / slide.get_size_inches()[1] == pytest.approx(16 / 9)


def test_report_writes_both_figures_with_the_figure_module(simulated_run, tmp_path):
    text, paths = report([simulated_run.path], out=tmp_path)
    assert [p.name for p in paths] == [FIGURE_EXPOSURE, FIGURE_METRIC_VS_K]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert "summary" in text and simulated_run.name in text
    comparisons = text.split("summary", 1)[1]  # after the summary table: the comparisons and the verdicts
    assert "paired comparisons" in comparisons and "claims (Holm" in comparisons
    for name, verdict in C.run_claims(simulated_run).items():
        assert f"  {name}: {verdict['verdict']} (" in comparisons


def test_each_exposure_panel_is_scaled_to_its_own_curves(simulated_run):
    """At K = 50 every curve lies near 5/K = 0.1: on a fixed [0, 1] axis the methods could not be told apart (the
    K = 50 run page). Each panel runs from 0 to a little above its highest band, and holds every band."""
    bands = C.exposure_bands(simulated_run, n_bootstrap=30, seed=1)
    ax = C.figure_exposure([simulated_run], n_bootstrap=30, seed=1).axes[0]
    low, high = ax.get_ylim()
    assert low == 0 and high == pytest.approx(min(1.02, max(bands.high.max(), bands.expected.max()) * 1.12 + 0.01))
    flat = bands.assign(exposure=0.1, low=0.08, high=0.12, expected=0.1)
    assert C._figures.exposure_ylim(flat) == pytest.approx((0.0, 0.12 * 1.12 + 0.01))
    assert C._figures.exposure_ylim(bands.assign(high=1.0))[1] == 1.02
    wide = copy.deepcopy(simulated_run)
    wide.K = 12
    fig = C.figure_exposure([simulated_run, wide], n_bootstrap=30, seed=1)
    assert fig.axes[0].get_shared_y_axes().get_siblings(fig.axes[0]) == [fig.axes[0]]  # not shared
