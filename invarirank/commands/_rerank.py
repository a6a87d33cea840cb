"""``invarirank rerank``: one run configuration → one run folder (see :mod:`invarirank.runner`).

Settings come from ``--config FILE`` (YAML, keys as in :class:`~invarirank.runner.RunConfig`, aliases included)
and/or flags; a flag given on the command line overrides the file. Both fill the one run schema. Heavy libraries
are imported only when the run starts.

**Reproducibility.** On one machine with one thread count (``INVARIRANK_THREADS=1``) a run is byte-identical, in
every execution mode. On another machine (CPU, thread count) the float32 kernels sum in another order: the scores
agree to about 1e-5 (measured up to 1.1e-5), and the rankings and every metric are the same except in a row holding two
scores closer than that, where two items may swap (20 of the 4,800 rows of the committed K = 10 and K = 25 span
runs); so ``observations.jsonl.gz`` is not byte-identical across machines. No tie rule is added for those rows (it
would change committed rankings). Tested in ``tests/hostile/test_reproducibility.py``; the book's note:
``book/reference/reproducibility.md``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InvariRankError
from ..llm.factory import SCORER_KINDS
from ..methods.registry import METHODS

_HELP_EPILOG = """examples:
  invarirank rerank --scorer simulated --queries 20 --m 10 --k 15 --out runs/sim
  invarirank rerank --dataset ml-100k --retriever lightgcn --k 25 --scorer span --model smollm2-135m \\
      --queries 50 --methods zero_shot,bootstrapping,sgs,stella --out runs/smol-k25
  invarirank rerank --candidates my_candidates.jsonl --scorer span --out runs/mine --dry-run
  invarirank rerank --config configs/run.yaml --out runs/from-yaml
"""


def _scorer_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with VALUE read as YAML (``0.5`` → 0.5, ``true`` → True, ``recency`` → "recency")."""
    import yaml

    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    try:
        return key.strip(), yaml.safe_load(value.strip())
    except yaml.YAMLError:
        return key.strip(), value.strip()


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "rerank",
        help="rerank queries under M presented orders with the chosen methods → run folder",
        description="Rerank test queries under M seeded presented orders with zero-shot, bootstrapping, SGS and "
        "STELLA_LW; writes observations.jsonl, metrics.json and manifest.json into --out. "
        "Resumable: rerun the same command after an interruption.",
        epilog=_HELP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a = p.add_argument
    a("--config", metavar="FILE", help="YAML file of settings (flags override it)")
    a(
        "--dataset",
        help="data set: ml-100k (default), movielens or amazon-books for the data layer; with "
        "--candidates, the name recorded in the observations (default: the file's name)",
    )
    a("--raw-dir", metavar="DIR", help="raw files of the data set (default: the embedded one)")
    a("--data-dir", metavar="DIR", help="an already prepared data folder (skips preparation)")
    a("--retriever", help="first stage: lightgcn (default) or als")
    a("--retrieval-seed", type=int, help="first-stage seed (default 42)")
    a("--k", type=int, help="candidates per query (default 25; with --candidates: cut lists to K)")
    a(
        "--k-sweep",
        metavar="K1,K2,..",
        help="the K sweep this run belongs to: queries are sampled from those kept at its smallest K",
    )
    a("--candidates", metavar="FILE", help="rerank this candidates file instead of running the first stage")
    a("--scorer", choices=list(SCORER_KINDS), help="scorer (default span)")
    a("--model", help="model: smollm2-135m (default), gemma3-270m, a Hugging Face id or a local folder")
    a(
        "--scorer-option",
        action="append",
        type=_scorer_option,
        metavar="KEY=VALUE",
        dest="scorer_option",
        help="scorer option (repeatable), e.g. bias_shape=recency for the simulated scorer, device=cuda",
    )
    a("--device", help="device of a real scorer: auto (default), cpu, cuda, mps, ... (never part of the identity)")
    a("--m", type=int, help="presented orders per query (default 20)")
    a(
        "--queries",
        type=int,
        metavar="N",
        help="number of test queries, sampled with the seed (default all; above what the data holds: all, with a note)",
    )
    a("--methods", help=f"comma-separated subset of {','.join(METHODS)} (default all; they always run in this order)")
    a("--seed", type=int, help="seed of orders, query sampling, shuffles and calibration (default 42)")
    a(
        "--calibration-queries",
        type=int,
        metavar="N",
        help="STELLA calibration queries (default 150; with the default 5 repeats that is relevant candidates x K x "
        "750 passes, ~7,500-12,000 at K=10: about 1-3 hours of a small model on 2 CPU cores, once per model "
        "and K, then cached; e.g. --calibration-queries 20 --calibration-repeats 1 for a quick try)",
    )
    a("--calibration-repeats", type=int, metavar="R", help="STELLA calibration repeats (default 5; see above)")
    a(
        "--noise-floor",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="M copies of one order: shows whether rankings are deterministic",
    )
    a("--eval-ks", metavar="K1,K2,..", help="cut-offs of HR/nDCG/recall/MRR (default 1,5,10)")
    a("--exposure-k", type=int, help="top-k of the exposure metric (default 5)")
    a("--n-bootstrap", type=int, help="bootstrap resamples for confidence intervals (default 1000)")
    a("--out", metavar="RUN_DIR", help="run folder to write (or resume)")
    a("--cache-dir", metavar="DIR", help="cache root (default $INVARIRANK_CACHE)")
    a(
        "--dry-run",
        action="store_true",
        help="print the passes per method and a time estimate; run nothing (a "
        "run estimated above 5 minutes prints one cost line before it starts)",
    )
    a(
        "--bench",
        metavar="FILE",
        help="for --dry-run: price the run from this benchmark file (benchmarks.gpu --json; "
        "default: the newest under results/bench/, else the stated assumption)",
    )
    a("--no-progress", action="store_true", help="no progress bars (model loading included)")
    a(
        "--trust-remote-code",
        action="store_true",
        help="let a model folder's own Python code run (off by default; only this flag switches it on, never a "
        "config, grid file or scorer option)",
    )
    a(
        "--allow-pickle-weights",
        action="store_true",
        help="accept pickle-based weights (*.bin, *.pt), which can run code when loaded (default: safetensors only)",
    )
    add_executor_arguments(p)
    p.set_defaults(func=run)


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """The executor flags of ``invarirank rerank`` and ``invarirank grid`` (:mod:`invarirank.runner._executors`)."""
    g = p.add_argument_group("executor (paper scale; none of these is part of a run's identity)")
    a = g.add_argument
    a(
        "--executor",
        default="local",
        metavar="NAME",
        help="local (default: this process) or ray (shards on a Ray cluster, or on a local Ray without --address)",
    )
    a(
        "--address",
        help="with --executor ray: 'auto' or HOST:PORT of a running Ray head node (e.g. `ray start "
        "--head` in a Slurm allocation); default: start a local Ray",
    )
    a(
        "--gpus-per-shard",
        type=float,
        metavar="N",
        help="with --executor ray: GPUs per worker (default 1 when the cluster has GPUs and the scorer is a model)",
    )
    a("--workers", type=int, metavar="N", help="with --executor ray: number of workers (default: as many as fit)")
    a("--cpus-per-worker", type=float, default=1, metavar="N", help="with --executor ray: CPUs per worker (default 1)")
    a(
        "--threads-per-worker",
        type=int,
        metavar="N",
        help="with --executor ray: torch threads per worker (default: its CPUs; set it equal to a local run's "
        "threads to get the same bytes from a CPU model)",
    )
    a(
        "--connect-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="with --address: seconds to wait for the cluster to answer (default 10)",
    )
    a(
        "--query-window",
        type=int,
        metavar="N",
        help="queries a worker drives in lockstep, their requests batched together (default 1; with a real scorer "
        "set --scorer-option max_batch_tokens=N to pack them by a token budget)",
    )
    a(
        "--shard-queries",
        type=int,
        metavar="N",
        help="queries per shard (default: the run's or grid's setting; 50 with --executor ray; 1 with the local "
        "executor, the query window with --query-window)",
    )


def check_executor_flags(args: argparse.Namespace) -> None:
    """Bad executor flags are an error naming the flag, before anything is read or started."""
    from .._limits import check_threads
    from ..runner._executors import EXECUTORS, check_executor_options

    if args.executor not in EXECUTORS:
        raise InvariRankError(f"--executor {args.executor!r}: expected one of {', '.join(EXECUTORS)}")
    for flag, value in (("--shard-queries", args.shard_queries), ("--query-window", args.query_window)):
        if value is not None and value < 1:
            raise InvariRankError(f"{flag} {value}: expected at least 1")
    for flag, value in (("--workers", args.workers), ("--threads-per-worker", args.threads_per_worker)):
        if value is not None and value < 1:
            raise InvariRankError(f"{flag} {value}: expected at least 1")
    if args.threads_per_worker is not None:
        check_threads(args.threads_per_worker, "--threads-per-worker")
    for flag, value in (("--gpus-per-shard", args.gpus_per_shard), ("--cpus-per-worker", args.cpus_per_worker)):
        if value is not None and not (value >= 0 and value != float("inf")):
            raise InvariRankError(f"{flag} {value:g}: expected a finite number >= 0")
    if not args.cpus_per_worker > 0:  # (a worker of 0 CPUs would let Ray start any number of them)
        raise InvariRankError(f"--cpus-per-worker {args.cpus_per_worker:g}: expected a number of CPUs above 0")
    if not args.connect_timeout > 0 or args.connect_timeout == float("inf"):  # NaN fails the first test
        raise InvariRankError(
            f"--connect-timeout {args.connect_timeout:g}: expected a finite number of seconds above 0"
        )
    check_executor_options(
        args.executor,
        address=args.address,
        gpus_per_shard=args.gpus_per_shard,
        workers=args.workers,
        cpus_per_worker=args.cpus_per_worker,
        threads_per_worker=args.threads_per_worker,
        connect_timeout=args.connect_timeout,
    )


def executor_from_args(args: argparse.Namespace) -> Any:
    """The executor the flags ask for (None: the runner's own local executor, in this process); a Ray cluster is
    started or joined here."""
    from ..runner._executors import make_executor

    check_executor_flags(args)
    executor = make_executor(
        args.executor,
        address=args.address,
        gpus_per_shard=args.gpus_per_shard,
        workers=args.workers,
        cpus_per_worker=args.cpus_per_worker,
        threads_per_worker=args.threads_per_worker,
        connect_timeout=args.connect_timeout,
    )
    return None if args.executor == "local" else executor


_FLAG_FIELDS = (
    "dataset",
    "raw_dir",
    "data_dir",
    "retriever",
    "retrieval_seed",
    "k",
    "k_sweep",
    "candidates",
    "scorer",
    "model",
    "m",
    "queries",
    "methods",
    "seed",
    "calibration_queries",
    "calibration_repeats",
    "noise_floor",
    "eval_ks",
    "exposure_k",
    "n_bootstrap",
    "out",
    "cache_dir",
    "device",
    "shard_queries",
    "query_window",
)


def config_from_args(args: argparse.Namespace):
    """The :class:`~invarirank.runner.RunConfig` of parsed arguments (YAML file first, then the given flags)."""
    from ..runner import RunConfig
    from ..runner._config import ALIASES

    base = RunConfig.from_yaml(args.config) if getattr(args, "config", None) else RunConfig()
    changes: dict[str, Any] = {}
    for name in _FLAG_FIELDS:
        value = getattr(args, name, None)
        if value is not None:
            changes[ALIASES.get(name, name)] = value  # the flags' spellings (--k, --m, --queries) stop here
    if getattr(args, "scorer_option", None):
        changes["scorer_options"] = {**base.scorer_options, **dict(args.scorer_option)}
    return base.replace(**changes) if changes else base


def check_arguments(args: argparse.Namespace, config: Any) -> None:
    """Argument checks of ``invarirank rerank`` made before any work (the run schema's own checks are
    :meth:`RunConfig.normalise`'s): a path setting may not use an unset environment variable (one line naming the
    flag or the YAML file, the setting and the variable); ``--out`` and the cache folder must be writable folders
    (one line naming the path otherwise); the explicit safety flags and ``--no-progress`` are handed to the model
    loader."""
    from .._io import check_output_dir
    from ..llm.models import allow, quiet_loading

    if unset := config.unset_path_variable():  # named where it was given: the flag, else the YAML file
        name = unset[0]
        config.check_path_variables(
            f"--{name.replace('_', '-')}" if getattr(args, name, None) is not None else args.config
        )
    if args.bench is not None and not args.dry_run:
        raise InvariRankError("--bench prices a dry run and is used only with --dry-run; add --dry-run or drop --bench")
    from ..runner import run_folder

    # a dry run promises what the real run will do: it refuses the --out the real run would refuse (a dry run
    # needs no folder: without --out or a grid it prices the run all the same)
    if not args.dry_run or config.out:
        check_output_dir(run_folder(config), "--out" if config.out else "the run folder")
    from ..assets import cache_dir

    check_output_dir(
        config.cache_dir or cache_dir(), "--cache-dir" if config.cache_dir else "the cache folder ($INVARIRANK_CACHE)"
    )
    allow(trust_remote_code=args.trust_remote_code, allow_pickle_weights=args.allow_pickle_weights)
    if args.no_progress:
        quiet_loading()


def run(args: argparse.Namespace) -> int:
    from ..runner import ensure_runs, format_plan, plan_run
    from ..store import load_run

    check_executor_flags(args)
    config = config_from_args(args)
    check_arguments(args, config)
    if args.dry_run:
        import tempfile
        from pathlib import Path

        from ..runner._queries import synthetic_candidates_for

        with tempfile.TemporaryDirectory() as tmp:  # the synthetic data set is made where a real run makes it
            planned = synthetic_candidates_for(config, Path(tmp) / "run")
            print(format_plan(plan_run(planned, bench=args.bench)))
        return 0
    executor = executor_from_args(args)
    try:
        result = load_run(ensure_runs([config], executor, progress=not args.no_progress)[0])
    finally:
        if executor is not None:
            executor.close()
    try:
        from ..evaluation import format_table

        print(format_table(result.metrics))
    except ImportError:
        pass
    data = result.manifest.get("data") or {}
    in_file, pool = data.get("test_queries_in_file"), data.get("pool_queries")
    if data.get("source") == "candidates" and isinstance(in_file, int) and isinstance(pool, int) and pool < in_file:
        at = f"first {data['sampled_from_k']}" if data.get("sampled_from_k") else "candidates"
        print(
            f"{config.candidates}: {in_file - pool} of {in_file} test queries hold no ground-truth item among their "
            f"{at} and were left out (a query is kept only when its candidates hold a relevant item)",
            file=sys.stderr,
        )
    m = result.manifest["passes"]
    print(
        f"run folder: {result.path} ({result.manifest['queries']['count']} queries; {m['requested']} passes "
        f"requested, {m['scorer_calls']} sent to the scorer, {m['shared_cache_hits']} shared-cache hits)",
        file=sys.stderr,
    )
    return 0
