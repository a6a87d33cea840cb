"""The teaching lab's live run: one simulated run on synthetic candidates, in seconds (the lab notebook's
"try it yourself" cell). Torch-free: the simulated scorer needs no model.

It lives with the runner because it computes; the lab's tables and figures (:mod:`invarirank.compendium`) only
read the finished run it returns.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..data._synthetic import write_synthetic_candidates
from ..methods.registry import METHODS
from ..store import Run, load_run
from ._config import RunConfig
from ._run import ensure_run


def live_run(
    bias_shape: str = "primacy",
    bias_strength: float = 1.0,
    *,
    K: int = 10,
    M: int = 10,
    n_queries: int = 20,
    methods: Sequence[str] = METHODS,
    noise_sd: float = 0.3,
    relevance: float = 1.0,
    calibration_queries: int = 20,
    calibration_repeats: int = 2,
    seed: int = 0,
    out: str | Path | None = None,
    n_bootstrap: int = 200,
) -> Run:
    """Run ``methods`` on ``n_queries`` synthetic candidate sets of ``K`` items (``M`` presented orders each) with
    a simulated scorer of the given position bias (shape ``primacy`` | ``recency`` | ``u`` | ``none``, strength
    in utility standard deviations) and return the finished run folder (``out``; None: a temporary folder,
    removed when the Python process exits — the returned run reads its observations from there until then)."""
    if out is None:
        folder = Path(tempfile.mkdtemp(prefix="invarirank-lab-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    else:
        folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    cands = write_synthetic_candidates(
        folder / "candidates.jsonl", n_test=n_queries, n_validation=calibration_queries, k=K, seed=seed
    )
    config = RunConfig.from_mapping(
        {
            "dataset": "synthetic",
            "candidates": str(cands),
            "K": K,
            "scorer": "simulated",
            "scorer_options": {
                "bias_shape": bias_shape,
                "bias_strength": float(bias_strength),
                "noise_sd": float(noise_sd),
                "relevance": float(relevance),
            },
            "M": M,
            "methods": list(methods),
            "seed": seed,
            "calibration_queries": calibration_queries,
            "calibration_repeats": calibration_repeats,
            "n_bootstrap": n_bootstrap,
            "out": str(folder / "run"),
            "cache_dir": str(folder / "cache"),
        },
        where="live_run",
    )
    return load_run(ensure_run(config, progress=False))
