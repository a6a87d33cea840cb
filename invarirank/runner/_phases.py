"""A run's two phases around the reranking: :func:`prepare_run` and :func:`calibrate_run` (on the driver, once per
run) and :func:`finish_run` (the merge: the run's files from its query records, in run order), plus
:func:`run_status`, the one reuse check of a folder. Whoever reranks the queries in between — the driver's own
process or workers on a cluster, in shards of any size (:mod:`invarirank.runner._sharded`) — the files are the same.
"""

from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_write_json
from ..candidates import queries_sha256
from ..errors import InvariRankError
from ..evaluation._references import FIRST_STAGE_FILE, write_first_stage
from ..llm.factory import scoring_versions
from ..methods.registry import calibrated_method
from ..store import CALIBRATIONS_FILE, VOLATILE_FILE, Run, RunFolder, RunStatus, recorded_calibrations
from ._calibration import calibrate_in_parts, journal_parts
from ._config import RunConfig
from ._executor_protocol import Executor
from ._inputs import input_hashes, stored_inputs
from ._manifest import build_manifest, git_info
from ._queries import QuerySet, load_queries, synthetic_candidates_for
from ._setting_checks import check_lists_for_evaluation
from ._shards import run_fingerprint
from ._worker import calibration_method


@dataclass
class PreparedRun:
    """A run ready to be computed: its settings (``out`` set), queries, the scorer's facts (from a worker),
    STELLA_LW's calibrations, the run's fingerprint and the hashes it is made of (``parts``, see
    :mod:`invarirank.runner._shards`), and the timings so far."""

    config: RunConfig
    out: Path
    qs: QuerySet
    scorer: dict[str, Any]
    model: str
    test_sha256: str
    fingerprint: str
    parts: dict[str, str]
    calibrations: dict[int, Any]
    timings: dict[str, float]
    t_start: float
    inputs: dict[str, str] = field(default_factory=dict)
    #: the calibrations recorded beside the run's finished shards when it started (:func:`record_calibrations`)
    recorded_calibrations: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: how each K's calibration parts were computed in this session (volatile: ``run.json``), by K
    calibration_parts: dict[int, dict[str, Any]] = field(default_factory=dict)


def print_cost_notice(
    config: RunConfig,
    qs: QuerySet,
    facts: dict[str, Any],
    out: Path | None = None,
    *,
    recorded: Mapping[int, Mapping[str, Any]] | None = None,
) -> None:
    """One line on stderr before a run estimated to take more than a few minutes
    (:func:`invarirank.runner._cost_line.cost_notice`): priced from the newest benchmark file when it measured the
    model, else from the scorer's device type (``key_identity``) and the stated assumptions; the queries already
    in finished shards of the run folder ``out`` are not counted, nor a calibration of ``recorded`` (the STELLA_LW
    calibrations recorded with them, by K: :func:`invarirank.store.recorded_calibrations`) that this machine
    takes, nor the calibration parts journaled in ``out`` (:func:`invarirank.runner._calibration.journal_parts`).
    Loads and measures nothing."""
    from ._bench_files import find_bench
    from ._cost_line import cost_notice

    try:
        bench = find_bench(None)
    except InvariRankError:  # a broken benchmark file must not stop a run: price it by assumption
        bench = None
    key_identity = facts.get("key_identity") or {}
    on_gpu = bool(facts.get("worker", {}).get("gpu_ids")) or str(key_identity.get("device_type", "")) == "cuda"
    from ..store import shard_query_ids

    done = shard_query_ids(out) if out is not None else set()
    left = [q for q in qs.test if q.query_id not in done]
    journal = {k: [record for _, record in journal_parts(out, k)] for k in {q.k for q in qs.test}} if out else {}
    line = cost_notice(
        config,
        left,
        qs.validation,
        key_identity,
        on_gpu=on_gpu,
        bench=bench,
        done=len(qs.test) - len(left),
        recorded=recorded or {},
        parts=journal,
    )
    if line:
        print(f"{config.run_name}: {line}", file=sys.stderr)


def prepare_run(
    config: RunConfig, executor: Executor, *, queries: QuerySet | None = None, progress: bool = True
) -> PreparedRun:
    """Everything before the queries are reranked, computed once per run on the driver (``config.out``: the run
    folder, checked by :func:`invarirank.runner.ensure_runs`): the data and the first stage
    (:func:`load_queries`), the scorer's identity (``executor.describe``: a worker loads the model), the
    fingerprint (:func:`invarirank.runner._shards.run_fingerprint`), the cost line of a long run
    (:func:`print_cost_notice`) and the scorer's check of every query before any pass (``executor.check_queries``:
    an unscorable query is an error naming it, and nothing is computed). The calibrations come next
    (:func:`calibrate_run`), once the run's finished shards have been checked against the fingerprint."""
    out = Path(str(config.out))
    inputs = input_hashes(config)  # the user's files (not the generated synthetic candidates)
    config = synthetic_candidates_for(config, out)
    timings: dict[str, float] = {}
    t_start = t = time.perf_counter()
    qs = queries or load_queries(config, progress)
    check_lists_for_evaluation(config, qs.test)
    timings["data_seconds"] = round(time.perf_counter() - t, 3)
    facts = executor.describe(config)
    timings["scorer_load_seconds"] = float(facts["worker"].get("load_seconds", 0.0))
    identity = facts["identity"]
    model = str(identity.get("model") or identity.get("name") or config.model or config.scorer)
    test_sha256 = queries_sha256(qs.test)
    calibrated = calibrated_method(config.methods)
    validation = queries_sha256(qs.validation) if calibrated else None
    fingerprint, parts = run_fingerprint(config.identity(), facts["key_identity"], test_sha256, validation)
    # the calibrations the run's finished shards were computed with, read once: priced and then taken
    known = recorded_calibrations(out) if calibrated else {}
    print_cost_notice(config, qs, facts, out, recorded=known)
    t = time.perf_counter()
    executor.check_queries(config, [*qs.test, *(qs.validation if calibrated else ())])
    timings["check_seconds"] = round(time.perf_counter() - t, 3)
    return PreparedRun(
        config, out, qs, facts, model, test_sha256, fingerprint, parts, {}, timings, t_start, inputs, known
    )


def calibrate_run(
    p: PreparedRun,
    executor: Executor,
    *,
    progress: bool = True,
    on_calibration_part: Callable[[int], None] | None = None,
) -> None:
    """STELLA_LW's calibration per K of the prepared run ``p`` into ``p.calibrations`` (nothing without a
    calibrated method): in parts spread over the workers and journaled in the run folder
    (:func:`invarirank.runner._calibration.calibrate_in_parts`; ``on_calibration_part(n)`` after each part is
    journaled), or taken from the cache or the run's recorded calibration. No probing query is an error."""
    config, qs = p.config, p.qs
    calibrated = calibrated_method(config.methods)
    t = time.perf_counter()
    if calibrated:
        for k in sorted({q.k for q in qs.test}):
            cal = calibrate_in_parts(
                config,
                executor,
                qs.validation,
                k,
                p.scorer["key_identity"],
                known=p.recorded_calibrations.get(k),
                progress=progress,
                on_part=on_calibration_part,
                facts=p.calibration_parts.setdefault(k, {}),
            )
            if not cal.query_ids:
                raise InvariRankError(
                    f"{calibrated.label} calibration for K={k}: none of the {len(qs.validation)} "
                    f"validation queries has a relevant item among its first {k} candidates; drop "
                    f"{calibrated.name!r} from --methods or provide validation queries"
                )
            p.calibrations[k] = cal
    p.timings["calibration_seconds"] = round(time.perf_counter() - t, 3)


def record_calibrations(p: PreparedRun, resumed: bool) -> None:
    """Write the run's calibrations beside its shards (``.work/calibrations.json``, committed with them by
    :func:`invarirank.store.export_shards`), once the finished shards of this run are known (``resumed``: some were
    accepted). A calibration whose counts differ from the one recorded with those shards is an error, and the
    record is left as it was: their STELLA_LW rows were computed with the recorded one. A recorded calibration
    with the same counts is kept as it was recorded, byte for byte: its ``key`` is the cache key of the machine
    that computed it, which another machine's first-stage float scores change, and a resumed session on another
    machine must not rewrite a committed file for that."""
    if not p.calibrations:
        return
    folder = RunFolder(p.out)
    path = folder.work / CALIBRATIONS_FILE
    records: dict[str, Any] = {}
    for k, cal in sorted(p.calibrations.items()):
        then = p.recorded_calibrations.get(k)
        same = then is not None and then.get("counts") == cal.counts.tolist()
        records[str(k)] = then if same else cal.to_record()
        if resumed and then is not None and not same:
            raise InvariRankError(
                f"{path}: STELLA_LW's calibration at K={k} computed now differs from the one the run's finished "
                f"shards were computed with (another scorer identity or other probing queries on this machine); "
                f"their STELLA_LW rows would not match the others. Resume where they were made, or delete the "
                f"run's shards (its shards/ in the results folder and {folder.shards}) to compute it anew"
            )
    folder.work.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"method": calibration_method(p.config), "calibrations": records})


def first_stage_rankings(config: RunConfig, qs: QuerySet) -> dict[str, list[str]] | None:
    """The first stage's ranking of each test query (its candidates in their given order) when the run has a first
    stage — a retriever, or a candidates file, whose order is the first stage's by the file's contract — else
    ``None`` (the teaching lab's synthetic candidates have no ranking of their own)."""
    if qs.info.get("source") not in ("first_stage", "candidates") or config.dataset == "synthetic":
        return None
    return {q.query_id: [c.item_id for c in q.candidates] for q in qs.test}


def finish_run(p: PreparedRun, records: list[dict[str, Any]], volatile: dict[str, Any]) -> Run:
    """The merge: write the run's files from its query records (in run order) — observations, metrics,
    calibration, then the volatile ``run.json`` and last the deterministic ``manifest.json`` — and remove
    ``.work``. ``volatile`` holds what the caller measured (timings, executor, shards, workers); this is the one
    place ``run.json`` is built."""
    from ..evaluation import evaluate, write_observations

    config, out, calibrations = p.config, p.out, p.calibrations
    folder = RunFolder(out)
    timings = {**p.timings, **volatile.pop("timings", {})}
    all_rows = [row for rec in records for row in rec["rows"]]
    write_observations(folder.file(folder.OBSERVATIONS), all_rows)
    t = time.perf_counter()
    first_stage = first_stage_rankings(config, p.qs)
    if first_stage is not None:
        write_first_stage(out / FIRST_STAGE_FILE, first_stage)
    else:
        (out / FIRST_STAGE_FILE).unlink(missing_ok=True)
    metrics = evaluate(
        all_rows,
        ks=tuple(config.eval_ks),
        exposure_k=config.exposure_k,
        n_bootstrap=config.n_bootstrap,
        seed=config.seed,
        first_stage=first_stage,
    )
    timings["evaluation_seconds"] = round(time.perf_counter() - t, 3)
    atomic_write_json(folder.file(folder.METRICS), metrics)
    if calibrations:
        atomic_write_json(
            folder.file(folder.CALIBRATION),
            {
                "method": calibration_method(config),
                "calibrations": {str(k): c.to_json() for k, c in calibrations.items()},
            },
        )
    else:
        folder.file(folder.CALIBRATION).unlink(missing_ok=True)
    timings["rerank_seconds_all_sessions"] = round(sum(float(r.get("seconds", 0.0)) for r in records), 3)
    timings["total_seconds_this_session"] = round(time.perf_counter() - p.t_start, 3)
    moved: dict[str, str] = {}
    manifest = build_manifest(
        config,
        out=out,
        fingerprint=p.fingerprint,
        queries=p.qs,
        test_sha256=p.test_sha256,
        identity=p.scorer["identity"],
        calibrations=calibrations,
        records=records,
        rows=all_rows,
        moved_paths=moved,
        inputs=p.inputs,
    ).to_json()
    run = {
        "run_version": 1,
        "timings": timings,
        "tokens_computed": sum(int(r.get("tokens", 0)) for r in records),
        "calibration_from_cache": {str(k): c.from_cache for k, c in calibrations.items()},
        # computed in parts (none: from the cache or the recorded calibration): parts journaled, computed, workers
        "calibration_parts": {str(k): facts for k, facts in sorted(p.calibration_parts.items()) if facts},
        # > 1: every query's orders and methods ran in lockstep, scorer calls in batches
        "scorer_batch_size": p.scorer["batch_size"],
        "execution": {
            "shard_queries": config.shard_queries,
            "query_window": config.query_window,
            **volatile.pop("execution", {}),
        },
        **volatile,
        "platform": platform.platform(),
        "git": git_info(),
        "paths": moved,
    }
    atomic_write_json(folder.file(VOLATILE_FILE), run)
    atomic_write_json(folder.file(folder.MANIFEST), manifest)
    folder.clear_work()
    return Run.from_files(out, metrics, manifest)


def wanted_identity(config: RunConfig) -> dict[str, Any]:
    """What a finished run must have been made with to be reused for ``config``: its identity and, for a run on
    a user's files, their content (``inputs``, :func:`invarirank.runner._inputs.input_hashes`)."""
    inputs = input_hashes(config)
    return {**config.identity(), **({"inputs": inputs} if inputs else {})}


def stored_identity(manifest: Any) -> dict[str, Any]:
    """What a stored manifest says its run was made with (the counterpart of :func:`wanted_identity`)."""
    inputs = stored_inputs(manifest)
    return {**RunConfig.identity_of_manifest(manifest), **({"inputs": inputs} if inputs else {})}


def run_status(config: RunConfig, folder: str | Path) -> RunStatus:
    """The one reuse check (:meth:`invarirank.store.RunFolder.status`) of the run folder ``folder`` against
    ``config``'s identity (with its input files' content: :func:`wanted_identity`) and the current scoring
    versions of its scorer kind (:func:`invarirank.llm.factory.scoring_versions`): ``missing``, ``incomplete``,
    ``mismatch``, ``outdated``, ``old-metrics`` or ``complete``. A complete choice run that recorded its chat
    frame's hash (``frame_sha256``) is ``outdated`` when today's tokenizer renders another frame (compared only where
    transformers is installed)."""
    status = RunFolder(folder).status(wanted_identity(config), stored_identity, scoring_versions(config.scorer))
    if status == "complete" and config.scorer == "choice":
        # the rendered chat frame's hash, compared only where the run recorded one (paper tokenizers, dated
        # templates); committed runs without it keep their status and load no tokenizer
        from .._io import read_json

        stored = (read_json(Path(folder) / "manifest.json").get("model") or {}).get("options") or {}
        if "frame_sha256" in stored:
            from ..llm._choice import current_frame_sha256

            try:
                current = current_frame_sha256(config.model, stored)
            except ImportError:  # a torch-free install (the light one, a reader of committed runs) cannot render
                current = None  # the frame: it is not compared there, and the files decide the status alone
            if current is not None and current != stored["frame_sha256"]:
                return "outdated"
    return status
