"""``invarirank report RUN_DIR [RUN_DIR ...]``: see finished runs without opening a notebook.

Prints, for every run folder, a one-line description and the metrics table of its ``metrics.json``
(:func:`invarirank.evaluation.format_table`), then one summary table over all runs, then each run's paired method
comparisons and the paper's claims' verdicts (:func:`invarirank.evaluation.format_comparisons`; nothing for a run
whose ``metrics.json`` has none: one method); writes two figures into
``--out`` (default: ``report/`` in the working directory — a run folder is written only when ``--out`` names it),
drawn by the book's figure module (:mod:`invarirank.compendium._figures`):

* ``exposure_by_position.png`` — top-5 exposure E_5(p) by 0-based presented position, one panel per run, one
  line per method with its 95% bootstrap band over queries, and the position-blind expectation (dashed);
* ``metric_vs_k.png`` — HR@5, nDCG@5, PPI, GPI and LOC against K, one line per method with its 95% interval
  (and one line style per model/data set/scorer when the runs differ in those), one panel per metric.

Python: :func:`report` returns the printed text and the figure paths.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .._io import existing_folder
from ..errors import InvariRankError

FIGURE_EXPOSURE = "exposure_by_position.png"
FIGURE_METRIC_VS_K = "metric_vs_k.png"
#: the figures' folder when ``--out`` is not given (relative to the working directory, never a run folder)
DEFAULT_OUT = "report"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "report",
        help="print the metrics of run folders and draw exposure and metric-vs-K figures",
        description="Print the metrics table of each run folder (written by `invarirank rerank`) and write "
        f"{FIGURE_EXPOSURE} and {FIGURE_METRIC_VS_K} into --out (default: ./report).",
    )
    p.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (each with metrics.json)")
    p.add_argument(
        "--out", metavar="DIR", help="folder for the figures (default: ./report; a run folder only when named here)"
    )
    p.add_argument("--no-figures", action="store_true", help="only print the tables")
    p.set_defaults(func=run)


def _load(run_dir: str | Path) -> Any:
    """The run folder through :func:`invarirank.compendium.load_run`, with a clear error for a missing one."""
    from .._io import loads_json, read_utf8
    from ..compendium import load_run

    d = Path(run_dir)
    existing_folder(d, "run folder")
    if not (d / "metrics.json").is_file():
        raise InvariRankError(f"{d}: no metrics.json (is the run finished? rerun `invarirank rerank` to resume it)")
    read = {}
    for name in ("metrics.json", "manifest.json"):  # name the file that cannot be read, with its line
        if (d / name).is_file():
            try:
                read[name] = loads_json(read_utf8(d / name, "JSON file"), str(d / name))
            except json.JSONDecodeError as exc:
                raise InvariRankError(f"{d / name}:{exc.lineno}: malformed JSON ({exc.msg})") from None
    check_shapes(d, read.get("metrics.json"), read.get("manifest.json"))
    return load_run(d)


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted path, value)`` of every non-container value under ``value`` (list items as ``[i]``)."""
    if isinstance(value, dict):
        for key, v in value.items():
            yield from _leaves(v, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def check_shapes(d: Path, metrics: Any, manifest: Any) -> None:
    """The parts of ``metrics.json`` and ``manifest.json`` the report reads have the documented shapes (see
        :mod:`invarirank.evaluation.engine` and :mod:`invarirank.store`): an error naming the file and field
        otherwise, never a traceback. A metrics schema other than this version's is refused (an older run is
    re-evaluated from its observations, :func:`invarirank.store.refresh_metrics`)."""
    from ..evaluation.engine import check_metrics_version

    where = d / "metrics.json"
    if not isinstance(metrics, dict):
        raise InvariRankError(f"{where}: expected a JSON object with 'schema_version' and 'methods'")
    check_metrics_version(metrics, str(where))  # the one schema every reader of the package reads
    methods = metrics.get("methods")
    if not isinstance(methods, dict) or not methods:
        raise InvariRankError(f"{where}: field 'methods' must be a non-empty object of METHOD: {{'overall': ...}}")
    for method, block in methods.items():
        if not isinstance(block, dict) or not isinstance(block.get("overall"), dict):
            raise InvariRankError(f"{where}: method {method!r} has no 'overall' object of metrics")
        for field, value in _leaves(block["overall"]):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            ):
                raise InvariRankError(
                    f"{where}: method {method!r}: field 'overall.{field}' = {value!r}, expected a finite number or "
                    f"null (the evaluator writes no NaN, infinity or text there)"
                )
        per_query = block.get("per_query", {})
        if not isinstance(per_query, dict):
            raise InvariRankError(f"{where}: method {method!r}: field 'per_query' must be an object")
    where = d / "manifest.json"
    if manifest is None:
        return
    if not isinstance(manifest, dict):
        raise InvariRankError(f"{where}: expected a JSON object (the run's settings)")
    for name in ("grid_run", "config", "queries", "model"):
        if manifest.get(name) is not None and not isinstance(manifest[name], dict):
            raise InvariRankError(f"{where}: field {name!r} must be an object")
    ks = (manifest.get("queries") or {}).get("k")
    if ks is None:
        ks = [(manifest.get("grid_run") or {}).get("K") or (manifest.get("config") or {}).get("K")]
    ks = ks if isinstance(ks, list) else [ks]
    if not any(isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in ks) or not all(
        k is None or (isinstance(k, int) and not isinstance(k, bool)) for k in ks
    ):
        raise InvariRankError(f"{where}: no list length K (field 'queries.k' or 'grid_run.K'), expected integers")
    ran = (manifest.get("grid_run") or manifest.get("config") or {}).get("methods")
    if isinstance(ran, list) and set(methods) - set(ran):
        raise InvariRankError(
            f"{d / 'metrics.json'}: methods {sorted(set(methods) - set(ran))} are not the run's (its manifest lists "
            f"{ran}); expected the metrics of this run's observations (re-evaluate with `invarirank evaluate`)"
        )


def _summary_table(runs: Sequence[Any]) -> str:
    from ..compendium._labels import RUN_METRICS

    header = f"{'run':<24}{'K':>4}  {'method':<14}" + "".join(f"{c:>15}" for c in RUN_METRICS)
    lines = [header, "-" * len(header)]
    for r in runs:
        for method in r.methods:
            ov = r.metrics["methods"][method]["overall"]
            vals = [f"{v:>15.4f}" if isinstance(v := ov.get(c), (int, float)) else f"{'-':>15}" for c in RUN_METRICS]
            lines.append(f"{r.name[:23]:<24}{r.K:>4}  {method:<14}" + "".join(vals))
    return "\n".join(lines)


def draw_figures(runs: Sequence[Any], out: Path) -> list[Path]:
    """Write the two figures into ``out`` (:func:`invarirank.compendium.figure_exposure` and
    :func:`invarirank.compendium.figure_k_sweep` over HR@5, nDCG@5, PPI, GPI, LOC); return their paths."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        matplotlib.use("Agg")
    from ..compendium._figures import figure_exposure, figure_k_sweep, save_png
    from ..compendium._labels import TABLE1_METRICS

    out.mkdir(parents=True, exist_ok=True)
    return [
        save_png(figure_exposure(runs), out / FIGURE_EXPOSURE),
        save_png(figure_k_sweep(runs, metrics=TABLE1_METRICS), out / FIGURE_METRIC_VS_K),
    ]


def report(
    run_dirs: Sequence[str | Path], out: str | Path | None = None, figures: bool = True
) -> tuple[str, list[Path]]:
    """The printed report for ``run_dirs`` and the written figure paths (see the module docstring)."""
    from ..evaluation import format_comparisons, format_table

    if not run_dirs:
        raise InvariRankError("report: give at least one RUN_DIR")
    runs = [_load(d) for d in run_dirs]
    parts = []
    for r in runs:
        ks = (r.manifest.get("queries") or {}).get("k") or [r.K]
        parts.append(
            f"== {r.path}: model {r.model}, data {r.dataset}, scorer {r.scorer}, "
            f"K={','.join(map(str, ks))}, M={r.M or '?'}, {r.n_queries or '?'} queries"
        )
        parts.append(format_table(r.metrics).rstrip())
        parts.append("")
    parts.append("summary")
    parts.append(_summary_table(runs))
    for r in runs:
        comparisons = format_comparisons(r.metrics, claims=True)
        if comparisons:
            parts += ["", f"== {r.path}: paired comparisons", comparisons.rstrip()]
    paths = draw_figures(runs, Path(out) if out else Path(DEFAULT_OUT)) if figures else []
    return "\n".join(parts) + "\n", paths


def check_arguments(args: argparse.Namespace) -> None:
    """Before any work: the figures' folder (``--out``, else ``./report``) must be a writable folder."""
    from .._io import check_output_dir

    if args.out == "":
        raise InvariRankError("--out '' is empty; expected a folder for the figures (default ./report)")
    if not args.no_figures:
        check_output_dir(args.out or DEFAULT_OUT, "--out" if args.out else "the figures' folder ./report (--out)")


def run(args: argparse.Namespace) -> int:
    check_arguments(args)
    text, paths = report(args.runs, args.out, figures=not args.no_figures)
    print(text, end="")
    for p in paths:
        print(f"figure: {p}")
    return 0
