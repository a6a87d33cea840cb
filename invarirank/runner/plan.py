"""The cost model: scorer passes of a run before it runs — the dry run of one run (``invarirank rerank
--dry-run``: counted from its real queries, a few passes timed) and the estimate of a grid's runs (``invarirank
grid --dry-run``: from the settings alone, with GPU hours under stated assumptions).

Passes *requested* per presented order come from the method registry (:mod:`invarirank.methods.registry`).
*Distinct* passes — what the scorer really computes with the shared pass cache of one query — are a separate
fact: every method's first pass is the presented order itself (computed once for all methods), and the passes a
method shares with another (the registry's ``shares``: bootstrapping's two shuffles are STELLA_LW's updates 1-2)
are computed once when a run has both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvariRankError
from ..methods.registry import calibrated_method, method, passes_per_order, shared_passes
from ..orders import presented_orders
from ..types import Scorer
from .config import RunConfig
from .queries import QuerySet, load_queries

__all__ = [
    "passes_per_presented_order",
    "RunPlan",
    "plan_run",
    "format_plan",
    "estimate_run",
    "tokens_per_pass",
    "grid_cost_table",
    "format_grid_cost",
    "format_grid_estimate",
    "Bench",
    "load_bench",
    "find_bench",
    "calibration_need",
    "rerank_passes",
    "assumed_seconds_per_pass",
    "cost_notice",
    "NOTICE_SECONDS",
    "CPU_SECONDS_PER_PASS",
    "GPU_SECONDS_PER_PASS",
    "SIMULATED_SECONDS_PER_PASS",
]


def passes_per_presented_order(methods: Sequence[str], k: int, stella_updates: int) -> dict[str, Any]:
    """Scorer calls per presented order of ``k`` candidates: ``requested`` per method (the registry's counts),
    their total, and ``unique``: distinct passes with the shared pass cache (see the module docstring)."""
    requested = {m: passes_per_order(m, k, stella_updates) for m in methods}
    unique = 1 + sum(n - 1 for n in requested.values()) - shared_passes(requested)
    return {"requested": requested, "requested_total": sum(requested.values()), "unique": unique}


# ---------------------------------------------------------------------------------------------
# measurements: a benchmark file (python -m benchmarks.gpu --json FILE)
# ---------------------------------------------------------------------------------------------
@dataclass
class Bench:
    """A benchmark file of :mod:`benchmarks.gpu` or :mod:`benchmarks.vllm_backend`: per (model id, K) the measured
    passes per second of the four methods' span request stream in the fastest configuration and backend, and the
    first stage's measured seconds per LightGCN epoch per data set (when it holds them). ``source`` names the file
    for the printouts."""

    source: str
    device: str
    passes_per_second: dict[tuple[str, int], float]
    first_stage: dict[str, Any]
    #: the same rates per scorer backend (``hf``: rows without a backend, :mod:`benchmarks.gpu`; ``vllm``)
    by_backend: dict[str, dict[tuple[str, int], float]] = field(default_factory=dict)
    #: every measured row as written (``model``, ``K``, ``passes_per_s``; ``scorer`` and ``backend`` where given),
    #: choice rows too: what a page shows beside the prices
    rows: list[dict[str, Any]] = field(default_factory=list)

    def only(self, backend: str) -> Bench:
        """This measurement restricted to one backend's rows (no rates when it measured none): the price of a grid
        computed on that backend, where :attr:`passes_per_second` is the faster backend's."""
        return Bench(
            f"{self.source} [{backend}]", self.device, dict(self.by_backend.get(backend, {})), self.first_stage
        )

    def seconds_per_pass(self, model: str | None, k: int) -> float | None:
        """Measured seconds per distinct pass of ``model`` at K = ``k``; a K that was not measured is scaled
        from the nearest measured K by the new tokens per pass (the candidates: the history prefix is reused);
        None when the model was not measured."""
        near = self.nearest_k(model, k)
        if near is None:
            return None
        return (1.0 / self.passes_per_second[(str(model), near)]) * (k / near)

    def nearest_k(self, model: str | None, k: int) -> int | None:
        """The measured K of ``model`` that :meth:`seconds_per_pass` prices K = ``k`` from (``k`` itself when it
        was measured); None when the model was not measured."""
        ks = sorted(kk for (m, kk) in self.passes_per_second if m == model)
        return min(ks, key=lambda kk: (abs(kk - k), kk)) if ks else None


def load_bench(path: str | Path) -> Bench:
    """Read a benchmark file written by ``python -m benchmarks.gpu --json FILE`` (errors name the file)."""
    import json

    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        rates: dict[tuple[str, int], float] = {}
        by_backend: dict[str, dict[tuple[str, int], float]] = {}
        for r in data.get("results", []):
            # the grid's runs use the span scorer: a choice row (benchmarks.vllm_backend writes both) prices none;
            # rows of both backends compete, the faster one prices
            if r.get("passes_per_s") and r.get("model") and r.get("scorer", "span") == "span":
                key = (str(r["model"]), int(r["K"]))
                rates[key] = max(rates.get(key, 0.0), float(r["passes_per_s"]))
                mine = by_backend.setdefault(str(r.get("backend", "hf")), {})
                mine[key] = max(mine.get(key, 0.0), float(r["passes_per_s"]))
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise InvariRankError(f"{p}: not a benchmark file of benchmarks.gpu ({exc})") from None
    rows = [dict(r) for r in data.get("results", []) if isinstance(r, dict) and r.get("passes_per_s")]
    return Bench(str(p), str(data.get("device", "?")), rates, dict(data.get("first_stage") or {}), by_backend, rows)


def find_bench(path: str | Path | None, root: Path | None = None, folder: str = "results/bench") -> Bench | None:
    """``path`` when given, else the project's ``<folder>/*.json`` (``results/bench/``: the GPU measurements the
    paper's grid is priced from; ``results/bench/cpu/``: this project's CPU machine's; None when there is none):
    the files measured on the device of the newest one, merged — a (model, K) measured in several files takes the
    fastest rate, as within one file, per backend too. Newest: by modification time, then name (a fresh clone gives
    every file one time, so name them so that they sort by date)."""
    if path:
        return load_bench(path)
    from ..store import checkout_root

    root = root or checkout_root()
    if root is None:  # outside a checkout: no benchmark files of the project
        return None
    where = root / folder
    files = sorted(where.glob("*.json"), key=lambda f: (f.stat().st_mtime, f.name)) if where.is_dir() else []
    benches = [b for b in (_bench_or_none(f, root) for f in files) if b is not None]
    if not benches:
        return None
    device = benches[-1].device
    same = [b for b in benches if b.device == device]
    merged = Bench(" + ".join(b.source for b in same), device, {}, {})
    for b in same:
        for backend, got in [("", b.passes_per_second), *b.by_backend.items()]:
            into = merged.by_backend.setdefault(backend, {}) if backend else merged.passes_per_second
            for key, rate in got.items():
                into[key] = max(into.get(key, 0.0), rate)
        merged.first_stage = b.first_stage or merged.first_stage
        merged.rows += [{**r, "source": b.source} for r in b.rows]
    return merged


def _bench_or_none(path: Path, root: Path) -> Bench | None:
    """:func:`load_bench` of a file found in a benchmark folder, its ``source`` relative to the checkout; None for a
    JSON file there that holds no measured rates or first stage (another benchmark's evidence file beside them)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None  # load_bench names the file and what is wrong
    if isinstance(data, dict) and "results" not in data and "first_stage" not in data:
        return None
    bench = load_bench(path)
    bench.source = path.relative_to(root).as_posix()
    return bench


# ---------------------------------------------------------------------------------------------
# one run: the dry run
# ---------------------------------------------------------------------------------------------
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
    from .worker import make_run_scorer, scorer_key_identity

    qs = queries or load_queries(config)
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


def rerank_passes(config: RunConfig, queries: Sequence[Any], stella_updates: int) -> int:
    """Distinct scorer passes of reranking ``queries`` (each at its own K) under ``config.M`` orders, with
    STELLA_LW stopping after ``stella_updates`` updates (4 or 10: the range)."""
    return sum(config.M * passes_per_presented_order(config.methods, q.k, stella_updates)["unique"] for q in queries)


def calibration_need(
    config: RunConfig,
    validation: Sequence[Any],
    ks: Sequence[int],
    key_identity: Mapping[str, Any],
    recorded: Mapping[int, Mapping[str, Any]] | None = None,
) -> tuple[int, dict[int, bool], int]:
    """The calibration (STELLA_LW's) still to compute for lists of each K in ``ks``: ``(passes, cached, probes)``
    — passes of the K values whose calibration is neither in the cache (keyed by the scorer's ``key_identity``)
    nor recorded with the run's shards in a form this machine takes (``recorded``, by K), ``cached`` per K, and the
    number of probing validation queries of those K, as the calibrated method's
    :class:`~invarirank.methods.registry.Calibrator` counts them (``need``). Nothing is scored; (0, {}, 0) when no
    method of the run needs a calibration."""
    calibrated = calibrated_method(config.methods)
    if calibrated is None or calibrated.calibrator is None:
        return 0, {}, 0
    passes = probes = 0
    cached: dict[int, bool] = {}
    for k in ks:
        n, cached[k], p = calibrated.calibrator.need(
            validation,
            k,
            key_identity,
            n_queries=config.calibration_queries,
            repeats=config.calibration_repeats,
            seed=config.seed,
            cache_dir=config.cache_dir or None,
            known=(recorded or {}).get(k),
        )
        passes += n
        probes = max(probes, p)
    return passes, cached, probes


# ---------------------------------------------------------------------------------------------
# the cost line printed before a long run (no model loaded, nothing measured for it)
# ---------------------------------------------------------------------------------------------
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
) -> str | None:
    """The one line printed before a run whose estimated duration exceeds ``threshold`` seconds (None below
    it): the estimate (distinct passes with STELLA_LW's 10 updates, plus calibration not yet cached), what
    dominates it and the flags (or grid settings) that shrink it. ``seconds_per_pass`` overrides
    :func:`assumed_seconds_per_pass`. ``test``: the queries still to compute; ``done``: how many more are in
    finished shards already (said, not counted); ``recorded``: the calibrations recorded with them (not counted
    when this machine takes them, :func:`calibration_need`)."""
    ks = sorted({q.k for q in test})
    if not ks:
        return None
    k_mean = round(sum(ks) / len(ks))
    source = "given"
    if seconds_per_pass is None:
        seconds_per_pass, source = assumed_seconds_per_pass(config, k_mean, on_gpu=on_gpu, bench=bench)
    rerank = rerank_passes(config, test, 10)
    cal, _, probes = calibration_need(config, validation, ks, key_identity, recorded)
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
        f"cost: this run is estimated at ~{_fmt_seconds(seconds)}{resumed} ({rerank + cal:,} passes at "
        f"{seconds_per_pass:.2g} s per pass, {source}); {share:.0%} is {what}; shrink it with {how}; "
        f"--dry-run prices it without running"
    )


def _fmt_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


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
        f"estimated time: {_fmt_seconds(lo)} - {_fmt_seconds(hi)} at {rate:.4f} s per pass "
        f"({plan.rate_source}; scorer passes only; the scorer's persistent cache may make it shorter)"
    )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# many runs: estimates from the settings alone
# ---------------------------------------------------------------------------------------------
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


def format_grid_estimate(
    configs: Sequence[RunConfig],
    statuses: Sequence[str],
    seconds_per_pass: float | None = None,
    committed: Sequence[int] | None = None,
    recorded: Sequence[bool] | None = None,
) -> str:
    """Status and distinct passes of every run; minutes at ``seconds_per_pass`` (complete runs cost nothing).
    ``committed``: queries of each run already committed in shards (``results/<grid>/<run>/shards/``); a run's
    reranking passes still to compute shrink in proportion. ``recorded``: whether the run's STELLA_LW calibration
    is committed with those shards (``shards/calibrations.json``): then it is not counted (a fresh machine takes
    it) and shown ``rec.``, else it is counted whole."""
    todo_lo = todo_hi = 0
    committed = list(committed) if committed is not None else [0] * len(configs)
    recorded = list(recorded) if recorded is not None else [False] * len(configs)
    lines = [f"{'run':<52} {'status':<9} {'queries':>7} {'in shards':>9} {'passes (distinct)':>18} {'calib.':>7}"]
    for config, status, done, has_cal in zip(configs, statuses, committed, recorded):
        try:
            est = estimate_run(config)
        except InvariRankError as exc:
            lines.append(f"{config.run_name:<52} {status:<9} {exc}")
            continue
        cal = 0 if has_cal else est["calibration_passes"]
        if status != "complete":
            left = max(0, est["queries"] - done) / max(1, est["queries"])
            todo_lo += int(round(est["passes_min"] * left)) + cal
            todo_hi += int(round(est["passes_max"] * left)) + cal
        shown = "rec." if has_cal and est["calibration_passes"] else str(est["calibration_passes"])
        lines.append(
            f"{config.run_name:<52} {status:<9} {est['queries']:>7} {done or '':>9} "
            f"{est['passes_min']:>8}-{est['passes_max']:<9} {shown:>7}"
        )
    text = (
        f"passes still to compute: {todo_lo}-{todo_hi} (calib.: STELLA_LW calibration, counted with one "
        f"relevant candidate per validation query; each further relevant candidate adds as many again; "
        f"rec.: recorded with the committed shards, not counted; queries in shards are done)"
    )
    if seconds_per_pass:
        text += (
            f"; at {seconds_per_pass:g} s per pass about {todo_lo * seconds_per_pass / 60:.1f}-"
            f"{todo_hi * seconds_per_pass / 60:.1f} minutes of scoring (plus model loading, first stage and "
            f"notebook execution)"
        )
    lines.append(text)
    return "\n".join(lines)
