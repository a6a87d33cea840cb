"""A grid's estimate (``invarirank grid --dry-run``): scorer passes and GPU hours of many runs from their settings
alone (nothing is prepared or scored), under stated assumptions or a benchmark file's measurements, and its
printouts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..methods.registry import calibrated_method
from ._bench_files import Bench, load_bench
from ._config import RunConfig
from ._passes import passes_per_presented_order


def estimate_run(
    config: RunConfig, *, n_queries: int | None = None, calibration_relevant: float = 1.0
) -> dict[str, Any]:
    """Scorer passes of a run from its settings: ``passes_min``/``passes_max`` = distinct passes with STELLA_LW
    stopping after 4 / 10 updates; calibration = ``calibration_queries × calibration_relevant × K ×
    calibration_repeats`` (``calibration_relevant``: assumed relevant candidates per validation query in its
    top K); ``total_*`` = both."""
    q = n_queries
    if q is None and config.n_queries is not None:
        q = config.planned_queries
    k = config.effective_k
    if q is None or k is None:
        raise InvariRankError(f"{config.run_name}: n_queries or K unknown; give them to estimate passes")
    lo = passes_per_presented_order(config.methods, k, 4)
    hi = passes_per_presented_order(config.methods, k, 10)
    calibration = (
        config.calibration_queries * calibration_relevant * k * config.calibration_repeats
        if calibrated_method(config.methods) is not None
        else 0.0
    )
    return {
        "run": config.run_name,
        "K": k,
        "M": config.M,
        "queries": q,
        "requested_max": q * config.M * hi["requested_total"],
        "passes_min": q * config.M * lo["unique"],
        "passes_max": q * config.M * hi["unique"],
        "calibration_passes": int(round(calibration)),
        "total_min": int(q * config.M * lo["unique"] + round(calibration)),
        "total_max": int(q * config.M * hi["unique"] + round(calibration)),
    }


def tokens_per_pass(K: int, history_tokens: float, tokens_per_candidate: float) -> float:
    """Prompt tokens of one pass: the history part plus K candidate lines (no prefix reuse assumed)."""
    return history_tokens + K * tokens_per_candidate


def grid_cost_table(configs: Sequence[RunConfig], assumptions: Mapping[str, Any], bench: Bench | None = None) -> Any:
    """The estimated cost of a grid's runs (pandas DataFrame, one row per run): distinct scorer passes
    (STELLA_LW stopping after 4-10 updates), calibration passes, and GPU hours under the grid's ``estimate:``
    ``assumptions``::

        estimate:
          history_tokens: 450           # prompt tokens before the candidates
          tokens_per_candidate: 25      # tokens of one candidate line with its delimiters
          effective_tflops: 100         # sustained bf16 throughput of one GPU, TFLOP/s
          calibration_relevant: 1.5     # relevant candidates per calibration query
          parameters_billion: {model-id: 3.2, ...}

    A forward pass over L tokens costs about ``2 × parameters × L`` FLOPs; hours = passes × that / throughput.
    Priced from the assumptions, an upper-bound style estimate: prefix reuse and early stopping make real runs
    shorter (a measurement already includes prefix reuse).

    With ``bench`` (:func:`load_bench`), a run whose model was measured is priced from the measurement instead
    (seconds per pass of the four methods' request stream at that K, :meth:`Bench.seconds_per_pass`); the
    column ``source`` says which: ``measured``, ``scaled from K = …`` (the model measured at another K, scaled by
    the new tokens per pass) or ``assumed``. The first stage (LightGCN, once per data set) is
    priced when the benchmark file holds its measured seconds per epoch (``first stage hours``, on the row of
    the data set's first run).
    """
    import pandas as pd

    hist = float(assumptions.get("history_tokens", 450))
    per_cand = float(assumptions.get("tokens_per_candidate", 25))
    tflops = float(assumptions.get("effective_tflops", 100))
    rel = float(assumptions.get("calibration_relevant", 1.0))
    params = assumptions.get("parameters_billion") or {}
    rows = []
    priced_data: set[str] = set()
    for config in configs:
        e = estimate_run(config, calibration_relevant=rel)
        billions = params.get(config.model)
        tokens = tokens_per_pass(e["K"], hist, per_cand)
        sec = None if billions is None else 2 * float(billions) * 1e9 * tokens / (tflops * 1e12)
        source = "assumed"
        measured = bench.seconds_per_pass(config.model, e["K"]) if bench is not None else None
        if measured is not None:
            near = bench.nearest_k(config.model, e["K"])  # type: ignore[union-attr]
            sec, source = measured, "measured" if near == e["K"] else f"scaled from K = {near}"
        extra: dict[str, Any] = {}
        if bench is not None:
            extra["source"] = source
            epochs = (bench.first_stage.get("seconds_per_epoch") or {}).get(config.data_label)
            first = None
            if epochs is not None and config.data_label not in priced_data:
                first = round(float(epochs) * int(bench.first_stage.get("epochs", 100)) / 3600, 2)
                priced_data.add(config.data_label)
            extra["first stage hours"] = first
        rows.append(
            {
                "run": config.run_name,
                "K": e["K"],
                "M": config.M,
                "queries": e["queries"],
                "passes (min)": e["passes_min"],
                "passes (max)": e["passes_max"],
                "calibration passes": e["calibration_passes"],
                "tokens per pass": int(tokens),
                "s per pass": None if sec is None else round(sec, 4),
                "GPU hours (min)": None if sec is None else round(e["total_min"] * sec / 3600, 1),
                "GPU hours (max)": None if sec is None else round(e["total_max"] * sec / 3600, 1),
                **extra,
            }
        )
    return pd.DataFrame.from_records(rows)


def format_grid_cost(
    configs: Sequence[RunConfig], assumptions: Mapping[str, Any], bench: str | Path | Bench | None = None
) -> str:
    """:func:`grid_cost_table` as fixed-width text with a total line (what the paper grid's header shows);
    ``bench`` (a file or a :class:`Bench`) prices measured models from measurements, and a line says so."""
    if bench is not None and not isinstance(bench, Bench):
        bench = load_bench(bench)
    df = grid_cost_table(configs, assumptions, bench)
    lines = [f"{'run':<56}{'passes (min-max)':>22}{'calib.':>9}{'s/pass':>8}{'GPU h (min-max)':>17}"]
    for _, r in df.iterrows():
        known = r["s per pass"] is not None and r["s per pass"] == r["s per pass"]
        gpu = f"{r['GPU hours (min)']:.1f}-{r['GPU hours (max)']:.1f}" if known else "?"
        sp = f"{r['s per pass']:.3f}" if known else "?"
        passes = f"{int(r['passes (min)']):,}-{int(r['passes (max)']):,}"
        lines.append(f"{r['run']:<56}{passes:>22}{int(r['calibration passes']):>9,}{sp:>8}{gpu:>17}")
    passes = f"{int(df['passes (min)'].sum()):,}-{int(df['passes (max)'].sum()):,}"
    gpu = f"{df['GPU hours (min)'].sum():.0f}-{df['GPU hours (max)'].sum():.0f}"
    lines.append(f"{'total':<56}{passes:>22}{int(df['calibration passes'].sum()):>9,}{'':>8}{gpu:>17}")
    if bench is not None:
        n = int((df["source"] == "measured").sum())
        scaled = int(df["source"].str.startswith("scaled").sum())
        first = df["first stage hours"].dropna()
        lines.append(
            f"priced from {bench.source} ({bench.device}): {n} of {len(df)} runs measured"
            + (f", {scaled} scaled from the model's measurement at another K" if scaled else "")
            + f", the others at the assumed {assumptions.get('effective_tflops', 100)} TFLOP/s"
            + (
                f"; first stage (LightGCN, {bench.first_stage.get('device', 'cpu')}): {first.sum():.1f} h"
                if len(first)
                else "; first stage not measured"
            )
        )
    return "\n".join(lines)


def recorded_parts(config: RunConfig, parts: Mapping[int, Sequence[Mapping[str, Any]]] | None) -> int:
    """How many of ``config``'s probing queries have a calibration part among ``parts`` (committed parts by K,
    :func:`invarirank.store.committed_calibration_parts`): distinct query ids at the run's K made with its repeats
    and seed (the rest of a part's head is checked when the run resumes), at most ``calibration_queries``."""
    k = config.effective_k
    if k is None or calibrated_method(config.methods) is None:
        return 0
    ids = {
        str(p.get("query_id"))
        for p in (parts or {}).get(k, ())
        if p.get("repeats") == config.calibration_repeats and p.get("seed") == config.seed
    }
    return min(len(ids), config.calibration_queries)


def format_grid_estimate(
    configs: Sequence[RunConfig],
    statuses: Sequence[str],
    seconds_per_pass: float | None = None,
    committed: Sequence[int] | None = None,
    recorded: Sequence[bool] | None = None,
    parts: Sequence[Mapping[int, Sequence[Mapping[str, Any]]]] | None = None,
) -> str:
    """Status and distinct passes of every run; minutes at ``seconds_per_pass`` (complete runs cost nothing).
    ``committed``: queries of each run already committed in shards (``results/<grid>/<run>/shards/``); a run's
    reranking passes still to compute shrink in proportion. ``recorded``: whether the run's STELLA_LW calibration
    is committed with those shards (``shards/calibrations.json``): then it is not counted (a fresh machine takes
    it) and shown ``rec.``, else the column ``calib.`` counts the passes still to compute: the probing queries
    without a committed calibration part (``parts``: each run's committed parts by K, ``shards/calibration-parts/``,
    :func:`recorded_parts`) × K × repeats."""
    todo_lo = todo_hi = 0
    committed = list(committed) if committed is not None else [0] * len(configs)
    recorded = list(recorded) if recorded is not None else [False] * len(configs)
    parts = list(parts) if parts is not None else [{}] * len(configs)
    lines = [f"{'run':<52} {'status':<9} {'queries':>7} {'in shards':>9} {'passes (distinct)':>18} {'calib.':>7}"]
    for config, status, done, has_cal, have in zip(configs, statuses, committed, recorded, parts):
        try:
            est = estimate_run(config)
        except InvariRankError as exc:
            lines.append(f"{config.run_name:<52} {status:<9} {exc}")
            continue
        probed = recorded_parts(config, have)
        share = 1 - probed / max(1, config.calibration_queries)
        cal = 0 if has_cal else int(round(est["calibration_passes"] * share))
        if status != "complete":
            left = max(0, est["queries"] - done) / max(1, est["queries"])
            todo_lo += int(round(est["passes_min"] * left)) + cal
            todo_hi += int(round(est["passes_max"] * left)) + cal
        shown = "rec." if has_cal and est["calibration_passes"] else str(cal)
        lines.append(
            f"{config.run_name:<52} {status:<9} {est['queries']:>7} {done or '':>9} "
            f"{est['passes_min']:>8}-{est['passes_max']:<9} {shown:>7}"
        )
    text = (
        f"passes still to compute: {todo_lo}-{todo_hi} (calib.: STELLA_LW calibration, counted with one "
        f"relevant candidate per validation query; each further relevant candidate adds as many again; "
        f"rec.: recorded with the committed shards, not counted; probing queries in committed calibration parts "
        f"and queries in shards are done)"
    )
    if seconds_per_pass:
        text += (
            f"; at {seconds_per_pass:g} s per pass about {todo_lo * seconds_per_pass / 60:.1f}-"
            f"{todo_hi * seconds_per_pass / 60:.1f} minutes of scoring (plus model loading, first stage and "
            f"notebook execution)"
        )
    lines.append(text)
    return "\n".join(lines)
