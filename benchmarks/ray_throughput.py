"""Throughput of the ray executor against the local one, on the CPU with the simulated scorer, in one run.

    python -m benchmarks.ray_throughput [--queries 2000] [--k 25] [--m 20] [--shard-queries 50] [--json FILE]

The same run (synthetic candidates, all four methods) is computed three times into fresh folders: by the local
executor (this process, one query per shard), by a local Ray with 2 workers and with 1 worker (shards of
``--shard-queries``). STELLA_LW's calibration is computed once beforehand and read from its cache by all three, so
the figures compare the reranking phase only: queries per second of wall time from the first shard sent to the
last one written (``rerank_seconds_this_session`` of each run's ``run.json``). Ray's start-up (a few seconds) is
reported separately. It checks that the three observations files are byte-identical.

Goals (issue 12): 2 workers ≥ 1.7 × the local executor's throughput; 1 worker ≤ 10 % overhead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ray_throughput", description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--k", type=int, default=25)
    p.add_argument("--m", type=int, default=20)
    p.add_argument("--shard-queries", type=int, default=50)
    p.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    from invarirank.runner import RunConfig, run_experiment
    from invarirank.runner._ray_executor import RayExecutor

    base = Path(tempfile.mkdtemp(prefix="ray-throughput-"))
    os.environ["INVARIRANK_CACHE"] = str(base / "cache")

    def config(name: str, **kw) -> RunConfig:
        return RunConfig.from_mapping(
            dict(
                dataset="synthetic",
                scorer="simulated",
                K=args.k,
                M=args.m,
                n_queries=args.queries,
                n_bootstrap=0,
                seed=1,
                grid="bench",
                out=str(base / name),
                cache_dir=str(base / "cache"),
                **kw,
            )
        )

    t0 = time.perf_counter()
    warm = RunConfig.from_mapping(dict(config("warm").to_dict(), n_queries=1))
    run_experiment(warm, progress=False)  # STELLA_LW's calibration, cached for all three
    print(f"calibration: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    figures: dict[str, dict] = {}
    local = run_experiment(config("local"), progress=False)
    figures["local"] = {"seconds": local.volatile["timings"]["rerank_seconds_this_session"]}
    for workers in (2, 1):
        t = time.perf_counter()
        with RayExecutor(workers=workers) as ex:
            ex.resources()
            startup = time.perf_counter() - t
            res = run_experiment(config(f"ray{workers}", shard_queries=args.shard_queries), progress=False, executor=ex)
        figures[f"ray-{workers}"] = {
            "seconds": res.volatile["timings"]["rerank_seconds_this_session"],
            "ray_start_seconds": round(startup, 2),
        }
    same = all(
        (base / name / "observations.jsonl").read_bytes() == (base / "local" / "observations.jsonl").read_bytes()
        for name in ("ray2", "ray1")
    )
    for f in figures.values():
        f["queries_per_s"] = round(args.queries / f["seconds"], 3)
    local_rate = figures["local"]["queries_per_s"]
    report = {
        "queries": args.queries,
        "K": args.k,
        "M": args.m,
        "shard_queries": args.shard_queries,
        "cpus": os.cpu_count(),
        "figures": figures,
        "identical_observations": same,
        "speedup_2_workers": round(figures["ray-2"]["queries_per_s"] / local_rate, 3),
        "overhead_1_worker": round(1 - figures["ray-1"]["queries_per_s"] / local_rate, 3),
    }
    print(json.dumps(report, indent=2))
    print(
        f"2 workers: {report['speedup_2_workers']:.2f}x the local executor (goal >= 1.7); 1 worker: "
        f"{100 * report['overhead_1_worker']:.1f} % overhead (goal <= 10 %); observations identical: {same}",
        file=sys.stderr,
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
