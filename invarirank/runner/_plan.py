"""The dry run of one run (``invarirank rerank --dry-run``): its passes counted from its real queries
(:mod:`invarirank.runner._passes`), a few passes timed, priced by a benchmark file when one measured the model, and
its printout. A grid's estimate from the settings alone is :mod:`invarirank.runner._grid_estimate`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._orders import presented_orders
from ..methods.registry import calibrated_method, method
from ..types import Scorer
from ._bench_files import Bench, find_bench
from ._config import RunConfig
from ._cost_line import format_duration
from ._passes import calibration_need, passes_per_presented_order, rerank_passes
from ._queries import QuerySet, load_queries
from ._setting_checks import check_lists_for_evaluation


@dataclass
class RunPlan:
    """What one run will do (``invarirank rerank --dry-run``): its queries and K values, requested passes per
    method (min/max over STELLA_LW's 4-10 updates), distinct passes, calibration passes (and which K are already
    cached), and a few timed passes."""

    config: RunConfig
    n_queries: int
    ks: list[int]
    per_method: dict[str, dict[str, int]]  # method -> {"min": passes, "max": passes}
    unique_min: int
    unique_max: int
    calibration_passes: int
    calibration_cached: dict[int, bool]
    measured_passes: int
    measured_seconds: float
    measured_cached: int
    info: dict[str, Any]
    bench: Bench | None = None

    @property
    def seconds_per_pass(self) -> float:
        """Seconds per scorer pass: from the benchmark file when it measured this model (at the run's mean K),
        else from the passes timed here (nan when nothing was measured)."""
        measured = self._bench_rate()
        if measured is not None:
            return measured
        return self.measured_seconds / self.measured_passes if self.measured_passes else float("nan")

    @property
    def rate_source(self) -> str:
        """Where :attr:`seconds_per_pass` comes from."""
        if self._bench_rate() is not None:
            return f"measured: {self.bench.source} ({self.bench.device})"  # type: ignore[union-attr]
        return "timed here"

    def _bench_rate(self) -> float | None:
        if self.bench is None or not self.ks:
            return None
        return self.bench.seconds_per_pass(self.config.model_name, round(sum(self.ks) / len(self.ks)))


def plan_run(
    config: RunConfig,
    *,
    measure_passes: int = 4,
    queries: QuerySet | None = None,
    scorer: Scorer | None = None,
    bench: str | Path | None = None,
) -> RunPlan:
    """Count the passes a run needs and time a few real passes to estimate its duration (runs nothing else; the
    data and first stage are prepared on demand, through their caches). ``bench``: a benchmark file to price the
    passes with (default: the newest under ``results/bench/``, when the model was measured there)."""
    measured_bench = find_bench(bench)
    from ._worker import make_run_scorer, scorer_key_identity

    qs = queries or load_queries(config)
    check_lists_for_evaluation(config, qs.test)  # what the real run refuses before its first pass
    scorer = scorer or make_run_scorer(config)
    m = config.M
    ks = sorted({q.k for q in qs.test})
    per_method: dict[str, dict[str, int]] = {name: {"min": 0, "max": 0} for name in config.methods}
    for q in qs.test:
        lo = passes_per_presented_order(config.methods, q.k, 4)
        hi = passes_per_presented_order(config.methods, q.k, 10)
        for name in config.methods:
            per_method[name]["min"] += m * lo["requested"][name]
            per_method[name]["max"] += m * hi["requested"][name]
    unique_min, unique_max = rerank_passes(config, qs.test, 4), rerank_passes(config, qs.test, 10)
    cal_passes, cal_cached, _ = calibration_need(config, qs.validation, ks, scorer_key_identity(scorer))
    measured = cached_hits = 0
    t0 = time.perf_counter()
    first = qs.test[0]
    for o in presented_orders(first.query_id, first.k, max(measure_passes, 1), config.seed)[:measure_passes]:
        res = scorer.score(first, [first.candidates[i] for i in o.positions])
        measured += 1
        cached_hits += int(bool(res.cached))
    return RunPlan(
        config,
        len(qs.test),
        ks,
        per_method,
        unique_min,
        unique_max,
        cal_passes,
        cal_cached,
        measured,
        time.perf_counter() - t0,
        cached_hits,
        qs.info,
        measured_bench,
    )


def format_plan(plan: RunPlan) -> str:
    """The dry run's printout: passes per method, distinct passes, calibration, time estimate."""
    c = plan.config
    lines = [
        f"dry run: {plan.n_queries} queries x M={c.M} orders, K={','.join(map(str, plan.ks))}, "
        f"scorer {c.scorer}{' ' + c.model if c.model else ''}, methods {','.join(c.methods)}"
        + (" (noise floor: M copies of one order)" if c.noise_floor else ""),
        "",
        f"{'method':<15}{'passes per order':>18}{'passes (requested)':>22}",
    ]
    k_txt = "/".join(map(str, plan.ks))
    for name, rng in plan.per_method.items():
        span = f"{rng['min']}" if rng["min"] == rng["max"] else f"{rng['min']}-{rng['max']}"
        per_order = method(name).passes_text.replace("K", f"K={k_txt}")
        lines.append(f"{name:<15}{per_order:>18}{span:>22}")
    lines.append("")
    lines.append(
        f"distinct scorer passes with the shared pass cache: {plan.unique_min}-{plan.unique_max} "
        f"(about M*(K+8) = {c.M * (sum(plan.ks) / len(plan.ks) + 8) * plan.n_queries:.0f})"
    )
    if calibrated_method(c.methods) is not None:
        cached = [k for k, v in plan.calibration_cached.items() if v]
        lines.append(
            f"STELLA calibration: {plan.calibration_passes} passes (relevant candidates x K x "
            f"{c.calibration_repeats} repeats on up to {c.calibration_queries} validation queries)"
            + (f"; cached for K={','.join(map(str, cached))}" if cached else "")
        )
    rate = plan.seconds_per_pass
    note = f", {plan.measured_cached} of them from the scorer's cache" if plan.measured_cached else ""
    lines.append(
        f"measured: {plan.measured_passes} passes in {plan.measured_seconds:.3f} s ({rate:.4f} s per pass{note})"
    )
    lo = (plan.unique_min + plan.calibration_passes) * rate
    hi = (plan.unique_max + plan.calibration_passes) * rate
    lines.append(
        f"estimated time: {format_duration(lo)} - {format_duration(hi)} at {rate:.4f} s per pass "
        f"({plan.rate_source}; scorer passes only; the scorer's persistent cache may make it shorter)"
    )
    return "\n".join(lines)
