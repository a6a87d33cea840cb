"""Runs: their schema, query selection, the core step, manifest, dry run and the one path to finished run folders.

* :mod:`._config` — :class:`RunConfig`, THE run schema (grid entries, ``invarirank rerank`` flags, ``--config``
  YAML and notebook parameters all fill it) and a run's identity;
* :mod:`._queries` — which test and validation queries a run reranks;
* :mod:`.rerank` — :func:`rerank_query`: all methods on all presented orders of one query → observation rows;
* :mod:`.records` — the observation row, a finished query's record and the manifest's sections (dataclasses);
* :mod:`._manifest` — provenance;
* :mod:`._plan` — the cost model (dry run of one run, estimates and GPU hours of many);
* :mod:`._run` — :func:`ensure_runs`, THE path from run configs to finished run folders (reuse, or compute and
  publish into ``results/<grid>/<run>/``, or compute in ``out``); :func:`ensure_run` and :func:`run_experiment`
  are its one-element cases; :func:`run_status` is the one reuse check of a folder;
* :mod:`._worker`, :mod:`._shards`, :mod:`._executors`, :mod:`._sharded` — how a run is computed: the worker that holds
  one scorer, shards and their folders (the one resume record), the ``local`` and ``ray`` executors behind one
  :class:`~invarirank.runner._executor_protocol.Executor` protocol, many runs' shards on one executor.

The runner may import every layer below it (data, retrieval, llm, methods, evaluation) and the run store.
"""

from __future__ import annotations

from ._config import PATH_SETTINGS, RunConfig, slug
from ._executor_protocol import Executor
from ._executors import EXECUTORS, LocalExecutor, make_executor
from ._plan import RunPlan, format_plan, plan_run
from ._queries import QuerySet, load_queries
from ._run import (
    NO_RUN_FOLDER,
    ensure_run,
    ensure_runs,
    mismatch_error,
    run_experiment,
    run_folder,
    run_status,
)
from ._setting_checks import simple_name
from ._shards import Shard, plan_shards
from ._worker import make_run_scorer
from .records import ObservationRow, QueryRecord
from .rerank import rerank_query

__all__ = ["rerank_query"]
