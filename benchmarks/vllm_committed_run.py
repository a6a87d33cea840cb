"""A committed run recomputed through the ``vllm`` scorer backend (issue 38): the same settings as the committed
run (its manifest's), only ``scorer_options.backend = "vllm"``, into a temporary folder; every observation row
compared with the committed one.

    python -m benchmarks.vllm_committed_run [--run results/default/ml-100k-lightgcn-smollm2-135m-choice-k10]
                                            [--json FILE]

Rows are matched on (query, method, presented order). Reported: the rows compared, those whose presented order
(``input``) and ranking (``output``) are identical to the committed row's, the largest |score difference| (float32
scores; the backends agree within :data:`invarirank.llm._vllm_backend.TOLERANCE`, not bit for bit, so identical
rankings are the claim and the score difference its margin), and the wall seconds of the recomputation (engine
start included: it is one run). The default run is the cheapest committed SmolLM2 run of the default grid: the
choice scorer at K = 10, 5 queries x 8 orders, zero-shot only (40 passes).

The recomputation uses a pass cache of its own under the temporary folder, so no pass is read from the
committed run's ``hf`` passes (the backend enters the cache key anyway).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path
from typing import Any

#: the repository (a checkout: the committed runs live under its results/)
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_RUN = ROOT / "results" / "default" / "ml-100k-lightgcn-smollm2-135m-choice-k10"


def _rows(path: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Observation rows of ``path`` (``.jsonl`` or ``.jsonl.gz``) by (query id, method, presented order index)."""
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return {(r["query_id"], r["method"], int(r["permutation"])): r for r in rows}


def compare(committed: Path, recomputed: Path) -> dict[str, Any]:
    """Row-by-row comparison of two observation files (see the module docstring)."""
    a, b = _rows(committed), _rows(recomputed)
    common = sorted(set(a) & set(b))
    same_input = [k for k in common if a[k]["input"] == b[k]["input"]]
    identical = [k for k in same_input if a[k]["output"] == b[k]["output"]]
    diff = max(
        (abs(float(x) - float(y)) for k in same_input for x, y in zip(a[k]["scores"], b[k]["scores"])),
        default=float("nan"),
    )
    return {
        "rows_committed": len(a),
        "rows_recomputed": len(b),
        "rows_compared": len(common),
        "same_presented_order": len(same_input),
        "rankings_identical": len(identical),
        "differing": [list(k) for k in same_input if k not in set(identical)],
        "max_abs_score_diff": diff,
    }


def recompute(run: Path, work: Path, backend: str = "vllm", first_queries: int | None = None) -> dict[str, Any]:
    """Recompute ``run`` (a committed run folder) with ``backend`` into ``work``; the comparison, timed. With
    ``first_queries``, only the first that many of the run's sampled queries (the run's setting of that name: the
    same users, orders and rows as the committed run's first queries), compared with those rows."""
    from invarirank.errors import InvariRankError
    from invarirank.llm import _vllm_backend as vllm_backend
    from invarirank.runner import RunConfig
    from invarirank.runner._run import run_experiment
    from invarirank.store import find_observations

    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    given = RunConfig.from_manifest(manifest)
    config = given.replace(
        grid=None,
        out=str(work / "run"),
        cache_dir=str(work / "cache"),
        scorer_options={**given.scorer_options, "backend": backend},
        first_queries=first_queries,
    )
    t0 = time.perf_counter()
    try:
        result = run_experiment(config, progress=False)
    finally:
        vllm_backend.close_all()
    wall = time.perf_counter() - t0
    recomputed = find_observations(result.path)
    if recomputed is None:
        raise InvariRankError(f"{result.path}: the recomputed run wrote no observations file")
    out = compare(run / "observations.jsonl.gz", recomputed)
    backend_id = result.manifest.get("model", {}).get("backend")
    return {
        "run": str(run.relative_to(ROOT)) if run.is_relative_to(ROOT) else str(run),
        "backend": backend,
        "backend_identity": backend_id,
        "scorer": config.scorer,
        "model": config.model_name,
        "K": config.K,
        "first_queries": first_queries,
        "wall_seconds": round(wall, 1),
        "tolerance": vllm_backend.TOLERANCE,
        **out,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vllm_committed_run", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", default=str(DEFAULT_RUN), help="committed run folder (default: SmolLM2 choice K = 10)")
    p.add_argument("--json", default=None, help="write the comparison here as well")
    p.add_argument("--first-queries", type=int, default=None, help="only the run's first N queries (default all)")
    args = p.parse_args(argv)

    from benchmarks.vllm_backend import vllm_info, write_json

    info = vllm_info("benchmarks.vllm_committed_run")
    if info is None:
        return 1
    with tempfile.TemporaryDirectory(prefix="invarirank-vllm-run-") as tmp:
        got = recompute(Path(args.run), Path(tmp), first_queries=args.first_queries)
    got = {"schema_version": 1, "vllm": info["version"], "device": info["device_type"], **got}
    print(
        f"{got['run']} through vllm {got['vllm']} ({got['device']}): {got['rankings_identical']} of "
        f"{got['rows_compared']} rankings identical, max |score diff| {got['max_abs_score_diff']:.2e}, "
        f"{got['wall_seconds']:.0f} s wall",
        flush=True,
    )
    if args.json:
        write_json(Path(args.json), got)
        print(f"written: {args.json}")
    return 0 if got["rankings_identical"] == got["rows_compared"] == got["rows_recomputed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
