"""How often the exposure deviations' bootstrap intervals cover the truth, on simulated rankers with a known curve.

    python -m benchmarks.exposure_intervals [--draws 300] [--bootstrap 1000] [--json book/data/exposure_intervals.json]

The exposure MAD and maximum deviation (:mod:`invarirank.evaluation._positional_exposure`) measure how far a pooled
curve E_5(p) lies from the flat line min(5, K)/K. Estimated from Q queries they are biased upward (noise only adds
deviation), and a bootstrap resample adds the noise once more, so the replicates sit above the estimate. This
script measures what that does to a 95% interval: the **percentile** interval (schema 3 of ``metrics.json``) and
the **basic** (pivotal) interval clipped at 0 (:func:`invarirank.evaluation._bootstrap.basic_interval`, schema 4),
through the very functions ``metrics.json`` is computed with (:func:`~invarirank.evaluation._bootstrap.collect`,
:func:`~invarirank.evaluation._positional_exposure.deviation_statistics`).

**The simulated ranker.** A query has K items with utilities u ~ N(0, 1) (the queries differ); each of its M
presented orders is a uniformly random permutation; the ranker scores the item at 0-based presented position p with
u + f(p) + Gumbel noise, where f(p) = -beta p / (K - 1) (a linear primacy bias of strength ``beta``), and its top 5
is what reaches the output top 5. ``beta`` = 0 is position-blind: the true curve is exactly flat (MAD 0). The true
curve of another ``beta`` is estimated once from ``--truth-queries`` queries (its own seed). A draw is Q queries
× M orders; ``--draws`` draws per ``beta``, each with ``--bootstrap`` replicates seeded by the draw's index.

It also checks the paired difference MAD_a - MAD_b of two rankers on the same queries and presented orders (the
interval of ``comparisons``: percentile in schema 3, basic and unclipped in schema 4).

Prints and writes, per ``beta``: the true MAD and maximum deviation, the mean estimates, each interval's coverage
of the truth and mean width, and the share of percentile intervals that lie wholly above their estimate. Seeded:
the same arguments give the same file, but for its ``seconds``.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import time
from typing import Any

import numpy as np

from invarirank._io import atomic_write_text
from invarirank.evaluation._bootstrap import basic_interval, collect, percentile_interval
from invarirank.evaluation._positional_exposure import deviation_statistics

BETAS = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0)
#: the pair of rankers (beta_a, beta_b) whose paired MAD difference is checked
PAIR = (0.5, 0.25)
TOP = 5


def simulate_hits(
    rng: np.random.Generator,
    queries: int,
    orders: int,
    K: int,
    beta: float,
    utilities: np.ndarray | None = None,
    perms: np.ndarray | None = None,
) -> np.ndarray:
    """``hits[q, p]``: of query q's ``orders`` presented orders, how many put the item at 0-based presented position
    p into the ranker's top 5 (see the module docstring). ``utilities`` (Q x K) and ``perms`` (Q x M x K, item at
    each position) are drawn when not given, so two rankers can share them."""
    u = rng.normal(size=(queries, K)) if utilities is None else utilities
    perm = np.argsort(rng.random((queries, orders, K)), axis=2) if perms is None else perms
    shown = np.take_along_axis(np.broadcast_to(u[:, None, :], perm.shape), perm, axis=2)
    score = shown - beta * np.arange(K) / (K - 1) + rng.gumbel(size=perm.shape)
    top = np.argpartition(-score, TOP - 1, axis=2)[:, :, :TOP]
    hits = np.zeros(perm.shape)
    np.put_along_axis(hits, top, 1.0, axis=2)
    return hits.sum(axis=1)


@functools.cache
def true_curve(beta: float, K: int, queries: int, seed: int, orders: int = 20, chunk: int = 5000) -> np.ndarray:
    """E_5(p) of the ranker over ``queries`` simulated queries (exactly flat for ``beta`` = 0); computed once per
    arguments (the paired difference reuses the scenarios' curves), so do not modify the array returned."""
    if beta == 0:
        return np.full(K, TOP / K)
    rng = np.random.default_rng(seed)
    total = np.zeros(K)
    for start in range(0, queries, chunk):
        total += simulate_hits(rng, min(chunk, queries - start), orders, K, beta).sum(axis=0)
    return total / (queries * orders)


def _statistics(K: int) -> tuple[Any, Any]:
    return deviation_statistics(slice(0, K), slice(K, 2 * K), slice(2 * K, 3 * K))


def _columns(hits: np.ndarray, M: int, K: int) -> np.ndarray:
    n = np.full(hits.shape, float(M))
    return np.hstack([hits, n, n * TOP / K])


def scenario(
    beta: float, *, Q: int, M: int, K: int, draws: int, n_boot: int, truth_queries: int, seed: int
) -> dict[str, Any]:
    """One ``beta``: truths, mean estimates, coverage and widths of both intervals for the MAD and the maximum
    deviation."""
    x = TOP / K
    curve = true_curve(beta, K, truth_queries, seed + 1)
    truth = {"mad": float(np.abs(curve - x).mean()), "maxdev": float(np.abs(curve - x).max())}
    mad, maxdev = _statistics(K)
    fns = {"mad": mad, "maxdev": maxdev}
    rng = np.random.default_rng(seed)
    est: dict[str, list[float]] = {s: [] for s in fns}
    cover = {(s, kind): 0 for s in fns for kind in ("percentile", "basic")}
    width = {(s, kind): 0.0 for s in fns for kind in ("percentile", "basic")}
    above = {s: 0 for s in fns}
    for d in range(draws):
        cols = _columns(simulate_hits(rng, Q, M, K, beta), M, K)
        reps = collect(Q, n_boot, d, cols, fns)
        for s, fn in fns.items():
            value = float(fn(cols.sum(axis=0)[None])[0])
            est[s].append(value)
            pct = percentile_interval(reps[s])
            basic = basic_interval(reps[s], value)
            assert pct is not None and basic is not None
            above[s] += pct[0] > value
            for kind, (lo, hi) in (("percentile", pct), ("basic", basic)):
                cover[s, kind] += lo <= truth[s] <= hi
                width[s, kind] += hi - lo
    return {
        "beta": beta,
        **{
            s: {
                "truth": truth[s],
                "mean_estimate": float(np.mean(est[s])),
                "percentile_above_estimate": above[s] / draws,
                "coverage": {k: cover[s, k] / draws for k in ("percentile", "basic")},
                "mean_width": {k: width[s, k] / draws for k in ("percentile", "basic")},
            }
            for s in fns
        },
    }


def paired_difference(
    *, Q: int, M: int, K: int, draws: int, n_boot: int, truth_queries: int, seed: int
) -> dict[str, Any]:
    """MAD_a - MAD_b of the rankers of :data:`PAIR` on the same queries and presented orders (independent noise):
    coverage of the true difference by the percentile and the basic (unclipped) interval of the difference."""
    x = TOP / K
    a, b = PAIR
    truth = float(
        np.abs(true_curve(a, K, truth_queries, seed + 1) - x).mean()
        - np.abs(true_curve(b, K, truth_queries, seed + 1) - x).mean()
    )
    mad, _ = _statistics(K)
    rng = np.random.default_rng(seed)
    cover = {"percentile": 0, "basic": 0}
    for d in range(draws):
        u = rng.normal(size=(Q, K))
        perms = np.argsort(rng.random((Q, M, K)), axis=2)
        cols = np.hstack([_columns(simulate_hits(rng, Q, M, K, beta, u, perms), M, K) for beta in (a, b)])
        w = 3 * K

        def diff(Y: np.ndarray, w: int = w) -> np.ndarray:
            return mad(Y[:, :w]) - mad(Y[:, w:])

        value = float(diff(cols.sum(axis=0)[None])[0])
        reps = collect(Q, n_boot, d, cols, {"diff": diff})["diff"]
        for kind, iv in (("percentile", percentile_interval(reps)), ("basic", basic_interval(reps, value, lower=None))):
            assert iv is not None
            cover[kind] += iv[0] <= truth <= iv[1]
    return {"betas": list(PAIR), "truth": truth, "coverage": {k: v / draws for k, v in cover.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=40, help="Q, queries per draw (default 40, the runs' own)")
    ap.add_argument("--orders", type=int, default=20, help="M, presented orders per query (default 20)")
    ap.add_argument("--k", type=int, default=25, help="K, candidates per query (default 25, Table 1's)")
    ap.add_argument("--draws", type=int, default=300, help="simulated data sets per beta (default 300)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="replicates per interval (default 1000)")
    ap.add_argument("--truth-queries", type=int, default=100_000, help="queries behind each true curve")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--json", metavar="FILE", help="write the measurement here (e.g. book/data/exposure_intervals.json)"
    )
    args = ap.parse_args(argv)
    for name in ("queries", "orders", "draws", "bootstrap", "truth_queries"):
        if getattr(args, name) < 2:
            ap.error(f"--{name.replace('_', '-')}: expected an integer >= 2, got {getattr(args, name)}")
    if args.k <= TOP:
        ap.error(
            f"--k: expected more than {TOP} candidates (with K <= {TOP} every item reaches the top {TOP}), got {args.k}"
        )
    common = {
        "Q": args.queries,
        "M": args.orders,
        "K": args.k,
        "draws": args.draws,
        "n_boot": args.bootstrap,
        "truth_queries": args.truth_queries,
        "seed": args.seed,
    }
    t0 = time.perf_counter()
    rows = []
    for beta in BETAS:
        r = scenario(beta, **common)
        rows.append(r)
        print(
            f"beta {beta:4}: "
            + "; ".join(
                f"{s} true {r[s]['truth']:.4f} mean est. {r[s]['mean_estimate']:.4f} coverage percentile "
                f"{r[s]['coverage']['percentile']:.2f} basic {r[s]['coverage']['basic']:.2f} (percentile wholly above "
                f"the estimate: {r[s]['percentile_above_estimate']:.0%})"
                for s in ("mad", "maxdev")
            ),
            flush=True,
        )
    pair = paired_difference(**common)
    print(
        f"paired difference, beta {PAIR[0]} - {PAIR[1]}: true {pair['truth']:.4f}, coverage percentile "
        f"{pair['coverage']['percentile']:.2f} basic {pair['coverage']['basic']:.2f}"
    )
    seconds = time.perf_counter() - t0
    print(f"{seconds:.0f} s")
    if args.json:
        out = {
            "queries": args.queries,
            "orders": args.orders,
            "K": args.k,
            "top": TOP,
            "draws": args.draws,
            "bootstrap": args.bootstrap,
            "truth_queries": args.truth_queries,
            "seed": args.seed,
            "level": 0.95,
            "ranker": "u ~ N(0, 1) per item, score u - beta p / (K - 1) + Gumbel noise, top 5",
            "scenarios": rows,
            "paired_difference": pair,
            "seconds": round(seconds, 1),
            "numpy": np.__version__,
            "python": platform.python_version(),
        }
        atomic_write_text(args.json, json.dumps(out, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
