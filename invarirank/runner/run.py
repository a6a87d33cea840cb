"""Orchestration of one run: queries → scorer → STELLA_LW calibration → :func:`rerank_query` per query
(checkpointed) → observations, metrics, calibration, manifest; and :func:`ensure_run`, which reuses a finished
run or computes and publishes it.

``run_experiment(config)`` writes into ``config.out`` (RUN_DIR):

* ``observations.jsonl`` — one :class:`~invarirank.runner.records.ObservationRow` per query × method × presented
  order (by query, then method, then order); no wall-clock times, so equal runs give byte-identical files;
* ``metrics.json`` — :func:`invarirank.evaluation.evaluate` of those rows;
* ``calibration.json`` — STELLA_LW's count and transition matrices per K (when STELLA_LW runs);
* ``manifest.json`` — :func:`invarirank.runner.manifest.build_manifest`.

Each finished query is checkpointed (:mod:`invarirank.runner.checkpoint`); killed at any moment and rerun, a run
gives the same observations, metrics and calibration bytes, and the same manifest outside ``run``, as an
uninterrupted one. The final files are written atomically, manifest last; ``.work`` is removed at the very end.
"""

from __future__ import annotations

import platform
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .. import __version__
from ..candidates import queries_sha256
from ..errors import InvariRankError
from ..io import atomic_write_json
from ..llm.factory import scoring_versions
from ..store import identity_difference, project_root, publish_run, refresh_metrics, run_status
from ..types import Scorer
from .checkpoint import CHECKPOINT_VERSION, Checkpoint
from .config import RunConfig
from .manifest import build_manifest, sha256_json
from .queries import QuerySet, load_queries, synthetic_candidates_for
from .records import QueryRecord
from .rerank import rerank_query

__all__ = ["RunResult", "run_experiment", "make_run_scorer", "scorer_key_identity", "status_of", "ensure_run"]


@dataclass
class RunResult:
    """The run folder and its contents (``metrics`` and ``manifest`` as written)."""

    out_dir: Path
    metrics: dict[str, Any]
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]


def make_run_scorer(config: RunConfig) -> Scorer:
    """The run's scorer, through :func:`invarirank.llm.make_scorer` (the one place scorers are built): kind
    ``config.scorer``, ``config.model``, the seed, ``scorer_options``, ``device`` (real scorers, unless
    ``auto``), the cache folder; the noise floor turns the persistent pass cache off (every copy is recomputed)."""
    from ..llm.factory import make_scorer
    options = dict(config.scorer_options)
    if config.scorer != "simulated":
        if config.device != "auto":
            options.setdefault("device", config.device)
        if config.noise_floor:
            options.setdefault("pass_cache", False)
        if config.cache_dir:
            options["cache_dir"] = config.cache_dir
    return make_scorer(config.scorer, config.model, seed=config.seed, **options)


def scorer_key_identity(scorer: Any) -> dict[str, Any]:
    """What determines a scorer's scores: ``key_identity()`` where the scorer has one (real scorers: weights,
    tokenizer, dtype, device type, template, options — not cache locations), else ``identity()``."""
    fn = getattr(scorer, "key_identity", None)
    return dict(fn()) if callable(fn) else dict(scorer.identity())


def _calibrate(config: RunConfig, scorer: Scorer, qs: QuerySet, progress: bool) -> dict[int, Any]:
    """STELLA_LW's calibration, one matrix per K of the run (cached on disk by scorer identity, K, data, settings)."""
    from ..methods.stella import load_or_calibrate
    calibrations: dict[int, Any] = {}
    if "stella" not in config.methods:
        return calibrations
    for k in sorted({q.k for q in qs.test}):
        cal = load_or_calibrate(scorer, qs.validation, k, n_queries=config.calibration_queries,
                                repeats=config.calibration_repeats, seed=config.seed, cache_dir=config.cache_dir,
                                progress=progress)
        if not cal.query_ids:
            raise InvariRankError(
                f"STELLA calibration for K={k}: none of the {len(qs.validation)} validation queries has a relevant "
                f"item among its first {k} candidates; drop 'stella' from --methods or provide validation queries")
        calibrations[k] = cal
    return calibrations


def _progress_bar(total: int, done: int, m: int, cache: Any) -> tuple[Any, Callable[[int], None]]:
    from tqdm.auto import tqdm
    bar = tqdm(total=total, initial=done, desc="rerank", unit="query", file=sys.stderr, dynamic_ncols=True)
    last = [0.0]

    def on_order(t: int) -> None:                # finer feedback inside a (long) real-model query
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            bar.set_postfix(order=f"{t + 1}/{m}", passes=cache.misses, shared_hits=cache.hits)
    return bar, on_order


def run_experiment(config: RunConfig, *, progress: bool = True, on_query_done: Callable[[int], None] | None = None,
                   queries: QuerySet | None = None, scorer: Scorer | None = None) -> RunResult:
    """Run (or resume) ``config`` into ``config.out``; see the module docstring. A finished run of *another*
    identity in ``config.out`` is never overwritten (an error). ``on_query_done(n)`` is called after the n-th
    query of this session is safely checkpointed (tests use it to simulate a kill); ``queries``/``scorer`` may be
    given to skip loading them."""
    from ..evaluation import evaluate, write_observations
    from ..methods import PassCache, batch_size_of
    if not config.out:
        raise InvariRankError("no run folder: give --out RUN_DIR (or 'out' in the config)")
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise InvariRankError(f"{out}: --out must be a folder")
    if status_of(config, out) == "mismatch":
        raise InvariRankError(f"{out}: holds a finished run with a different configuration; choose another --out "
                              f"or remove that folder")
    config = synthetic_candidates_for(config, out)
    timings: dict[str, float] = {}
    t_start = t = time.perf_counter()
    qs = queries or load_queries(config, progress)
    timings["data_seconds"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    base_scorer = scorer or make_run_scorer(config)
    timings["scorer_load_seconds"] = round(time.perf_counter() - t, 3)
    identity = base_scorer.identity()
    model = str(identity.get("model") or identity.get("name") or config.model or config.scorer)
    test_sha256 = queries_sha256(qs.test)
    fingerprint = sha256_json({"config": config.identity(), "identity": scorer_key_identity(base_scorer),
                               "queries": test_sha256,
                               "validation": queries_sha256(qs.validation) if "stella" in config.methods else None,
                               "invarirank": __version__, "checkpoint": CHECKPOINT_VERSION})
    work = out / ".work"
    ckpt = Checkpoint(work / "checkpoint.jsonl", fingerprint)
    done = ckpt.load()
    resumed = len(done)
    t = time.perf_counter()
    calibrations = _calibrate(config, base_scorer, qs, progress)
    timings["calibration_seconds"] = round(time.perf_counter() - t, 3)

    t = time.perf_counter()
    cache = PassCache(base_scorer)
    todo = [q for q in qs.test if q.query_id not in done]
    ckpt.ensure_header()
    bar, on_order = _progress_bar(len(qs.test), len(qs.test) - len(todo), config.M, cache) if progress else (None, None)
    try:
        for n, q in enumerate(todo, 1):
            tq = time.perf_counter()
            before = cache.counters()
            rows = rerank_query(cache, q, config, model=model, dataset=config.effective_dataset,
                                calibrations=calibrations, on_order=on_order)
            after = cache.counters()
            passes = {name: sum(r.passes for r in rows if r.method == name) for name in config.methods}
            record = QueryRecord(query_id=q.query_id, rows=[r.to_json() for r in rows], passes=passes,
                                 **{c: after[c] - before[c] for c in ("requests", "hits", "misses", "tokens")},
                                 seconds=round(time.perf_counter() - tq, 4)).to_json()
            ckpt.append(record)
            done[q.query_id] = record
            if bar is not None:
                bar.update(1)
            if on_query_done is not None:
                on_query_done(n)
    finally:
        if bar is not None:
            bar.close()
    timings["rerank_seconds_this_session"] = round(time.perf_counter() - t, 3)

    records = [done[q.query_id] for q in qs.test]
    all_rows = [row for rec in records for row in rec["rows"]]
    write_observations(out / "observations.jsonl", all_rows)
    t = time.perf_counter()
    metrics = evaluate(all_rows, ks=tuple(config.eval_ks), exposure_k=config.exposure_k,
                       n_bootstrap=config.n_bootstrap, seed=config.seed)
    timings["evaluation_seconds"] = round(time.perf_counter() - t, 3)
    atomic_write_json(out / "metrics.json", metrics)
    if calibrations:
        atomic_write_json(out / "calibration.json",
                          {"method": "stella", "calibrations": {str(k): c.to_json() for k, c in calibrations.items()}})
    else:
        (out / "calibration.json").unlink(missing_ok=True)
    timings["rerank_seconds_all_sessions"] = round(sum(float(r.get("seconds", 0.0)) for r in records), 3)
    timings["total_seconds_this_session"] = round(time.perf_counter() - t_start, 3)
    volatile = {"timings": timings, "tokens_computed": sum(int(r.get("tokens", 0)) for r in records),
                "scorer_stats": dict(getattr(base_scorer, "stats", {}) or {}),
                "calibration_from_cache": {str(k): c.from_cache for k, c in calibrations.items()},
                "queries_resumed_from_checkpoint": resumed,
                # > 1: every query's orders and methods ran in lockstep, scorer calls in batches
                "scorer_batch_size": batch_size_of(base_scorer), "platform": platform.platform()}
    manifest = build_manifest(config, out=out, fingerprint=fingerprint, queries=qs, test_sha256=test_sha256,
                              identity=identity, calibrations=calibrations, records=records, rows=all_rows,
                              run=volatile).to_json()
    atomic_write_json(out / "manifest.json", manifest)
    shutil.rmtree(work, ignore_errors=True)
    return RunResult(out, metrics, manifest, all_rows)


# ---------------------------------------------------------------------------------------------
# reuse: the grid's and the notebook's path to a finished run
# ---------------------------------------------------------------------------------------------
def status_of(config: RunConfig, folder: str | Path) -> str:
    """The one reuse check (:func:`invarirank.store.run_status`) of ``folder`` against ``config``'s identity and
    the current scoring versions of its scorer kind (:func:`invarirank.llm.factory.scoring_versions`)."""
    return run_status(folder, config.identity(), RunConfig.identity_of_manifest, scoring_versions(config.scorer))


def ensure_run(config: RunConfig, results_dir: str | Path | None = None, work_dir: str | Path | None = None, *,
               allow_run: bool = True, progress: bool = True) -> Path:
    """The finished run folder ``results/<grid>/<run>/`` of ``config``: reused when complete with the same
    identity; else computed (or resumed) in ``work/<grid>/<run>/`` and published there. A results folder of
    *another* identity is never overwritten (an error naming the folder and the settings that differ); a
    finished work folder of another identity is removed (the grid changed)."""
    if not config.grid:
        raise InvariRankError(f"run {config.run_name}: no 'grid' (results/<grid>/<run>/) to publish it in")
    root = project_root()
    target = Path(results_dir or root / "results") / config.grid / config.run_name
    status = status_of(config, target)
    if status == "old-metrics":
        print(f"grid: re-evaluating {target}: its metrics.json is of an older schema", file=sys.stderr)
        refresh_metrics(target)
        status = "complete"
    if status == "complete":
        print(f"grid: reusing the finished run {target}", file=sys.stderr)
        return target
    if status == "outdated":
        print(f"grid: computing {target} again: it was made by another version of the {config.scorer} scorer or "
              f"its prompt template ({scoring_versions(config.scorer)} now)", file=sys.stderr)
    if status == "mismatch":
        from ..io import read_json
        stored = RunConfig.identity_of_manifest(read_json(target / "manifest.json"))
        diff = identity_difference(config.identity(), stored)
        raise InvariRankError(f"{target}: a finished run with other settings ({', '.join(diff) or 'unknown'}) is "
                              f"there; delete the folder or give this run another name")
    if not allow_run:
        raise InvariRankError(f"{target}: run {status} and running is not allowed here")
    work = Path(work_dir or root / "runs") / config.grid / config.run_name
    if status_of(config, work) in ("mismatch", "outdated"):
        print(f"grid: removing {work}: a finished run with another configuration or scorer version",
              file=sys.stderr)
        for name in ("observations.jsonl", "metrics.json", "manifest.json", "calibration.json"):
            (work / name).unlink(missing_ok=True)
    if status_of(config, work) == "old-metrics":
        refresh_metrics(work)
    if status_of(config, work) != "complete":
        t0 = time.perf_counter()
        run_experiment(config.replace(out=str(work), raw_dir=config.resolved_raw_dir(root)), progress=progress)
        print(f"grid: ran {config.run_name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return publish_run(work, target, config.to_json())
