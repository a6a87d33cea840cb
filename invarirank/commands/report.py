"""``invarirank report RUN_DIR [RUN_DIR ...]``: see finished runs without opening a notebook.

Prints, for every run folder, a one-line description and the metrics table of its ``metrics.json``
(:func:`invarirank.evaluation.format_table`), then one summary table over all runs; writes two
seaborn figures into ``--out`` (default: the first RUN_DIR):

* ``exposure_by_position.png`` — top-k exposure E_k(p) by 0-based presented position, one line per
  method, one panel per run, with the expected value (dashed);
* ``metric_vs_k.png`` — HR@k, nDCG@k, PPI, GPI and LOC against K, one line per method (and one line
  style per model/data set/scorer when the runs differ in those), one panel per metric.

Python: :func:`report` returns the printed text and the figure paths.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from ..errors import InvariRankError

__all__ = ["register", "run", "report", "load_run"]

FIGURE_EXPOSURE = "exposure_by_position.png"
FIGURE_METRIC_VS_K = "metric_vs_k.png"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report", help="print the metrics of run folders and draw exposure and metric-vs-K figures",
        description="Print the metrics table of each run folder (written by `invarirank rerank`) and write "
                    f"{FIGURE_EXPOSURE} and {FIGURE_METRIC_VS_K} (seaborn) into --out (default: the first run).")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (each with metrics.json)")
    p.add_argument("--out", metavar="DIR", help="folder for the figures (default: the first RUN_DIR)")
    p.add_argument("--no-figures", action="store_true", help="only print the tables")
    p.set_defaults(func=run)


def load_run(run_dir: str | Path) -> dict[str, Any]:
    """A run folder's metrics and (if present) manifest, with a label, K, model, data set and scorer."""
    from ..io import read_json
    d = Path(run_dir)
    if not d.is_dir():
        raise InvariRankError(f"{d}: no such run folder")
    mpath = d / "metrics.json"
    if not mpath.is_file():
        raise InvariRankError(f"{d}: no metrics.json (is the run finished? rerun `invarirank rerank` to resume it)")
    try:
        metrics = read_json(mpath)
        manifest = read_json(d / "manifest.json") if (d / "manifest.json").is_file() else {}
    except ValueError as exc:
        raise InvariRankError(f"{mpath}: malformed JSON ({exc})") from None
    if not isinstance(metrics, dict) or "methods" not in metrics:
        raise InvariRankError(f"{mpath}: not a metrics file (no 'methods')")
    ks = (manifest.get("queries") or {}).get("k")
    if not ks:
        ks = sorted({int(q.get("candidates")) for block in metrics["methods"].values()
                     for q in block.get("per_query", {}).values() if q.get("candidates")})
    cfg = manifest.get("config") or {}
    ident = manifest.get("model") or {}
    model = str(ident.get("model") or cfg.get("model") or cfg.get("scorer") or "?")
    dataset = (manifest.get("data") or {}).get("dataset") or cfg.get("dataset") or (
        Path(cfg["candidates"]).name if cfg.get("candidates") else "?")
    scorer = str(cfg.get("scorer") or ident.get("scorer") or "?")
    return {"dir": d, "label": d.name or str(d), "metrics": metrics, "manifest": manifest,
            "k": max(ks) if ks else None, "ks": ks, "model": model, "dataset": str(dataset), "scorer": scorer,
            "m": cfg.get("m"), "queries": (manifest.get("queries") or {}).get("count")}


def _summary_table(runs: Sequence[dict[str, Any]]) -> str:
    cols = ["hr@5", "ndcg@5", "ppi", "gpi", "loc", "exposure_mad@5"]
    header = f"{'run':<24}{'K':>4}  {'method':<14}" + "".join(f"{c:>15}" for c in cols)
    lines = [header, "-" * len(header)]
    for r in runs:
        for method, block in r["metrics"]["methods"].items():
            ov = block["overall"]
            vals = []
            for c in cols:
                v = ov.get(c)
                vals.append(f"{v:>15.4f}" if isinstance(v, (int, float)) else f"{'-':>15}")
            lines.append(f"{r['label'][:23]:<24}{str(r['k'] or '-'):>4}  {method:<14}" + "".join(vals))
    return "\n".join(lines)


def _exposure_frame(runs: Sequence[dict[str, Any]]):
    import pandas as pd
    records = []
    for r in runs:
        for method, block in r["metrics"]["methods"].items():
            ov = block["overall"]
            key = next((k for k in ov if k.startswith("exposure@") and isinstance(ov[k], list)), None)
            if key is None:
                continue
            e = key.split("@", 1)[1]
            expected = ov.get(f"expected_exposure@{e}") or [None] * len(ov[key])
            for p, (v, x) in enumerate(zip(ov[key], expected)):
                records.append({"run": r["label"], "method": method, "position": p, "exposure": v,
                                "expected": x, "top_k": int(e)})
    return pd.DataFrame.from_records(records)


def _metric_frame(runs: Sequence[dict[str, Any]]):
    import pandas as pd
    records = []
    for r in runs:
        if r["k"] is None:
            continue
        series = f"{r['model']} / {r['dataset']} / {r['scorer']}"
        for method, block in r["metrics"]["methods"].items():
            ov = block["overall"]
            hr = next((k for k in ("hr@5", "hr@10", "hr@1") if k in ov), None)
            nd = next((k for k in ("ndcg@5", "ndcg@10", "ndcg@1") if k in ov), None)
            for name in (hr, nd, "ppi", "gpi", "loc"):
                if name and isinstance(ov.get(name), (int, float)):
                    records.append({"K": r["k"], "method": method, "metric": name.upper() if name in
                                    ("ppi", "gpi", "loc") else name, "value": float(ov[name]), "series": series})
    return pd.DataFrame.from_records(records)


def _save(fig: Any, path: Path) -> None:
    from ..io import atomic_path
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})


def draw_figures(runs: Sequence[dict[str, Any]], out: Path) -> list[Path]:
    """Write the two figures into ``out``; return their paths."""
    import matplotlib
    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    sns.set_theme(style="whitegrid", context="notebook")

    exp = _exposure_frame(runs)
    if not exp.empty:
        g = sns.relplot(data=exp, x="position", y="exposure", hue="method", col="run", kind="line", marker="o",
                        col_wrap=min(3, exp["run"].nunique()), height=3.4, aspect=1.3, facet_kws={"sharex": False})
        for run_label, ax in g.axes_dict.items():
            sub = exp[(exp["run"] == run_label)].drop_duplicates("position").sort_values("position")
            if sub["expected"].notna().any():
                ax.plot(sub["position"], sub["expected"], ls="--", color="0.3", lw=1, label="expected")
            ax.set_xlabel("presented position p (0-based)")
            ax.set_ylabel(f"top-{int(sub['top_k'].iloc[0])} exposure")
        g.figure.suptitle("Exposure by presented position (dashed: expected without position bias)", y=1.03)
        path = out / FIGURE_EXPOSURE
        _save(g.figure, path)
        plt.close(g.figure)
        paths.append(path)

    met = _metric_frame(runs)
    if not met.empty:
        style = "series" if met["series"].nunique() > 1 else None
        g = sns.relplot(data=met, x="K", y="value", hue="method", style=style, col="metric", kind="line",
                        marker="o", col_wrap=min(5, met["metric"].nunique()), height=3.0, aspect=1.0,
                        facet_kws={"sharey": False})
        for ax in g.axes.flat:
            ax.set_xticks(sorted(met["K"].unique()))
        g.figure.suptitle("Metrics against the number of candidates K", y=1.04)
        path = out / FIGURE_METRIC_VS_K
        _save(g.figure, path)
        plt.close(g.figure)
        paths.append(path)
    return paths


def report(run_dirs: Sequence[str | Path], out: str | Path | None = None, figures: bool = True
           ) -> tuple[str, list[Path]]:
    """The printed report for ``run_dirs`` and the written figure paths (see the module docstring)."""
    from ..evaluation import format_table
    if not run_dirs:
        raise InvariRankError("report: give at least one RUN_DIR")
    runs = [load_run(d) for d in run_dirs]
    parts = []
    for r in runs:
        parts.append(f"== {r['dir']}: model {r['model']}, data {r['dataset']}, scorer {r['scorer']}, "
                     f"K={','.join(map(str, r['ks'] or ['?']))}, M={r['m'] if r['m'] is not None else '?'}, "
                     f"{r['queries'] if r['queries'] is not None else '?'} queries")
        parts.append(format_table(r["metrics"]).rstrip())
        parts.append("")
    parts.append("summary")
    parts.append(_summary_table(runs))
    paths = draw_figures(runs, Path(out) if out else runs[0]["dir"]) if figures else []
    return "\n".join(parts) + "\n", paths


def run(args: argparse.Namespace) -> int:
    text, paths = report(args.runs, args.out, figures=not args.no_figures)
    print(text, end="")
    for p in paths:
        print(f"figure: {p}")
    return 0
