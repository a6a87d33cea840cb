"""The teaching lab: synthetic candidate sets for the simulated scorer, and the bias sweep's tables and
figures. Torch-free: it imports numpy, pandas, matplotlib and the evaluation core only.

Synthetic candidates (:func:`synthetic_queries`, :func:`write_synthetic_candidates`) are *not* data:
items are made-up films ``Film 017 (1994), genres: Drama`` drawn from a catalogue of ``catalogue``
items, each query has ``k`` distinct candidates in a seeded order, of which ``relevant`` are its ground
truth, and a short made-up history. Everything is seeded from ``seed`` through
:func:`invarirank.orders.rng_for`, so the same arguments give byte-identical files. The simulated
scorer (:mod:`invarirank.llm.simulated`) then decides how a "model" ranks them: a latent utility per
(query, item), a bonus for ground-truth items, a position effect of a chosen shape and strength, and
order-dependent noise.

The sweep (``results/lab/<shape>-s<strength>/``) is made by ``python -m invarirank.grid`` from the
``lab:`` section of the grid file, with the same runner as every other run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .candidates import write_candidates
from .orders import rng_for
from .types import HistoryEntry, Item, Query

__all__ = ["synthetic_queries", "write_synthetic_candidates", "sweep_frame", "figure_sweep", "GENRES"]

GENRES = ("Action", "Comedy", "Drama", "Romance", "Sci-Fi", "Thriller", "Animation", "Documentary")


def _catalogue(n: int, seed: int) -> list[Item]:
    rng = rng_for(seed, "lab", "catalogue")
    items = []
    for i in range(n):
        g = rng.choice(len(GENRES), size=int(rng.integers(1, 3)), replace=False)
        items.append(Item(item_id=f"f{i:03d}", title=f"Film {i:03d}", year=int(rng.integers(1950, 2020)),
                          genres=tuple(GENRES[j] for j in sorted(g))))
    return items


def synthetic_queries(n_test: int = 40, n_validation: int = 40, k: int = 10, *, relevant: int = 1,
                      history: int = 5, catalogue: int = 200, seed: int = 0) -> list[Query]:
    """``n_test`` test queries then ``n_validation`` validation queries, each with ``k`` candidates
    (retrieval order = a seeded shuffle) of which ``relevant`` are the ground truth."""
    if not 1 <= relevant <= k <= catalogue - history:
        raise ValueError("need 1 <= relevant <= k <= catalogue - history")
    items = _catalogue(catalogue, seed)
    out: list[Query] = []
    for split, n, prefix in (("test", n_test, "u"), ("validation", n_validation, "v")):
        for u in range(n):
            rng = rng_for(seed, "lab", split, u)
            picked = rng.choice(catalogue, size=k + history, replace=False)
            cands = tuple(items[int(i)] for i in picked[:k])
            truth = tuple(sorted(c.item_id for c in rng.choice(np.array(cands, dtype=object), size=relevant,
                                                                replace=False)))
            hist = tuple(HistoryEntry(items[int(i)], float(rng.integers(1, 6))) for i in picked[k:])
            out.append(Query(query_id=f"{prefix}{u:03d}", user_id=f"{u:03d}", history=hist, candidates=cands,
                             ground_truth=truth, split=split))
    return out


def write_synthetic_candidates(path: str | Path, **kwargs: Any) -> Path:
    """Write :func:`synthetic_queries` (same arguments) as a candidates file; returns the path."""
    p = Path(path)
    write_candidates(p, synthetic_queries(**kwargs))
    return p


def sweep_frame(results_dir: str | Path, grid: str = "lab",
                metrics: Sequence[str] = ("hr@5", "ndcg@5", "ppi", "gpi", "loc", "exposure_mad@5")) -> pd.DataFrame:
    """The lab sweep as a long table: bias shape, bias strength, method, metric, value, low, high (plus
    K, M, queries), from the finished runs under ``results_dir/<grid>/``."""
    from .compendium import collect_runs, metrics_frame

    runs = collect_runs(results_dir, grids=[grid], exclude=())
    if not runs:
        return pd.DataFrame(columns=["shape", "strength", "method", "metric", "value", "low", "high"])
    frames = []
    for run in runs:
        opts = (run.spec.get("scorer_options") or {})
        f = metrics_frame([run], metrics)
        f.insert(0, "shape", opts.get("bias_shape", "?"))
        f.insert(1, "strength", float(opts.get("bias_strength", float("nan"))))
        frames.append(f)
    return pd.concat(frames, ignore_index=True).sort_values(["shape", "strength", "method", "metric"],
                                                           ignore_index=True)


def figure_sweep(frame: pd.DataFrame, metrics: Sequence[str] = ("ppi", "gpi", "loc", "hr@5", "exposure_mad@5"),
                 shapes: Sequence[str] | None = None):
    """One row of panels per bias shape, one column per metric: the metric against the bias strength,
    one line per method with its 95% interval as a band."""
    import matplotlib.pyplot as plt

    from .compendium import METHOD_LABELS, METHOD_ORDER, METRIC_LABELS, _method_colors

    shapes = list(shapes or dict.fromkeys(frame["shape"]))
    colors = _method_colors()
    fig, axes = plt.subplots(len(shapes), len(metrics), figsize=(3.3 * len(metrics), 2.7 * len(shapes)),
                             squeeze=False, sharex=True)
    for i, shape in enumerate(shapes):
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            sub = frame[(frame["shape"] == shape) & (frame.metric == metric)]
            for method in METHOD_ORDER:
                s = sub[sub.method == method].sort_values("strength")
                if s.empty:
                    continue
                ax.plot(s.strength, s.value, marker="o", ms=3, color=colors[method], label=METHOD_LABELS[method])
                ax.fill_between(s.strength, s.low, s.high, color=colors[method], alpha=0.15, lw=0)
            if i == 0:
                ax.set_title(METRIC_LABELS.get(metric, metric), fontsize=10)
            if j == 0:
                ax.set_ylabel(f"{shape} bias", fontsize=10)
            if i == len(shapes) - 1:
                ax.set_xlabel("bias strength (utility s.d.)")
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    k = sorted(set(frame.K)) if "K" in frame else []
    m = sorted(set(frame.M)) if "M" in frame else []
    q = sorted(set(frame.queries)) if "queries" in frame else []
    fig.suptitle(f"Simulated scorer: metrics against position-bias strength (K = {'/'.join(map(str, k))}, "
                 f"M = {'/'.join(map(str, m))}, {'/'.join(map(str, q))} queries per point)", fontsize=11)
    fig.tight_layout()
    plt.close(fig)   # shown once: by the cell's value, not again by the inline backend
    return fig


def live_run(bias_shape: str = "primacy", bias_strength: float = 1.0, *, K: int = 10, M: int = 10,
             n_queries: int = 20, methods: Sequence[str] = ("zero_shot", "bootstrapping", "stella", "sgs"),
             noise_sd: float = 0.3, relevance: float = 1.0, calibration_queries: int = 20,
             calibration_repeats: int = 2, seed: int = 0, out: str | Path | None = None, n_bootstrap: int = 200):
    """Run the methods on synthetic candidate sets with a simulated scorer of the given position bias and
    return the finished run (:class:`invarirank.compendium.Run`); seconds, not minutes. ``out`` None →
    a temporary folder."""
    import tempfile

    from .compendium import load_run
    from .experiment import ExperimentConfig, run_experiment

    folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="invarirank-lab-"))
    folder.mkdir(parents=True, exist_ok=True)
    cands = write_synthetic_candidates(folder / "candidates.jsonl", n_test=n_queries,
                                       n_validation=calibration_queries, k=K, seed=seed)
    config = ExperimentConfig.from_mapping({
        "dataset": "synthetic", "candidates": str(cands), "k": K, "scorer": "simulated",
        "scorer_options": {"bias_shape": bias_shape, "bias_strength": float(bias_strength),
                           "noise_sd": float(noise_sd), "relevance": float(relevance)},
        "m": M, "methods": list(methods), "seed": seed, "calibration_queries": calibration_queries,
        "calibration_repeats": calibration_repeats, "n_bootstrap": n_bootstrap,
        "out": str(folder / "run"), "cache_dir": str(folder / "cache")}, where="live_run")
    run_experiment(config, progress=False)
    return load_run(folder / "run")
