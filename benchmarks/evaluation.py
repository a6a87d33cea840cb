"""Benchmark: the whole ``invarirank evaluate`` process (references on) against the authors' evaluation script and
the literal evaluator, on synthetic observations.

Synthetic observations come from a tiny simulated reranker (written here, independent of the package's scorers):
each query has K candidates with a latent utility ~ N(0, 1); for each of M presented orders (seeded random
permutations) the output ranks candidates by utility + ``bias`` x (1 - p/(K-1)) (a bonus for early presented
positions p) + N(0, ``noise``²); the ground truth is the 1-3 highest-utility candidates plus, for a third of the
queries, one id that is not a candidate. Ids mix numeric strings and ASIN-like strings.

Measured, for each scenario (default: 1,000 queries x K=25 x M=20 and 200 queries x K=50 x M=20, one method):

- fast: wall time of a subprocess ``python -m invarirank evaluate FILE --output OUT`` (defaults: k 1,5,10,
  exposure@5, 3 buckets, exact Kemeny on (unused: K > 10), 1,000 bootstrap replicates, 10,000 sign flips, and the
  random-order reference with its comparisons, checked present in the file written) — start-up, reading,
  validation, metrics, references, intervals and writing included; the best of ``--repeats`` runs (the median is
  printed too);
- reference cost: in this process, CPU seconds of the random-order reference against one method's evaluation on
  the same rows (the best of three, caches cleared), the reference's goal being at most one method's cost;
- authors: the authors' own evaluation script (``benchmarks/_authors.py``; only with ``--authors-code PATH`` or
  ``INVARIRANK_AUTHORS_CODE``: their code is neither shipped nor downloaded) as a whole process on the first
  ``--authors-queries`` n1,n2 queries, extrapolated linearly to the whole file;
- literal: ``tests.support.literal_evaluator`` (read + metrics, no intervals) in this process on the first
  ``--literal-queries`` queries, scaled linearly per query to the whole file (it is far too slow to run in full);
  the per-query metrics of that subset are checked equal to the fast evaluator's;
- the ratios authors/fast and literal/fast (same run), and reference/fast against the figures of a straightforward
  pure-Python implementation timed once on the first development machine (161 s and 674 s). Goal: >= 100x the
  authors' code (the fixed figures stand in when their checkout is not given).

``python -m benchmarks.evaluation [--json FILE] [--repeats N] [--literal-queries N1,N2] [--authors-code PATH]
[--authors-queries N1,N2] [--quick]``

Exit status 1 only when the fast and the literal evaluator disagree; speed is reported, not asserted (wall times
depend on the machine's load, which is printed with them, together with CPU seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import _authors
from benchmarks._process import timed_run

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = [  # (queries, K, M, reference seconds of a pure-Python implementation, literal and authors' subsets)
    {"queries": 1000, "K": 25, "M": 20, "reference_s": 161.0, "literal_queries": 20, "authors_queries": (10, 40)},
    {"queries": 200, "K": 50, "M": 20, "reference_s": 674.0, "literal_queries": 4, "authors_queries": (2, 6)},
]
GOAL = 100.0


def generate(
    path: Path,
    queries: int,
    K: int,
    M: int,
    *,
    bias: float = 1.0,
    noise: float = 0.5,
    seed: int = 0,
    method: str = "simulated",
) -> None:
    """Write a synthetic observations file (JSON Lines) from a position-biased simulated reranker."""
    rng = np.random.default_rng(seed)
    lines = []
    bonus = bias * (1.0 - np.arange(K) / max(1, K - 1))
    for q in range(queries):
        raw = rng.choice(10 * K * 10, size=K, replace=False)
        ids = [str(x) if x % 3 else f"B{x:05d}" for x in raw.tolist()]
        utility = rng.normal(size=K)
        best = np.argsort(-utility)[: int(rng.integers(1, 4))]
        relevant = [ids[i] for i in best.tolist()] + (["X0"] if q % 3 == 0 else [])
        for t in range(M):
            presented = rng.permutation(K)
            score = utility[presented] + bonus + noise * rng.normal(size=K)
            ranked = presented[np.argsort(-score, kind="stable")]
            lines.append(
                json.dumps(
                    {
                        "schema_version": 1,
                        "query_id": f"u{q}",
                        "method": method,
                        "permutation": t,
                        "input": [ids[i] for i in presented.tolist()],
                        "output": [ids[i] for i in ranked.tolist()],
                        "relevant": relevant,
                        "model": "simulated",
                        "k": K,
                    }
                )
            )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def time_cli(path: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + sys) of one whole ``invarirank evaluate`` process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    command = [sys.executable, "-m", "invarirank", "evaluate", str(path), "--output", str(out)]
    proc, seconds, cpu = timed_run(command, ROOT, env)
    if proc.returncode != 0:
        raise RuntimeError(f"invarirank evaluate failed ({proc.returncode}): {proc.stderr.strip()}")
    if "random" not in json.loads(out.read_text(encoding="utf-8"))["references"]:
        raise RuntimeError(f"{out}: no random-order reference (references were expected on)")
    return seconds, cpu


def reference_cost(path: Path, repeats: int = 3) -> tuple[float, float]:
    """(CPU seconds of one method's evaluation, CPU seconds of the random-order reference) on the same rows, each
    the best of ``repeats`` with the reference's caches cleared (no bootstrap: the metrics themselves)."""
    from invarirank.evaluation import _random_reference as random_reference
    from invarirank.evaluation import _references as references
    from invarirank.evaluation import engine
    from invarirank.evaluation.observations import as_rows

    rows = as_rows(path)
    grouped: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        grouped.setdefault(r["method"], {}).setdefault(r["query_id"], []).append(r)
    settings = engine.check_settings([1, 5, 10], 5, 3, 10, 0, 0, 0)
    inputs = references.reference_inputs(grouped)
    method, reference = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        for queries in grouped.values():
            engine._evaluate_method(queries, settings)
        method.append((time.process_time() - c0) / len(grouped))
        for cached in (
            random_reference.expected_gpi,
            random_reference.expected_range,
            random_reference._binomial_cdf,
            references._random_expectations,
        ):
            cached.cache_clear()
        c0 = time.process_time()
        references.random_block(inputs, settings, replicates=references.REFERENCE_REPLICATES)
        reference.append(time.process_time() - c0)
    return min(method), min(reference)


def time_literal(path: Path, n_queries: int) -> tuple[float, float, list[dict], dict]:
    """(wall, CPU) seconds of the literal evaluator (read + metrics) on the rows of the first ``n_queries`` queries."""
    sys.path.insert(0, str(ROOT))
    from tests.support.literal_evaluator import literal_evaluate

    t0, c0 = time.perf_counter(), time.process_time()
    rows, keep = [], set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["query_id"] not in keep:
                if len(keep) == n_queries:
                    break
                keep.add(row["query_id"])
            rows.append(row)
    result = literal_evaluate(rows)
    return time.perf_counter() - t0, time.process_time() - c0, rows, result


def check_equal(rows: list[dict], literal: dict) -> int:
    """Number of per-query metric values where the fast evaluator differs from the literal one."""
    from invarirank.evaluation import evaluate

    fast = evaluate(rows, n_bootstrap=0, exact_kemeny_max_k=None)
    bad = 0
    for method, block in literal["methods"].items():
        for qid, d in block["per_query"].items():
            f = fast["methods"][method]["per_query"][qid]
            for key, a in d.items():
                if key in ("gpi_mass", "gpi_order"):
                    continue
                b = f[key]
                if (a is None) != (b is None) or (
                    a is not None and not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
                ):
                    bad += 1
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.evaluation", description=__doc__.split("\n")[0])
    ap.add_argument("--json", metavar="FILE", help="also write the measurements as JSON")
    ap.add_argument("--repeats", type=int, default=3, help="whole-process runs per scenario (best is reported)")
    ap.add_argument(
        "--literal-queries",
        default=None,
        metavar="N1,N2",
        help="queries timed with the literal evaluator per scenario (default 20,4)",
    )
    ap.add_argument(
        "--authors-code",
        metavar="PATH",
        help=f"a checkout of the authors' code to time as a same-run baseline (default: ${_authors.ENV_VAR})",
    )
    ap.add_argument(
        "--authors-queries", metavar="N1,N2", help="queries it is timed on, two sizes (default 10,40 and 2,6)"
    )
    ap.add_argument("--quick", action="store_true", help="a tenth of the queries (a smoke run; no reference ratio)")
    args = ap.parse_args(argv)
    authors = _authors.find_checkout(args.authors_code)
    scenarios = [dict(s) for s in SCENARIOS]
    if args.authors_queries:
        sizes = tuple(int(n) for n in args.authors_queries.split(","))
        if len(sizes) != 2 or not 0 < sizes[0] < sizes[1]:
            raise SystemExit(f"--authors-queries: expected two sizes 0 < N1 < N2, got {args.authors_queries!r}")
        for s in scenarios:
            s["authors_queries"] = sizes
    if args.literal_queries:
        for s, n in zip(scenarios, args.literal_queries.split(",")):
            s["literal_queries"] = int(n)
    if args.quick:
        for s in scenarios:
            s["queries"] //= 10
    results = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="invarirank-bench-") as tmp:
        for s in scenarios:
            path = Path(tmp) / f"obs-{s['queries']}x{s['K']}x{s['M']}.jsonl"
            generate(path, s["queries"], s["K"], s["M"], seed=s["K"])
            size_mb = path.stat().st_size / 1e6
            runs = [time_cli(path, Path(tmp) / "metrics.json") for _ in range(max(1, args.repeats))]
            walls, cpus = [w for w, _ in runs], [c for _, c in runs]
            fast, fast_cpu = min(walls), min(cpus)
            n_lit = min(s["literal_queries"], s["queries"])
            lit_s, lit_cpu, lit_rows, lit_result = time_literal(path, n_lit)
            scale = s["queries"] / n_lit
            literal_full, literal_cpu_full = lit_s * scale, lit_cpu * scale
            mismatches = check_equal(lit_rows, lit_result)
            method_cpu, random_cpu = reference_cost(path)
            r = {
                "queries": s["queries"],
                "K": s["K"],
                "M": s["M"],
                "rows": s["queries"] * s["M"],
                "file_mb": round(size_mb, 2),
                "load_average_1min": round(os.getloadavg()[0], 2),
                "fast_wall_s_best": round(fast, 3),
                "fast_wall_s_median": round(statistics.median(walls), 3),
                "fast_wall_runs_s": [round(x, 3) for x in walls],
                "fast_cpu_s_best": round(fast_cpu, 3),
                "literal_queries_timed": n_lit,
                "literal_wall_s_subset": round(lit_s, 3),
                "literal_cpu_s_subset": round(lit_cpu, 3),
                "literal_scale": scale,
                "literal_wall_s_scaled": round(literal_full, 1),
                "literal_cpu_s_scaled": round(literal_cpu_full, 1),
                "speedup_vs_literal_wall": round(literal_full / fast, 1),
                "speedup_vs_literal_cpu": round(literal_cpu_full / fast_cpu, 1),
                "reference_s": s["reference_s"],
                "literal_equal_mismatches": mismatches,
                "one_method_cpu_s": round(method_cpu, 3),
                "random_reference_cpu_s": round(random_cpu, 3),
            }
            if authors is not None:
                n1, n2 = (min(n, s["queries"] - 1) for n in s["authors_queries"])
                r.update(_authors.extrapolated(authors, path, (n1, n2), s["queries"], Path(tmp)))
                r["speedup_vs_authors_wall"] = round(r["authors_wall_s_extrapolated"] / fast, 1)
                r["speedup_vs_authors_cpu"] = round(r["authors_cpu_s_extrapolated"] / fast_cpu, 1)
                r["goal_met_vs_authors"] = r["speedup_vs_authors_wall"] >= GOAL
            if not args.quick:
                r["speedup_vs_reference"] = round(s["reference_s"] / fast, 1)
                r["speedup_vs_reference_cpu"] = round(s["reference_s"] / fast_cpu, 1)
                r["goal_met"] = r["speedup_vs_reference"] >= GOAL
            ok &= mismatches == 0
            results.append(r)
            print(
                f"{s['queries']} queries x K={s['K']} x M={s['M']} ({r['rows']} rows, {size_mb:.1f} MB; "
                f"load average {r['load_average_1min']}):"
            )
            print(
                f"  invarirank evaluate, whole process (start-up, read, validate, metrics, random-order reference "
                f"and comparisons, 1000-replicate CIs, write): best {fast:.2f} s wall ({fast_cpu:.2f} s CPU), "
                f"median {statistics.median(walls):.2f} s of {len(walls)} runs"
            )
            print(
                f"  random-order reference: {random_cpu:.3f} s CPU against {method_cpu:.3f} s for one method's "
                f"evaluation (goal: at most one method's)"
            )
            if authors is not None:
                print(
                    f"  the authors' evaluation script ({authors}), whole process: "
                    f"{r['authors_cpu_s_timed'][0]:.2f} / {r['authors_cpu_s_timed'][1]:.2f} s CPU on the first "
                    f"{n1} / {n2} queries, extrapolated → {r['authors_wall_s_extrapolated']:.0f} s wall "
                    f"({r['authors_cpu_s_extrapolated']:.0f} s CPU); invarirank evaluate with references on is "
                    f"{r['speedup_vs_authors_wall']:.0f}x faster wall, {r['speedup_vs_authors_cpu']:.0f}x on CPU "
                    f"seconds (same run; goal >= {GOAL:.0f}x: {'met' if r['goal_met_vs_authors'] else 'NOT met'})"
                )
            else:
                print(
                    f"  the authors' evaluation script: not timed (give a checkout of their code with "
                    f"--authors-code or ${_authors.ENV_VAR})"
                )
            print(
                f"  literal evaluator: {lit_s:.2f} s wall ({lit_cpu:.2f} s CPU) on the first {n_lit} queries, "
                f"scaled x{scale:g} → {literal_full:.0f} s wall ({literal_cpu_full:.0f} s CPU) for all "
                f"(read + metrics; no bootstrap, no start-up)"
            )
            print(
                f"  speed-up vs literal (same run): {literal_full / fast:.0f}x wall, "
                f"{literal_cpu_full / fast_cpu:.0f}x CPU; fast == literal on the subset: "
                f"{'yes' if mismatches == 0 else f'NO ({mismatches} values differ)'}"
            )
            if not args.quick:
                print(
                    f"  vs the fixed figure of a pure-Python implementation, {s['reference_s']:.0f} s: "
                    f"{r['speedup_vs_reference']:.0f}x wall "
                    f"(goal >= {GOAL:.0f}x: {'met' if r['goal_met'] else 'NOT met'}); "
                    f"{r['speedup_vs_reference_cpu']:.0f}x on CPU seconds"
                )
            if r["load_average_1min"] > (os.cpu_count() or 1):
                print(
                    f"  note: the machine was busy (load {r['load_average_1min']} on {os.cpu_count()} cores), "
                    f"so wall times are inflated; the CPU-second ratios are the steadier figure"
                )
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "evaluation", "scenarios": results}, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
