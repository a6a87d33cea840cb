"""The teaching lab's precomputed sweep: its long table and its figure (metrics against the simulated position
bias's strength, per bias shape). Torch-free: numpy, pandas, matplotlib and the run folders only.

The sweep's runs (``results/lab/<shape>-s<strength>/``) are made by the grid from the ``lab:`` section of the grid
file, with the same runner as every other run, on synthetic candidates (:mod:`invarirank.data._synthetic`). The
lab's one call that computes, :func:`invarirank.runner._lab.live_run`, lives with the runner: the compendium only
reads finished runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..evaluation._comparisons import ALPHA, comparison
from ..methods.registry import LAB_CONTRAST
from ..store import Run
from ._figures import DPI, method_colors, method_markers
from ._labels import METHODS, RUN_METRICS, method_label, metric_label, p_value, signed
from ._select import collect_runs
from ._tables import metrics_frame, with_caption
from ._verdicts import fewest_queries, queries_needed


def sweep_frame(results_dir: str | Path, grid: str = "lab", metrics: Sequence[str] = RUN_METRICS) -> pd.DataFrame:
    """The lab sweep as a long table: bias shape, bias strength, method, metric, value, low, high (plus
    K, M, queries), from the finished runs under ``results_dir/<grid>/``."""
    runs = collect_runs(results_dir, grids=[grid], exclude=())
    if not runs:
        return pd.DataFrame(columns=["shape", "strength", "method", "metric", "value", "low", "high"])
    frames = []
    for run in runs:
        opts = run.spec.get("scorer_options") or {}
        f = metrics_frame([run], metrics)
        f.insert(0, "shape", opts.get("bias_shape", "?"))
        f.insert(1, "strength", float(opts.get("bias_strength", float("nan"))))
        frames.append(f)
    return pd.concat(frames, ignore_index=True).sort_values(
        ["shape", "strength", "method", "metric"], ignore_index=True
    )


def sweep_settings(results_dir: str | Path, grid: str = "lab") -> dict[str, float]:
    """The simulated scorer's noise σ (``noise_sd``) and relevance bonus r (``relevance``) of the sweep's runs, read
    from the scorer identity in their manifests (one value each when the runs agree; an error otherwise)."""
    from ..errors import InvariRankError

    runs = collect_runs(results_dir, grids=[grid], exclude=())
    if not runs:
        raise InvariRankError(f"lab sweep: no finished runs under {results_dir}/{grid}")
    out: dict[str, float] = {}
    for key in ("noise_sd", "relevance"):
        values = {float((r.manifest.get("model") or {}).get(key, -1.0)) for r in runs}
        if len(values) != 1 or -1.0 in values:
            raise InvariRankError(f"lab sweep under {results_dir}/{grid}: runs differ in {key} ({sorted(values)})")
        out[key] = values.pop()
    return out


def figure_sweep(
    frame: pd.DataFrame,
    metrics: Sequence[str] = ("ppi", "gpi", "loc", "hr@5", "exposure_mad@5"),
    shapes: Sequence[str] | None = None,
):
    """One column of panels per bias shape, one row per metric: the metric against the bias strength, one line
    and marker per method with its 95% interval as a band; sized for the page width (a slide takes
    :func:`slide_panel`)."""
    import matplotlib.pyplot as plt

    from ._figures import PAGE_WIDTH

    shapes = list(shapes or dict.fromkeys(frame["shape"]))
    colors, markers = method_colors(), method_markers()
    with plt.rc_context({"font.size": 8.5}):
        fig, axes = plt.subplots(
            len(metrics),
            len(shapes),
            figsize=(PAGE_WIDTH, 1.75 * len(metrics) + 0.9),
            squeeze=False,
            sharex=True,
            dpi=DPI,
        )
    for i, metric in enumerate(metrics):
        for j, shape in enumerate(shapes):
            ax = axes[i][j]
            sub = frame[(frame["shape"] == shape) & (frame.metric == metric)]
            for method in METHODS:
                s = sub[sub.method == method].sort_values("strength")
                if s.empty:
                    continue
                ax.plot(
                    s.strength, s.value, marker=markers[method], ms=4, color=colors[method], label=method_label(method)
                )
                ax.fill_between(s.strength, s.low, s.high, color=colors[method], alpha=0.15, lw=0)
            if i == 0:
                ax.set_title(f"{shape} bias", fontsize=9.5)
            if j == 0:
                ax.set_ylabel(metric_label(metric), fontsize=9)
            if i == len(metrics) - 1:
                ax.set_xlabel("bias strength (utility s.d.)", fontsize=9)
            ax.tick_params(labelsize=8)
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8.5, frameon=False)
    k = sorted(set(frame.K)) if "K" in frame else []
    m = sorted(set(frame.M)) if "M" in frame else []
    q = sorted(set(frame.queries)) if "queries" in frame else []
    fig.suptitle(
        f"Simulated scorer: metrics against position-bias strength (K = {'/'.join(map(str, k))}, "
        f"M = {'/'.join(map(str, m))}, {'/'.join(map(str, q))} queries per point)",
        fontsize=9.5,
    )
    fig.tight_layout(rect=(0, 0.35 / fig.get_size_inches()[1], 1, 1))
    plt.close(fig)  # shown once: by the cell's value, not again by the inline backend
    return fig


def slide_panel(frame: pd.DataFrame, metric: str = "ppi", shape: str = "primacy"):
    """One metric against the bias strength for one bias shape, alone on a 16:9 figure with 14-point text: a
    slide of the lab (one line and marker per method, its 95% interval as a band)."""
    import matplotlib.pyplot as plt

    colors, markers = method_colors(), method_markers()
    sub = frame[(frame["shape"] == shape) & (frame.metric == metric)]
    with plt.rc_context({"font.size": 14}):
        fig, ax = plt.subplots(figsize=(8, 4.5), dpi=DPI)
        for method in METHODS:
            s = sub[sub.method == method].sort_values("strength")
            if s.empty:
                continue
            ax.plot(
                s.strength,
                s.value,
                marker=markers[method],
                ms=7,
                lw=2,
                color=colors[method],
                label=method_label(method),
            )
            ax.fill_between(s.strength, s.low, s.high, color=colors[method], alpha=0.15, lw=0)
        ax.set_xlabel("bias strength (utility s.d.)")
        ax.set_ylabel(metric_label(metric))
        ax.set_title(f"Simulated {shape} bias: {metric_label(metric)}")
        ax.grid(alpha=0.3)
        ax.legend(frameon=True, framealpha=0.85, fontsize=12)
        fig.tight_layout()
    plt.close(fig)
    return fig


def planned_queries(run: Run, metric: str, better: str, worse: str, cap: int = 200) -> int:
    """The queries a fresh run needs to resolve ``better`` - ``worse`` on ``metric`` with 80% power, planned from
    ``run`` (a pilot): the comparison's ``queries_80`` (normal approximation from the pilot's mean difference and
    spread), at least the 6 queries the exact sign-flip test needs to reach p < 0.05 at all, at most ``cap``."""
    record = comparison(run.metrics["comparisons"], metric, better, worse)
    wanted = (record or {}).get("queries_80") or cap
    return int(min(max(wanted, fewest_queries(1)), cap))


def resolution_table(
    runs: Mapping[float, Mapping[str, Run]], metric: str, better: str, worse: str, *, styled: bool = True
) -> Any:
    """Observed versus resolved: for each bias strength and each labelled run of it, the paired comparison of
    ``better`` - ``worse`` on ``metric`` (one pair, so no Holm correction): queries, mean difference [95% paired
    bootstrap interval], sign-flip p with whether it resolves the pair (p < 0.05), and the queries that would resolve it
    with 80% power planned from that run, resolved or not (never fewer than the exact test needs at all): the pilot's
    is the size of the fresh run beside it. ``styled``: a captioned table like the book's others, else the frame."""
    records = []
    for strength, labelled in runs.items():
        for label, run in labelled.items():
            rec = comparison(run.metrics["comparisons"], metric, better, worse)
            ci = rec.get("ci")
            need = queries_needed(rec, 1)  # also for a resolved run: the pilot's row gives the fresh run's size
            records.append(
                {
                    "bias strength": strength,
                    "run": label,
                    "queries": rec["n"],
                    f"{method_label(better)} − {method_label(worse)}": signed(rec["mean_diff"])
                    + (f" [{signed(ci[0])}, {signed(ci[1])}]" if ci else ""),
                    "p": f"{p_value(rec['p'])} ({'resolved' if rec['p'] < ALPHA else 'not resolved'})",
                    "queries for 80% power": "–" if need is None else f"{need:,}",
                }
            )
    df = pd.DataFrame.from_records(records).set_index(["bias strength", "run"])
    if not styled:
        return df
    caption = (
        f"{method_label(better)} − {method_label(worse)} on {metric_label(metric)}, paired over queries: mean "
        f"difference [95% paired bootstrap interval], sign-flip p (resolved when p < {ALPHA}), and the queries that "
        f"would resolve it with 80% power, planned from each run."
    )
    return with_caption(df, caption)


def inversion_table(frame: pd.DataFrame, shape: str = "primacy") -> pd.DataFrame:
    """At every bias strength of ``shape``: bootstrapping's and SGS's PPI, GPI and LOC, each cell naming which of the
    two is better (lower PPI and GPI, higher LOC). The paper and our real runs find SGS better on all three."""
    records = []
    first, second = LAB_CONTRAST
    sub = frame[frame["shape"] == shape]
    for strength in sorted(set(sub.strength)):
        row: dict[str, object] = {"bias strength": strength}
        for metric, higher in (("ppi", False), ("gpi", False), ("loc", True)):
            vals = {
                m: sub[(sub.strength == strength) & (sub.metric == metric) & (sub.method == m)].value
                for m in LAB_CONTRAST
            }
            if any(v.empty for v in vals.values()):
                continue
            b, g = float(vals[first].iloc[0]), float(vals[second].iloc[0])
            better = (b > g) if higher else (b < g)
            row[f"{metric_label(metric)}: {method_label(first)} / {method_label(second)}"] = (
                f"{b:.3f} / {g:.3f} ({method_label(first if better else second)} better)"
            )
        records.append(row)
    return pd.DataFrame.from_records(records).set_index("bias strength")


def student_notebook(
    nb: dict,
    *,
    settings: Mapping[str, Any] | None = None,
    install: str = 'pip install "invarirank[lab]"',
    substitutions: Mapping[str, str] | None = None,
) -> dict:
    """The lab notebook for students: a copy of ``nb`` (nbformat JSON) without the worked answers — every
    ``{admonition} Worked answer`` block of a markdown cell and every code cell tagged ``hide-cell`` (the cells
    that compute the answers) are removed, outputs cleared, and a note heads the notebook.

    It must run where a student saves it, outside any clone: a first code cell says in one line what to run
    (``install``) when the kernel lacks a package the lab needs; ``settings`` (the grid file's ``lab:`` section)
    replaces ``lab_settings = None`` in the parameters cell, so the sweep can be computed where no results folder
    is (:func:`invarirank.grid._lab.sweep_results`); ``substitutions`` fills the book's ``{{ name }}`` MyST
    substitutions, which plain Jupyter would show as they are."""
    import copy
    import re

    out = copy.deepcopy(nb)
    cells = []
    block = re.compile(r"```\{admonition\} Worked answer.*?\n```[ \t]*\n?", re.S)
    for cell in out.get("cells", []):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.get("cell_type") == "code" and "hide-cell" in tags:
            continue
        text = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell.get("cell_type") == "markdown":
            text = block.sub("*Your answer:*\n", text).replace(
                "Each exercise has a worked answer, hidden until you open it.",
                "Write your answers below each exercise.",
            )
            for name, value in (substitutions or {}).items():
                text = re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", lambda _, v=value: v, text)
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
            if "parameters" in tags and settings is not None:
                text = re.sub(r"(?m)^lab_settings = None\b.*$", lambda _: f"lab_settings = {dict(settings)!r}", text)
        cell["source"] = text
        cells.append(cell)
    note = {
        "cell_type": "markdown",
        "id": "student-note",
        "metadata": {},
        "source": "*Student version of the teaching lab: the worked answers are removed (the book's lab page "
        "has them). It runs in any Jupyter where the cell below finds what it needs; outside a clone of the "
        "repository it computes the precomputed sweep itself, once.*",
    }
    check = {
        "cell_type": "code",
        "execution_count": None,
        "id": "student-install-check",
        "metadata": {},
        "outputs": [],
        "source": "import importlib.util\n\n"
        'missing = [m for m in ("invarirank", "jinja2") if importlib.util.find_spec(m) is None]\n'
        "if missing:\n"
        f"    raise ModuleNotFoundError(', '.join(missing) + {f' missing: run  {install}  and restart the kernel'!r})",
    }
    out["cells"] = [note, check] + cells
    return out
