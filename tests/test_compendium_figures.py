"""The one figure module (invarirank.compendium.figures), for the book and ``invarirank report``: the exposure
bands agree with metrics.json and are drawn as computed; metrics against K get one line style per setting; the
report writes both figures with it."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from invarirank import compendium as C
from invarirank.commands.report import FIGURE_EXPOSURE, FIGURE_METRIC_VS_K, report
from tests.compendium_runs import simulated_run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> C.Run:
    return simulated_run(tmp_path_factory.mktemp("fig"))


def test_exposure_bands_agree_with_metrics(run):
    bands = C.exposure_bands(run, n_bootstrap=50)
    for method in run.methods:
        b = bands[bands.method == method].sort_values("position")
        assert b.exposure.tolist() == pytest.approx(run.metrics["methods"][method]["overall"]["exposure@5"])
        assert b.expected.tolist() == pytest.approx(run.metrics["methods"][method]["overall"]["expected_exposure@5"])
        assert (b.low <= b.exposure + 1e-12).all() and (b.exposure <= b.high + 1e-12).all()


def test_figures_are_drawn(run):
    fig1 = C.figure_exposure([run], n_bootstrap=20)
    fig2 = C.figure_k_sweep([run])
    assert len(fig1.axes) == 1 and len(fig2.axes) == 2
    assert fig1.axes[0].get_title().startswith("K = 6")


def test_exposure_figure_plots_the_bands(run):
    bands = C.exposure_bands(run, n_bootstrap=30, seed=1)
    ax = C.figure_exposure([run], n_bootstrap=30, seed=1).axes[0]
    lines = {line.get_label(): line for line in ax.get_lines()}
    for method in run.methods:
        b = bands[bands.method == method]
        assert list(lines[C.METHOD_LABELS[method]].get_ydata()) == pytest.approx(b.exposure.tolist())
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    first = bands[bands.method == run.methods[0]]
    assert set(np.round(band, 12)) == set(np.round([*first.low, *first.high], 12))


def test_k_sweep_gives_each_setting_its_own_line_style(run):
    other = copy.deepcopy(run)
    other.scorer, other.name = "choice", "other"
    fig = C.figure_k_sweep([run, other], metrics=("ppi",))
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "zero-shot (simulated scorer)" in texts and "zero-shot (choice scorer)" in texts
    styles = {c.lines[0].get_linestyle() for c in fig.axes[0].containers}
    assert len(styles) == 2


def test_report_writes_both_figures_with_the_figure_module(run, tmp_path):
    text, paths = report([run.path], out=tmp_path)
    assert [p.name for p in paths] == [FIGURE_EXPOSURE, FIGURE_METRIC_VS_K]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert "summary" in text and run.name in text
