"""Tables of what the runs used and cost (beside the paper's setting), and of the data set and first stage.

Read from run manifests (:func:`cost_table`, :func:`scale_table`) and from the data layer's and first stage's
``stats.json`` (:func:`data_stats_table`, :func:`coverage_table`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..methods.registry import calibrated_method
from ..store import Run, read_volatile
from ._labels import dataset_label, method_label, model_label, setting_caption
from ._tables import drop_constant_levels, fold_columns, with_caption


def _pays_calibration(name: str) -> bool:
    """Whether the registered method ``name`` needs a calibration per K (STELLA_LW), whose passes it alone pays."""
    return calibrated_method([name]) is not None


def cost_table(runs: Sequence[Run], styled: bool = True) -> Any:
    """Cost per run and method, from the manifests.

    Passes are exact and hardware-independent: the scorer passes each method requested (per presented
    order and in all; zero-shot 1, bootstrapping 3, SGS K, STELLA_LW up to 10) and STELLA_LW's calibration
    passes. The methods of a run share one pass cache, so the run's *distinct* passes are fewer; the
    persistent pass cache may also have served some of them from an earlier session. Seconds: the model's
    measured seconds per computed pass in the run's last session (``scorer_stats`` of its ``run.json``; for a run
    computed in shards, the shards' wall seconds over their computed passes), times the method's
    share of the run's distinct passes (plus calibration for STELLA_LW) — an estimate of what the method
    costs when nothing is cached; ``–`` when the session computed fewer than 10 passes.
    """
    records = []
    for run in runs:
        man = run.manifest
        passes = man.get("passes", {})
        per = passes.get("per_method", {})
        volatile = read_volatile(run.path)
        stats = volatile.get("scorer_stats", {}) or {}
        computed = int(stats.get("forward_passes") or 0)
        seconds = float(stats.get("forward_seconds") or 0.0)
        shards = [s for s in volatile.get("shards") or [] if s.get("passes") and s.get("seconds")]
        if computed < 10 and sum(int(s["passes"]) for s in shards) >= 10:
            # a run computed in shards over several sessions: the shards' own wall seconds per computed pass
            computed = sum(int(s["passes"]) for s in shards)
            seconds = sum(float(s["seconds"]) for s in shards)
        s_per_pass = seconds / computed if computed >= 10 and seconds > 0 else None
        distinct = int(passes.get("scorer_calls") or 0)
        requested_all = sum(int(v.get("passes", 0)) for v in per.values()) or 1
        cal = passes.get("calibration") or {}
        cal_passes = sum(int(v.get("passes", 0)) for v in cal.values())
        for method in run.methods:
            info = per.get(method, {})
            req = int(info.get("passes", 0))
            own_cal = cal_passes if _pays_calibration(method) else 0
            est = None if s_per_pass is None else round((distinct * req / requested_all + own_cal) * s_per_pass, 1)
            records.append(
                {
                    "model": model_label(run.model),
                    "dataset": dataset_label(run.dataset),
                    "scorer": run.scorer,
                    "K": run.K,
                    "M": run.M,
                    "queries": run.n_queries,
                    "method": method_label(method),
                    "passes per order": info.get("per_order_mean"),
                    "passes (requested)": req,
                    "calibration passes": own_cal,
                    "distinct passes in run": distinct,
                    "s per pass": None if s_per_pass is None else round(s_per_pass, 2),
                    "seconds (est.)": est,
                }
            )
    df = drop_constant_levels(
        pd.DataFrame.from_records(records).set_index(["model", "dataset", "scorer", "K", "M", "queries", "method"])
    )
    df, folded = fold_columns(df)
    caption = (
        f"Cost per method ({setting_caption(runs)}), from the run manifests. Passes are exact: every scorer "
        "call a method requested; one run's methods share a pass cache, so its distinct passes are fewer. "
        "s per pass: the model's measured wall seconds per computed pass (in shards, or in the run's last "
        "session; a pass served by the persistent pass cache is not counted). Seconds are an estimate: that "
        "times the method's share of the distinct passes (plus calibration for STELLA_LW), what the method "
        "costs when nothing is cached; they depend on the machine and its load. " + folded
    )
    if not styled:
        return df
    formats = {
        "passes per order": _per_order,
        "s per pass": "{:.2f}",
        "seconds (est.)": "{:,.0f}",
        "passes (requested)": "{:,}",
        "calibration passes": "{:,}",
        "distinct passes in run": "{:,}",
    }
    return with_caption(df, caption).format({k: v for k, v in formats.items() if k in df.columns}, na_rep="–")


def _per_order(value: float) -> str:
    """Passes per presented order: ``1``, ``3``, ``10`` when whole (as the methods' definitions count them),
    else two decimals (``9.45``: STELLA_LW stopping early in some orders)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def run_settings_table(run: Run, styled: bool = True) -> Any:
    """The settings of one run, one per row, read from its run spec: data set, first stage, model, scorer, K, M,
    queries and how they were sampled, methods, seeds, STELLA_LW's calibration and the scorer's options."""
    spec = run.spec
    options = spec.get("scorer_options") or {}
    rows = {
        "grid / run": f"{run.grid} / {run.name}",
        "data set": dataset_label(run.dataset),
        "first stage": f"{spec.get('retriever', run.retriever)} (seed {spec.get('retrieval_seed', '–')})",
        "model": model_label(run.model),
        "scorer": run.scorer + (f" ({', '.join(f'{k} = {v}' for k, v in sorted(options.items()))})" if options else ""),
        "candidates per query K": run.K,
        "presented orders per query M": run.M,
        "queries": f"{run.n_queries}, sampled (seed {spec.get('seed', '–')}) among those kept at K = "
        f"{spec.get('sample_k') or run.K}",
        "methods": ", ".join(method_label(m) for m in run.methods),
    }
    calibrated = calibrated_method(run.methods)
    if calibrated is not None:
        repeats = spec.get("calibration_repeats")
        rows[f"{calibrated.label} calibration"] = (
            f"{spec.get('calibration_queries')} validation queries × "
            f"{repeats} repeat{'s' if repeats != 1 else ''} per position"
        )
    df = pd.DataFrame({"value": [str(v) for v in rows.values()]}, index=pd.Index(list(rows), name="setting"))
    return with_caption(df, f"Settings of the run {run.name}.") if styled else df


def _scorers(scorers: set[str]) -> str:
    """The scorers of the runs shown, and what each is used for when the span scorer has the choice scorer beside
    it (the results page compares the two; every other table and figure is the span scorer's)."""
    if "span" in scorers and "choice" in scorers:
        rest = [s for s in sorted(scorers) if s != "span" and s != "choice"]
        return ", ".join(["span (Table 1 and the figures)", "choice (the scorer comparison)", *rest])
    return ", ".join(sorted(scorers)) or "–"


def scale_table(runs: Sequence[Run], styled: bool = True) -> Any:
    """The paper's setting beside what our runs used (models, data, K, M, queries, calibration)."""

    def uniq(values: Iterable[Any]) -> str:
        vals = sorted(set(values), key=lambda v: (str(type(v)), v))
        return ", ".join(str(v) for v in vals) or "–"

    calibrated = [r for r in runs if calibrated_method(r.methods) is not None and r.spec]
    cal_q = [r.spec.get("calibration_queries") for r in calibrated]
    cal_r = [r.spec.get("calibration_repeats") for r in calibrated]
    rows = {
        "models": ("Llama-3.2-3B, Mistral-7B-v0.3, Qwen2.5-7B (Instruct)", uniq(model_label(r.model) for r in runs)),
        "datasets": ("MovieLens-32M, Amazon Books", uniq(dataset_label(r.dataset) for r in runs)),
        "scorer": (
            "log-probabilities of candidate markers, one pass per order (the authors' code: span log-probabilities)",
            _scorers({r.scorer for r in runs}),
        ),
        "list lengths K": ("15, 25, 50", uniq(r.K for r in runs)),
        "presented orders M": ("20", uniq(r.M for r in runs)),
        "queries per run": (
            "500 (the authors' configuration; the paper does not say)",
            uniq(r.n_queries for r in runs),
        ),
        "STELLA_LW calibration queries": ("up to 150", uniq(cal_q) if cal_q else "–"),
        "STELLA_LW calibration repeats": ("5", uniq(cal_r) if cal_r else "–"),
    }
    df = pd.DataFrame.from_dict(rows, orient="index", columns=["paper", "this book"])
    df.index.name = None
    return with_caption(df, "What the runs shown here used, beside the paper's setting.") if styled else df


_DATA_ROWS = [
    ("raw_users", "users (raw)"),
    ("raw_items", "items (raw)"),
    ("raw_interactions", "ratings (raw)"),
    ("users_dropped", "users below the minimum"),
    ("users", "users kept"),
    ("items", "items"),
    ("interactions", "ratings kept"),
    ("positives", "positives (rating ≥ 4)"),
    ("train", "train"),
    ("validation", "validation"),
    ("test", "test"),
    ("test_queries", "test queries"),
    ("validation_queries", "validation queries"),
]


def data_stats_table(stats: Mapping[str, Any], styled: bool = True) -> Any:
    """The prepared data set's counts (``stats.json`` of the data layer) as a two-column table."""
    rows = [(label, f"{int(stats[k]):,}") for k, label in _DATA_ROWS if k in stats]
    df = pd.DataFrame(rows, columns=["count", "value"]).set_index("count")
    caption = (
        f"{dataset_label(stats.get('dataset', '?'))}: {stats.get('split', '?')} split, at least "
        f"{stats.get('min_interactions', '?')} ratings per user, positives rating ≥ "
        f"{stats.get('positive_threshold', '?')}, histories of at most {stats.get('history_len', '?')} items."
    )
    return with_caption(df, caption) if styled else df


def coverage_table(stats: Mapping[tuple[str, int], Mapping[str, Any]], dataset: str = "", styled: bool = True) -> Any:
    """First-stage coverage per (retriever, K): test queries kept / dropped, coverage@K, recall@K, nDCG@K
    (over all test queries), from the first stage's ``stats.json``."""
    records = []
    for (retriever, K), st in sorted(stats.items()):
        records.append(
            {
                "first stage": retriever,
                "K": K,
                "test queries": st.get("test_queries"),
                "kept": st.get("queries_kept"),
                "dropped": st.get("queries_dropped"),
                "coverage@K": st.get(f"coverage@{K}"),
                "recall@K": st.get(f"recall@{K}"),
                "nDCG@K": st.get(f"ndcg@{K}"),
                "validation kept": (st.get("validation") or {}).get("queries_kept"),
            }
        )
    df = pd.DataFrame.from_records(records).set_index(["first stage", "K"])
    caption = (
        f"First-stage coverage on {dataset_label(dataset)}: a test query is kept only when its top-K holds a "
        f"ground-truth item; coverage, recall and nDCG are over all test queries."
    )
    if not styled:
        return df
    return with_caption(df, caption).format({"coverage@K": "{:.3f}", "recall@K": "{:.3f}", "nDCG@K": "{:.3f}"})
