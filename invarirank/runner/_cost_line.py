"""The cost line printed before a long run (no model loaded, nothing measured for it): the run's estimated duration
from its distinct passes and calibration, priced by a benchmark file or by the stated assumptions below, with
what dominates it and the flags that shrink it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._bench_files import Bench
from ._config import RunConfig
from ._passes import calibration_need, rerank_passes

#: a run whose estimate exceeds this many seconds gets one line on stderr before it starts
NOTICE_SECONDS = 300.0
#: stated assumption: seconds per distinct pass of a small model (SmolLM2-135M) at K = 10 on 2 idle CPU cores
#: (measured figures: ~12,000 calibration passes in ~3 h ≈ 0.9 s; timed on a busy 2-core machine: 1.5-6 s);
#: scaled by K / 10 (the candidate lines grow with K, the history prefix does not)
CPU_SECONDS_PER_PASS = 1.0
#: stated assumption: the same on one GPU (much faster; a benchmark file replaces both when it measured the model)
GPU_SECONDS_PER_PASS = 0.02
#: measured: the simulated scorer with the run machinery around it, ~0.2-0.3 ms per pass on 2 CPU cores
SIMULATED_SECONDS_PER_PASS = 3e-4


def assumed_seconds_per_pass(
    config: RunConfig, k: int, *, on_gpu: bool, bench: Bench | None = None
) -> tuple[float, str]:
    """Seconds per distinct pass for the cost line and where they come from: the simulated scorer's own cost;
    a benchmark file's measurement of the model; else the stated CPU or GPU assumption above, scaled by K/10."""
    if config.scorer == "simulated":
        return SIMULATED_SECONDS_PER_PASS, "the simulated scorer"
    measured = bench.seconds_per_pass(config.model_name, k) if bench is not None else None
    if measured is not None:
        return measured, f"measured in {bench.source}"  # type: ignore[union-attr]
    if on_gpu:
        return GPU_SECONDS_PER_PASS * k / 10, "assumed for a small model on one GPU"
    return CPU_SECONDS_PER_PASS * k / 10, "assumed for a small model on 2 CPU cores"


def cost_notice(
    config: RunConfig,
    test: Sequence[Any],
    validation: Sequence[Any],
    key_identity: Mapping[str, Any],
    *,
    on_gpu: bool = False,
    seconds_per_pass: float | None = None,
    bench: Bench | None = None,
    threshold: float = NOTICE_SECONDS,
    done: int = 0,
    recorded: Mapping[int, Mapping[str, Any]] | None = None,
    parts: Mapping[int, Sequence[Any]] | None = None,
) -> str | None:
    """The one line printed before a run whose estimated duration exceeds ``threshold`` seconds (None below
    it): the estimate (distinct passes with STELLA_LW's 10 updates, plus calibration not yet cached), what
    dominates it and the flags (or grid settings) that shrink it. ``seconds_per_pass`` overrides
    :func:`assumed_seconds_per_pass`. ``test``: the queries still to compute; ``done``: how many more are in
    finished shards already (said, not counted); ``recorded``: the calibrations recorded with them (not counted
    when this machine takes them, :func:`calibration_need`); ``parts``: the calibration parts journaled so far, by K
    (their probing queries not counted)."""
    ks = sorted({q.k for q in test})
    if not ks:
        return None
    k_mean = round(sum(ks) / len(ks))
    source = "given"
    if seconds_per_pass is None:
        seconds_per_pass, source = assumed_seconds_per_pass(config, k_mean, on_gpu=on_gpu, bench=bench)
    rerank = rerank_passes(config, test, 10)
    cal, _, probes = calibration_need(config, validation, ks, key_identity, recorded, parts)
    seconds = (rerank + cal) * seconds_per_pass
    if seconds <= threshold:
        return None
    share = max(rerank, cal) / (rerank + cal)
    if cal > rerank:
        what = (
            f"STELLA_LW calibration: {probes} validation queries x {config.calibration_repeats} repeats = "
            f"~{cal:,} passes at K={','.join(map(str, ks))}"
        )
        how = (
            "--calibration-queries N / --calibration-repeats R (grid: calibration_queries, "
            "calibration_repeats), or --methods without stella"
        )
    else:
        what = (
            f"reranking: {len(test)} queries x M={config.M} orders = ~{rerank:,} passes "
            f"({', '.join(config.methods)} at K={','.join(map(str, ks))})"
        )
        how = "--queries N, --m M, --k K, or --methods without sgs (K passes per order) (grid: n_queries, M, K)"
    resumed = f" ({done} queries already in finished shards not counted)" if done else ""
    return (
        f"cost: this run is estimated at ~{format_duration(seconds)}{resumed} ({rerank + cal:,} passes at "
        f"{seconds_per_pass:.2g} s per pass, {source}); {share:.0%} is {what}; shrink it with {how}; "
        f"--dry-run prices it without running"
    )


def format_duration(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"
