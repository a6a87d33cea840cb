"""bfloat16 against float32 on this CPU, paired on a committed run's own queries and presented orders.

    python -m benchmarks.precision_cpu [--run results/evidence/smollm2-span-k10] [--queries 4]
        [--methods zero_shot,bootstrapping] [--json book/data/precision_cpu.json]
    python -m benchmarks.precision_cpu --run results/paper-cpu/qwen25-span-k25 --grid configs/grid-paper-cpu.yaml ...

``--run`` is a finished run's folder (its ``manifest.json`` and observations), or the folder of a run still being
computed shard by shard (no manifest yet): then ``--grid`` names the grid file that declares it, its settings come
from there and its committed rows from its committed query shards (``shards/*/records.jsonl``, in shard order).

For the first ``--queries`` test queries of the committed run (in run order), every method of ``--methods`` is
run on every presented order twice — once with the run's scorer in float32 (its committed setting: the rankings
must equal the committed rows, the scores within 1e-5) and once in bfloat16 — on one torch thread, without the
persistent pass cache, the two precisions interleaved query by query so that machine load falls on both alike.
It prints and writes what it measured:

* seconds per scorer pass in each precision and their ratio (float32 / bfloat16: > 1 means bf16 is faster);
* Kendall's tau-b between the float32 and bfloat16 scores of every (method, order), its mean and minimum, and the
  share of rankings that are identical;
* each method's PPI, GPI and LOC in both precisions and their differences, and the paired comparison verdicts of
  the measured methods in both precisions;
* the CPU's bf16-related flags (``lscpu``); a CPU without ``avx512_bf16`` or ``amx_bf16`` has no bf16 arithmetic,
  and a run in bfloat16 is refused on it.

The adoption rule for new CPU runs (all must hold, measured in one run): >= 1.5x faster, mean tau >= 0.95, every
method's PPI and LOC within 0.02, every paired verdict the same, and a CPU with bf16 support.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def cpu_flags() -> dict[str, Any]:
    """The CPU's model name and its bf16-related flags (:func:`invarirank.llm._precision.cpu_description`, as run
    manifests record them), with whether it has AVX-512 and AVX2."""
    from invarirank.llm._precision import cpu_description
    from invarirank.llm._precision import cpu_flags as flags_of

    flags = flags_of()
    return {**cpu_description(), "avx512f": "avx512f" in flags, "avx2": "avx2" in flags}


def _kendall(a: list[float], b: list[float]) -> float:
    from scipy.stats import kendalltau

    tau = kendalltau(a, b).statistic
    return 1.0 if tau != tau else float(tau)  # constant scores on both sides: identical orderings


def _verdicts(metrics: dict) -> dict[str, str]:
    """Each paired comparison's verdict: which method is higher and whether the difference is significant
    (p < 0.05), keyed ``metric:a-b``."""
    out = {}
    for metric, table in metrics.get("comparisons", {}).items():
        for a, row in table.items():
            for b, c in row.items():
                if c.get("p") is None or c.get("mean_diff") is None:
                    continue
                side = "a > b" if c["mean_diff"] > 0 else "a < b" if c["mean_diff"] < 0 else "a = b"
                out[f"{metric}:{a}-{b}"] = f"{side}, {'p < 0.05' if c['p'] < 0.05 else 'n.s.'}"
    return out


def _committed(run: Path, grid: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's settings and its committed rows: a finished run's manifest and observations, else (a run
    computed shard by shard, no manifest yet) the settings that ``grid`` declares for it and the rows of its
    committed query shards, in shard order."""
    from invarirank.evaluation import read_observations

    if (run / "manifest.json").exists():
        cfg = dict(json.loads((run / "manifest.json").read_text())["config"])
        return cfg, list(read_observations(run / next(p.name for p in run.glob("observations.jsonl*"))))
    if not grid:
        sys.exit(f"--run {run}: no manifest.json (a run still being computed?); name its grid file with --grid")
    from invarirank.grid import load_grid
    from invarirank.store import committed_shards

    try:
        config = load_grid(grid, root=Path.cwd()).run(run.name)
    except KeyError:
        sys.exit(f"--grid {grid}: declares no run named {run.name!r} (the --run folder's name)")
    shards = committed_shards(run)
    if not shards:
        sys.exit(f"--run {run}: no committed query shard (shards/*/records.jsonl)")
    rows = [
        row
        for shard in shards
        for line in (shard / "records.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
        for row in json.loads(line)["rows"]
    ]
    return config.to_dict(), rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", default="results/evidence/smollm2-span-k10")
    ap.add_argument("--queries", type=int, default=4, help="the first N test queries of the run (default 4)")
    ap.add_argument("--methods", default="zero_shot,bootstrapping")
    ap.add_argument("--json", help="write the measurement here (e.g. book/data/precision_cpu.json)")
    ap.add_argument("--grid", help="the grid file declaring --run when the run has no manifest.json yet")
    ap.add_argument("--note", default="", help="what else ran on the machine meanwhile (written with the result)")
    args = ap.parse_args(argv)

    import torch

    from invarirank.evaluation import evaluate
    from invarirank.llm.factory import make_scorer
    from invarirank.methods import QueryPassCache
    from invarirank.runner import RunConfig, load_queries
    from invarirank.runner.rerank import rerank_query

    torch.set_num_threads(1)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = os.getloadavg()[0]
    os.environ["INVARIRANK_ALLOW_EMULATED_BF16"] = "1"  # this script measures the emulation itself
    run = Path(args.run)
    cfg, committed = _committed(run, args.grid)
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(cfg["methods"]))
    if unknown:
        sys.exit(f"--methods: {', '.join(unknown)} not in the run's methods {cfg['methods']}")
    config = RunConfig.from_mapping({k: v for k, v in cfg.items() if v is not None} | {"methods": methods})
    order = list(dict.fromkeys(r["query_id"] for r in committed))[: args.queries]
    qs = {q.query_id: q for q in load_queries(config, progress=False).test}
    queries = [qs[qid] for qid in order]
    dataset = cfg["dataset"]

    scorers = {
        dt: QueryPassCache(
            make_scorer(cfg["scorer"], cfg["model"], dtype=dt, pass_cache=False, **cfg.get("scorer_options", {}))
        )
        for dt in ("float32", "bfloat16")
    }
    seconds = {dt: 0.0 for dt in scorers}
    passes = {dt: 0 for dt in scorers}
    rows: dict[str, list[dict]] = {dt: [] for dt in scorers}
    warm = queries[0]
    for sc in scorers.values():  # warm-up: one presented order of one method, not timed
        sc.scorer.score(warm, warm.candidates)
    for i, q in enumerate(queries):
        for dt, sc in scorers.items():
            t0 = time.perf_counter()
            got = rerank_query(
                sc, q, methods=methods, M=config.M, seed=config.seed, model=cfg["model"], dataset=dataset
            )
            seconds[dt] += time.perf_counter() - t0
            passes[dt] += sum(r.passes for r in got)
            rows[dt].extend(r.to_json() for r in got)
        print(
            f"query {i + 1}/{len(queries)} {q.query_id}: float32 {seconds['float32']:.0f} s, "
            f"bfloat16 {seconds['bfloat16']:.0f} s",
            file=sys.stderr,
        )

    # float32 must reproduce the committed rows: same rankings, scores within 1e-5
    ref = {(r["query_id"], r["method"], r["permutation"]): r for r in committed}
    worst = 0.0
    for r in rows["float32"]:
        c = ref[(r["query_id"], r["method"], r["permutation"])]
        if list(c["output"]) != list(r["output"]):
            sys.exit(
                f"float32 does not reproduce the committed ranking of {r['query_id']} {r['method']} "
                f"order {r['permutation']}"
            )
        worst = max(worst, max(abs(a - b) for a, b in zip(c["scores"], r["scores"])))

    taus, same = [], 0
    for a, b in zip(rows["float32"], rows["bfloat16"]):
        taus.append(_kendall(a["scores"], b["scores"]))
        same += list(a["output"]) == list(b["output"])
    metrics = {dt: evaluate(rows[dt], n_bootstrap=200) for dt in rows}
    per_method = {}
    for m in methods:
        per_method[m] = {dt: {k: metrics[dt]["methods"][m]["overall"][k] for k in ("ppi", "gpi", "loc")} for dt in rows}
        per_method[m]["difference"] = {
            k: per_method[m]["bfloat16"][k] - per_method[m]["float32"][k] for k in ("ppi", "gpi", "loc")
        }
    verdicts = {dt: _verdicts(metrics[dt]) for dt in rows}
    speed = {dt: seconds[dt] / max(passes[dt], 1) for dt in rows}
    flags = cpu_flags()
    out = {
        "what": "bfloat16 against float32 on the CPU, paired on a committed run's queries and presented orders",
        "run": str(run),
        "model": cfg["model"],
        "scorer": cfg["scorer"],
        "date": started,
        "load_average": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)},
        "note": args.note,
        "methods": methods,
        "queries": len(queries),
        "query_ids": order,
        "M": cfg["M"],
        "K": cfg["K"],
        "threads": 1,
        "cpu": flags,
        "torch": torch.__version__,
        "passes": passes,
        "seconds": seconds,
        "seconds_per_pass": speed,
        "speedup_bf16": speed["float32"] / speed["bfloat16"],
        "float32_vs_committed_max_abs_score_difference": worst,
        "tau": {"mean": sum(taus) / len(taus), "min": min(taus), "orders": len(taus)},
        "identical_rankings": same / len(taus),
        "consistency": per_method,
        "verdicts": verdicts,
    }
    rule = {
        "speedup >= 1.5": out["speedup_bf16"] >= 1.5,
        "mean tau >= 0.95": out["tau"]["mean"] >= 0.95,
        "PPI and LOC within 0.02": all(
            abs(v["difference"][k]) <= 0.02 for v in per_method.values() for k in ("ppi", "loc")
        ),
        "verdicts the same": verdicts["float32"] == verdicts["bfloat16"],
        "CPU supports bf16": flags["bf16_supported"],
    }
    out["rule"] = rule
    out["decision"] = "bfloat16" if all(rule.values()) else "float32"
    print(json.dumps(out, indent=1))
    if args.json:
        tmp = Path(args.json).with_suffix(".json.part")
        tmp.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
