"""Runs: their schema, query selection, the core step, manifest, dry run and the one path to finished run folders.

* :mod:`.config` — :class:`RunConfig`, THE run schema (grid entries, ``invarirank rerank`` flags, ``--config``
  YAML and notebook parameters all fill it) and a run's identity;
* :mod:`.queries` — which test and validation queries a run reranks;
* :mod:`.rerank` — :func:`rerank_query`: all methods on all presented orders of one query → observation rows;
* :mod:`.records` — the observation row, a finished query's record and the manifest's sections (dataclasses);
* :mod:`.manifest` — provenance;
* :mod:`.plan` — the cost model (dry run of one run, estimates and GPU hours of many);
* :mod:`.run` — :func:`ensure_runs`, THE path from run configs to finished run folders (reuse, or compute and
  publish into ``results/<grid>/<run>/``, or compute in ``out``); :func:`ensure_run` and :func:`run_experiment`
  are its one-element cases; :func:`run_status` is the one reuse check of a folder;
* :mod:`.worker`, :mod:`.shards`, :mod:`.executors`, :mod:`.sharded` — how a run is computed: the worker that holds
  one scorer, shards and their folders (the one resume record), the ``local`` and ``ray`` executors behind one
  :class:`~invarirank.runner.executor_protocol.Executor` protocol, many runs' shards on one executor.

The runner may import every layer below it (data, retrieval, llm, methods, evaluation) and the run store.
"""

from __future__ import annotations

from .config import PATH_SETTINGS, RunConfig, simple_name, slug
from .executor_protocol import Executor
from .executors import EXECUTORS, LocalExecutor, make_executor
from .plan import RunPlan, format_plan, plan_run
from .queries import QuerySet, load_queries
from .records import ObservationRow, QueryRecord
from .rerank import rerank_query
from .run import (
    NO_RUN_FOLDER,
    ensure_run,
    ensure_runs,
    mismatch_error,
    run_experiment,
    run_folder,
    run_status,
)
from .shards import Shard, plan_shards
from .worker import make_run_scorer

__all__ = [
    "RunConfig",
    "PATH_SETTINGS",
    "simple_name",
    "slug",
    "QuerySet",
    "load_queries",
    "rerank_query",
    "ObservationRow",
    "QueryRecord",
    "RunPlan",
    "plan_run",
    "format_plan",
    "ensure_runs",
    "ensure_run",
    "run_experiment",
    "run_folder",
    "run_status",
    "mismatch_error",
    "NO_RUN_FOLDER",
    "make_run_scorer",
    "Shard",
    "plan_shards",
    "Executor",
    "LocalExecutor",
    "make_executor",
    "EXECUTORS",
]
