"""Precision benchmark (issue 13, part 2): is a cheaper number format good enough for the evidence runs on CPU?

    python -m benchmarks.precision [--json FILE] [--models smollm2-135m gemma3-270m] [--queries 20] [--orders 10]
                                   [--k 10] [--run-queries 3] [--run-orders 6] [--threads N]

Precisions: ``float32`` (the reference), ``bfloat16`` (weights and activations), ``int8`` (dynamic int8
quantisation of every ``nn.Linear`` of the decoder with ``torch.ao.quantization.quantize_dynamic``; the output head
``lm_head`` is kept in float32, since quantising it moves the log-probs by nats).

Prompts: MovieLens-100K test queries with their LightGCN top-K candidates (the embedded setting, through the data
layer's and first stage's caches), ``--queries`` of them sampled with seed 0, each under ``--orders`` seeded
presented orders (``invarirank._orders.presented_orders``, seed 42): 200 prompts by default. Every prompt is scored
once by each precision, the precisions taking turns prompt by prompt (so that all meet the same machine
conditions), with the span scorer (no pass cache, prefix reuse on as in a run).

Figures per model and precision:

* ``seconds_per_pass``: median wall time of one pass (model loaded, prefix computed once per query as in a run;
  the median, so that a pass slowed by another process on a shared machine does not decide it);
* ``speedup``: float32 seconds per pass / this precision's;
* ``kendall_tau_mean`` / ``kendall_tau_min``: Kendall τ-b between the ranking that float32's scores give on one
  prompt and the ranking this precision's scores give (ties broken as the methods do: earlier presented position
  first), over the prompts;
* ``max_abs_score_diff``: the largest |score − float32 score| over every candidate of every prompt (mean
  log-probability per token, nats).

Then, for the first model, one small run per precision: ``--run-queries`` queries × ``--run-orders`` orders, all four
methods (STELLA_LW calibrated on 10 validation queries × 1 repeat with that precision's own scorer), PPI and LOC
of each method from :func:`invarirank.evaluation.evaluate`, and their largest difference from float32.

The machine's load average at the start and end is recorded (other processes on a shared machine inflate every
pass's seconds; the precisions take turns prompt by prompt, so the speed-ups stay comparable).

Decision rule (fixed by the issue): a lower precision is adopted for the runs only if it is ≥ 1.5× faster,
``kendall_tau_mean`` ≥ 0.95, and every method's PPI and LOC are within 0.02 of float32's. The script prints the
verdict it measured; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

PRECISIONS = ("float32", "bfloat16", "int8")


def _queries(k: int, n: int, seed: int = 0) -> tuple[list[Any], list[Any]]:
    """``n`` sampled ML-100K test queries with their LightGCN top-``k`` candidates, and the validation queries."""
    from invarirank._orders import rng_for
    from invarirank.data import prepare
    from invarirank.retrieval import retrieve

    res = retrieve(str(prepare("ml-100k")), retriever="lightgcn", k=k, seed=42, progress=False)
    test = sorted(res.test, key=lambda q: q.query_id)
    idx = sorted(int(i) for i in rng_for(seed, "precision-benchmark").choice(len(test), size=n, replace=False))
    return [test[i] for i in idx], list(res.validation)


def _loaded(model: str, precision: str) -> Any:
    from invarirank.llm.models import load_model, wrap_model

    if precision != "int8":
        return load_model(model, dtype=precision, reuse=False)
    import torch

    fp32 = load_model(model, dtype="float32", reuse=False)
    linear = {
        name
        for name, mod in fp32.model.named_modules()
        if isinstance(mod, torch.nn.Linear) and not name.endswith("lm_head")
    }
    with warnings.catch_warnings():  # deprecated in favour of torchao, which is not installed; still exact here
        warnings.simplefilter("ignore")
        quantized = torch.ao.quantization.quantize_dynamic(fp32.model, linear, dtype=torch.qint8)
    out = wrap_model(quantized, fp32.tokenizer, name=f"{fp32.name}-int8", folder=fp32.folder)
    out.dtype = "int8-dynamic"
    return out


def _scorer(model: str, precision: str) -> Any:
    from invarirank.llm import make_scorer

    return make_scorer("span", _loaded(model, precision), pass_cache=False)


def _tau(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau between the rankings two score vectors give (ties to the earlier presented position)."""
    from invarirank.evaluation._agreement import kendall_tau
    from invarirank.types import rank_by_scores

    return float(kendall_tau(rank_by_scores(a), rank_by_scores(b)))


def agreement(model: str, queries: list[Any], orders: int) -> dict[str, Any]:
    """Score every (query, order) prompt with each precision in turn; timings, τ and score differences."""
    from tqdm import tqdm

    from invarirank._orders import presented_orders

    scorers = {p: _scorer(model, p) for p in PRECISIONS}
    seconds = {p: [] for p in PRECISIONS}
    scores: dict[str, list[np.ndarray]] = {p: [] for p in PRECISIONS}
    prompts = [(q, o) for q in queries for o in presented_orders(q.query_id, len(q.candidates), orders, 42)]
    for q, o in tqdm(prompts, desc=f"{model}: prompts", unit="prompt"):
        presented = [q.candidates[i] for i in o.positions]
        for p in PRECISIONS:
            t0 = time.perf_counter()
            res = scorers[p].score(q, presented)
            seconds[p].append(time.perf_counter() - t0)
            scores[p].append(np.asarray(res.scores, dtype=np.float64))
    out: dict[str, Any] = {"prompts": len(prompts), "precisions": {}}
    ref = float(np.median(seconds["float32"]))
    for p in PRECISIONS:
        taus = [_tau(a, b) for a, b in zip(scores["float32"], scores[p])]
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(scores["float32"], scores[p]))
        out["precisions"][p] = {
            "seconds_per_pass": float(np.median(seconds[p])),
            "speedup": ref / float(np.median(seconds[p])),
            "kendall_tau_mean": float(np.mean(taus)),
            "kendall_tau_min": float(np.min(taus)),
            "max_abs_score_diff": diff,
        }
    return out


def small_run(model: str, queries: list[Any], validation: list[Any], k: int, orders: int) -> dict[str, Any]:
    """PPI and LOC of each method on a small run, per precision (same queries, orders and seeds)."""
    from tqdm import tqdm

    from invarirank._orders import presented_orders
    from invarirank.evaluation import evaluate
    from invarirank.methods import METHODS, QueryPassCache, run_method
    from invarirank.methods.stella import calibrate

    out: dict[str, Any] = {}
    for p in PRECISIONS:
        scorer = _scorer(model, p)
        t0 = time.perf_counter()
        matrix = calibrate(scorer, validation, k, n_queries=10, repeats=1, seed=42)
        rows = []
        for q in tqdm(queries, desc=f"{model} {p}: run", unit="query"):
            cache = QueryPassCache(scorer)
            for o in presented_orders(q.query_id, k, orders, 42):
                presented = [q.candidates[i] for i in o.positions]
                for name in METHODS:
                    opts = {"matrix": matrix} if name == "stella" else {}
                    res = run_method(name, cache, q, presented, seed=42, t=o.key, **opts)
                    rows.append(
                        {
                            "query_id": q.query_id,
                            "method": name,
                            "permutation": o.key,
                            "input": [it.item_id for it in presented],
                            "output": list(res.output),
                            "relevant": list(q.ground_truth),
                        }
                    )
        metrics = evaluate(rows, n_bootstrap=0)
        out[p] = {
            "seconds": time.perf_counter() - t0,
            "methods": {
                m: {"ppi": v["overall"]["ppi"], "loc": v["overall"]["loc"]} for m, v in metrics["methods"].items()
            },
        }
    for p in PRECISIONS:
        out[p]["max_diff_from_float32"] = max(
            abs(out[p]["methods"][m][x] - out["float32"]["methods"][m][x])
            for m in out[p]["methods"]
            for x in ("ppi", "loc")
        )
    return out


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Which lower precision the decision rule adopts (None: stay with float32), with the reason per precision."""
    first = result["models"][next(iter(result["models"]))]
    out: dict[str, Any] = {"adopted": None, "reasons": {}}
    for p in PRECISIONS[1:]:
        fails = []
        for name, m in result["models"].items():
            f = m["precisions"][p]
            if f["speedup"] < 1.5:
                fails.append(f"{name}: {f['speedup']:.2f}x faster (< 1.5x)")
            if f["kendall_tau_mean"] < 0.95:
                fails.append(f"{name}: mean tau {f['kendall_tau_mean']:.3f} (< 0.95)")
        run = first.get("run", {}).get(p)
        if run is not None and run["max_diff_from_float32"] > 0.02:
            fails.append(f"PPI/LOC differ from float32 by up to {run['max_diff_from_float32']:.3f} (> 0.02)")
        out["reasons"][p] = fails or ["meets every criterion"]
        if not fails and out["adopted"] is None:
            out["adopted"] = p
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.precision", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--orders", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--run-queries", type=int, default=3)
    ap.add_argument("--run-orders", type=int, default=6)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    from invarirank.llm.models import set_threads

    threads = set_threads(args.threads)
    queries, validation = _queries(args.k, args.queries)
    result: dict[str, Any] = {
        "k": args.k,
        "queries": args.queries,
        "orders": args.orders,
        "threads": threads,
        "cpu_flags": _cpu_flags(),
        "load_average_start": list(os.getloadavg()),
        "models": {},
    }
    for i, model in enumerate(args.models):
        result["models"][model] = agreement(model, queries, args.orders)
        _write(args.json, result)
        if i == 0 and args.run_queries:
            result["models"][model]["run"] = small_run(
                model, queries[: args.run_queries], validation, args.k, args.run_orders
            )
        _write(args.json, result)
    result["load_average_end"] = list(os.getloadavg())
    result["verdict"] = verdict(result)
    _write(args.json, result)
    print(json.dumps(result, indent=2))
    return 0


def _cpu_flags() -> list[str]:
    from invarirank.llm._precision import cpu_flags

    return sorted(f for f in cpu_flags() if f.startswith(("avx512_bf16", "amx", "avx512_vnni", "avx2")))


def _write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        from invarirank._io import atomic_write_json

        atomic_write_json(path, result)


if __name__ == "__main__":
    sys.exit(main())
