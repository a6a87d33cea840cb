"""Scoring benchmark (issue 5): the naive path against the optimised path of the span scorer on real SmolLM2-135M,
for the whole 4-method workload of one MovieLens-100K query with K = 25.

    python -m benchmarks.scoring [--json FILE] [--orders M] [--user ID] [--model smollm2-135m] [--threads N]

Query (built here from the raw cached ml-100k files, so the benchmark depends on neither the data layer nor the
first stage): the user's 20 most recently rated items, newest first (ties by item id), with the user's own ratings,
as the history; the 25 most-rated items the user has not rated (ties to the lower item id) as the candidates.

Workload per presented order ``t`` (M orders, seeded shuffles of the candidates; a smaller M than the protocol's 20
keeps the run within ~10 minutes on 2 cores — the default is M = 2; every method stays in). The pass sequences
mimic the methods' pass patterns with seeded shuffles (``S_j`` = shuffle ``j`` of the presented order, ``S_0`` = the
presented order itself, shared between methods as :mod:`invarirank.methods` shares them):

* zero-shot: ``S_0`` (1 pass);
* bootstrapping: ``S_0, S_1, S_2`` (3 passes);
* SGS: K passes over shrinking lists of K, K-1, ..., 1 candidates: the first is ``S_0``; after each pass one
  candidate leaves (a seeded pick standing in for the model's top choice, so both paths see the same lists) and
  the rest is reshuffled;
* STELLA: ``S_0 .. S_9`` (10 passes, the maximum; no early stop).

Naive path: every pass a full forward over the whole prompt, logits at every position, no pass cache, no prefix
reuse. Optimised path: the scorer as shipped (fresh pass cache in a temporary folder, prefix KV reuse, logits only
at the candidate-token positions, the unused prompt tail skipped). Both paths see the same pass sequence, run
alternately pass by pass (so that both meet the same machine conditions on a shared machine); each path's time is the
sum of its own passes' wall times; scores are compared pass by pass.

Threads: the CPUs available by default. On a machine shared with other busy processes, two OpenMP threads wait for
each other at every operator whenever one of them is descheduled, which can slow a forward pass by an order of
magnitude; ``--threads 1`` then gives meaningful figures (the matmul uses the same thread count).

Figures (definitions fixed by the issue):

* ``naive_seconds``, ``optimized_seconds``: wall time of each path over the whole workload (model already loaded);
* ``token_work_ratio``: token positions computed, optimised / naive;
* ``max_abs_score_diff``: max |optimised - naive| over every score of every pass;
* ``forward_gflops``: model FLOPs of the optimised path / its wall time, with model FLOPs = 2 × non-embedding
  parameters × token positions computed + 2 × output-projection parameters × positions projected + attention
  (4 × hidden size × attended context, summed over computed positions and layers);
* ``matmul_gflops``: a float32 ``torch.mm`` of two 2048 × 2048 matrices with the same thread count, best of 5.

Goals: ``token_work_ratio`` <= 0.45, ``max_abs_score_diff`` <= 1e-4, ``forward_gflops`` >= 0.6 × ``matmul_gflops``.
A warm rerun of the optimised path against the now filled pass cache is timed as well (``warm_rerun_seconds``).
Diagnostics beside the defined figures: the machine's load average at start and end (the CPUs are shared with
other processes when it exceeds the CPU count, which slows the long paths more than the short matmul), matmul at
the start, and the median / best GFLOP/s of single optimised passes.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from invarirank.llm._accounting import model_flops

K = 25
HISTORY = 20
GOAL_TOKEN_RATIO = 0.45
GOAL_SCORE_DIFF = 1e-4
GOAL_FLOPS_SHARE = 0.6


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    header = [h.split(":")[0] for h in rows[0]]
    return [dict(zip(header, r)) for r in rows[1:] if r]


def build_query(user: str | None = None) -> Any:
    """The benchmark query (see the module docstring) from the raw ml-100k files."""
    from invarirank.assets import ml100k_dir
    from invarirank.types import HistoryEntry, Item, Query

    folder = ml100k_dir()
    items: dict[str, Item] = {}
    for row in _read_tsv(folder / "ml-100k.item"):
        year = row.get("release_year", "").strip()
        items[row["item_id"]] = Item(
            row["item_id"],
            row["movie_title"].strip(),
            int(year) if year.isdigit() else None,
            tuple(g for g in row.get("class", "").split(" ") if g),
        )
    inter = _read_tsv(folder / "ml-100k.inter")
    by_user: dict[str, list[tuple[float, int, float]]] = {}
    popularity: dict[str, int] = {}
    for r in inter:
        by_user.setdefault(r["user_id"], []).append((float(r["timestamp"]), int(r["item_id"]), float(r["rating"])))
        popularity[r["item_id"]] = popularity.get(r["item_id"], 0) + 1
    uid = user or min((u for u, v in by_user.items() if len(v) >= HISTORY), key=int)
    rated = by_user[uid]
    newest = sorted(rated, key=lambda x: (-x[0], x[1]))[:HISTORY]
    history = tuple(HistoryEntry(items[str(i)], r) for _, i, r in newest)
    seen = {str(i) for _, i, _ in rated}
    popular = sorted(
        (iid for iid in popularity if iid not in seen and iid in items), key=lambda iid: (-popularity[iid], int(iid))
    )[:K]
    cands = tuple(items[i] for i in popular)
    return Query(f"u{uid}", uid, history, cands, (cands[0].item_id,))


def workload(query: Any, orders: int, seed: int = 0) -> list[tuple[str, int, list[int]]]:
    """The pass sequence: (method, t, presented indices into query.candidates) per pass, in call order."""
    from invarirank._orders import rng_for

    k = len(query.candidates)
    passes: list[tuple[str, int, list[int]]] = []
    for t in range(orders):
        base = [int(i) for i in rng_for(seed, query.query_id, "bench-order", t).permutation(k)]

        def shuffle(j: int, base: list[int] = base, t: int = t) -> list[int]:
            if j == 0:
                return list(base)
            perm = rng_for(seed, query.query_id, t, "shuffle", j).permutation(k)
            return [base[int(i)] for i in perm]

        passes.append(("zero_shot", t, shuffle(0)))
        passes += [("bootstrapping", t, shuffle(j)) for j in range(3)]
        remaining = shuffle(0)
        for step in range(k):
            passes.append(("sgs", t, list(remaining)))
            rng = rng_for(seed, query.query_id, t, "sgs-bench", step)
            remaining.pop(int(rng.integers(len(remaining))))
            if len(remaining) > 1:
                remaining = [remaining[int(i)] for i in rng.permutation(len(remaining))]
        passes += [("stella", t, shuffle(u)) for u in range(10)]
    return passes


def _run_interleaved(
    naive: Any, fast: Any, query: Any, passes: list[tuple[str, int, list[int]]], counts: dict[str, int]
) -> dict[str, Any]:
    """Run the pass sequence on both paths, alternating pass by pass (naive pass i, then optimised pass i), so
    that both see the same machine conditions; each path's time is the sum of its own passes' wall times.
    Also returns the GFLOP/s of every optimised pass that ran the model (a diagnostic)."""
    from tqdm import tqdm

    cands = query.candidates
    times = {"naive": 0.0, "fast": 0.0}
    scores: dict[str, list[np.ndarray]] = {"naive": [], "fast": []}
    rates: list[float] = []
    for _, _, idx in tqdm(passes, desc="naive + optimised", file=sys.stderr, leave=False, mininterval=5):
        presented = [cands[i] for i in idx]
        for name, scorer in (("naive", naive), ("fast", fast)):
            before = dict(scorer.stats)
            p0 = time.perf_counter()
            scores[name].append(scorer.score(query, presented).scores)
            dt = time.perf_counter() - p0
            times[name] += dt
            if name == "fast" and scorer.stats["tokens_computed"] > before["tokens_computed"]:
                delta = {
                    k: scorer.stats[k] - before[k]
                    for k in ("tokens_computed", "positions_projected", "attention_context")
                }
                rates.append(model_flops(delta, counts) / dt / 1e9)
    return {"times": times, "scores": scores, "rates": rates}


def _run(scorer: Any, query: Any, passes: list[tuple[str, int, list[int]]]) -> tuple[float, list]:
    cands = query.candidates
    out = []
    t0 = time.perf_counter()
    for _, _, idx in passes:
        out.append(scorer.score(query, [cands[i] for i in idx]).scores)
    return time.perf_counter() - t0, out


def matmul_gflops(repeats: int = 5, n: int = 2048) -> float:
    import torch

    a = torch.randn(n, n, dtype=torch.float32)
    b = torch.randn(n, n, dtype=torch.float32)
    torch.mm(a, b)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n**3 / best / 1e9


def measure(
    model: str = "smollm2-135m", orders: int = 2, user: str | None = None, threads: int | None = None, seed: int = 0
) -> dict[str, Any]:
    import torch

    from invarirank.llm._span import SpanScorer
    from invarirank.llm.models import load_model, set_threads

    n_threads = set_threads(threads)
    load_start = os.getloadavg()[0]
    mm_start = matmul_gflops()
    lm = load_model(model, device="cpu", threads=n_threads)
    query = build_query(user)
    passes = workload(query, orders, seed)
    naive = SpanScorer(lm, naive=True, threads=n_threads)
    with tempfile.TemporaryDirectory(prefix="invarirank-bench-") as tmp:
        fast = SpanScorer(lm, cache_dir=tmp, threads=n_threads)
        # one untimed warm-up forward on another prompt so neither path pays first-call costs
        SpanScorer(lm, pass_cache=False).score(query, list(query.candidates)[:2])
        counts = fast.model_flop_counts()
        run = _run_interleaved(naive, fast, query, passes, counts)
        naive_s, fast_s = run["times"]["naive"], run["times"]["fast"]
        naive_scores, fast_scores, rates = run["scores"]["naive"], run["scores"]["fast"], run["rates"]
        fast.pass_cache.close()
        warm = SpanScorer(lm, cache_dir=tmp, threads=n_threads)
        warm_s, warm_scores = _run(warm, query, passes)
        warm_stats = dict(warm.stats)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(fast_scores, naive_scores))
    warm_equal = all(np.array_equal(a, b) for a, b in zip(fast_scores, warm_scores))
    fast_flops = model_flops(fast.stats, counts)
    naive_flops = model_flops(naive.stats, counts)
    mm = matmul_gflops()
    load_end = os.getloadavg()[0]
    fwd = fast_flops / fast_s / 1e9
    ratio = fast.stats["tokens_computed"] / naive.stats["tokens_computed"]
    prefix_len = len(fast.plan(query, query.candidates).prefix)
    full_len = fast.plan(query, query.candidates).full_length
    per_method: dict[str, int] = {}
    for m, _, _ in passes:
        per_method[m] = per_method.get(m, 0) + 1
    result = {
        "benchmark": "scoring",
        "model": lm.name,
        "query_id": query.query_id,
        "k": len(query.candidates),
        "history": len(query.history),
        "orders": orders,
        "passes": len(passes),
        "passes_per_method": per_method,
        "distinct_prompts": fast.stats["forward_passes"],
        "prompt_tokens_full_list": full_len,
        "prefix_tokens_per_query": prefix_len,
        "threads": n_threads,
        "torch": torch.__version__,
        "naive_seconds": round(naive_s, 3),
        "optimized_seconds": round(fast_s, 3),
        "speedup": round(naive_s / fast_s, 3),
        "warm_rerun_seconds": round(warm_s, 3),
        "warm_rerun_scores_identical": warm_equal,
        "warm_rerun_forward_passes": warm_stats["forward_passes"],
        "naive_tokens": int(naive.stats["tokens_computed"]),
        "optimized_tokens": int(fast.stats["tokens_computed"]),
        "token_work_ratio": round(ratio, 4),
        "max_abs_score_diff": diff,
        "forward_gflops": round(fwd, 2),
        "naive_forward_gflops": round(naive_flops / naive_s / 1e9, 2),
        "matmul_gflops": round(mm, 2),
        "matmul_gflops_at_start": round(mm_start, 2),
        "load_average_1min_start_end": [round(load_start, 2), round(load_end, 2)],
        "forward_share_of_matmul": round(fwd / mm, 3),
        "diagnostic_pass_gflops_median": round(float(np.median(rates)), 2) if rates else None,
        "diagnostic_pass_gflops_best": round(float(np.max(rates)), 2) if rates else None,
        "optimized_model_gflop": round(fast_flops / 1e9, 1),
        "naive_model_gflop": round(naive_flops / 1e9, 1),
        "optimized_stats": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in fast.stats.items()},
        "naive_stats": {k: (round(v, 3) if isinstance(v, float) else v) for k, v in naive.stats.items()},
        "flop_counts": counts,
    }
    result["goals"] = {
        "token_work_ratio": {
            "target": f"<= {GOAL_TOKEN_RATIO}",
            "value": result["token_work_ratio"],
            "met": ratio <= GOAL_TOKEN_RATIO,
        },
        "max_abs_score_diff": {"target": f"<= {GOAL_SCORE_DIFF}", "value": diff, "met": diff <= GOAL_SCORE_DIFF},
        "forward_vs_matmul": {
            "target": f">= {GOAL_FLOPS_SHARE} x matmul_gflops",
            "value": result["forward_share_of_matmul"],
            "met": fwd >= GOAL_FLOPS_SHARE * mm,
        },
    }
    result["goals_met"] = all(g["met"] for g in result["goals"].values())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scoring", description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE (JSON)")
    parser.add_argument("--orders", type=int, default=2, help="presented orders M (default 2; the protocol's is 20)")
    parser.add_argument("--user", default=None, help="ml-100k user id (default: the lowest id with >= 20 ratings)")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: the CPUs available)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    from invarirank.errors import InvariRankError

    try:
        res = measure(args.model, args.orders, args.user, args.threads, args.seed)
    except InvariRankError as exc:
        print(f"invarirank: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"scoring benchmark: {res['model']}, query {res['query_id']}, K={res['k']}, history {res['history']}, "
        f"M={res['orders']} orders, {res['passes']} passes ({res['distinct_prompts']} distinct prompts), "
        f"{res['threads']} threads"
    )
    print(
        f"  machine load (1-min average) {res['load_average_1min_start_end']} on {os.cpu_count()} CPUs "
        f"(other processes share the cores when it exceeds the CPU count)"
    )
    print(f"  naive      {res['naive_seconds']:9.1f} s  {res['naive_tokens']:9d} token positions")
    print(
        f"  optimised  {res['optimized_seconds']:9.1f} s  {res['optimized_tokens']:9d} token positions "
        f"(speed-up x{res['speedup']:.2f}; warm rerun {res['warm_rerun_seconds']:.2f} s, "
        f"{res['warm_rerun_forward_passes']} forwards)"
    )
    print(
        f"  token_work_ratio   {res['token_work_ratio']:.4f}  (goal <= {GOAL_TOKEN_RATIO}: "
        f"{'met' if res['goals']['token_work_ratio']['met'] else 'NOT met'})"
    )
    print(
        f"  max_abs_score_diff {res['max_abs_score_diff']:.3g}  (goal <= {GOAL_SCORE_DIFF}: "
        f"{'met' if res['goals']['max_abs_score_diff']['met'] else 'NOT met'})"
    )
    print(
        f"  forward_gflops     {res['forward_gflops']:.1f}  vs matmul_gflops {res['matmul_gflops']:.1f} "
        f"= {res['forward_share_of_matmul']:.0%} (goal >= {GOAL_FLOPS_SHARE:.0%}: "
        f"{'met' if res['goals']['forward_vs_matmul']['met'] else 'NOT met'})"
    )
    print(
        f"  (diagnostic: optimised passes one by one reach median {res['diagnostic_pass_gflops_median']} and best "
        f"{res['diagnostic_pass_gflops_best']} GFLOP/s; matmul at start {res['matmul_gflops_at_start']})"
    )
    if args.json:
        from invarirank._io import atomic_write_json

        atomic_write_json(args.json, res)
        print(f"  written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
