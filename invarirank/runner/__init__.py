"""One run: its schema, query selection, the core step, checkpoint, manifest, dry run and orchestration.

* :mod:`.config` — :class:`RunConfig`, THE run schema (grid entries, ``invarirank rerank`` flags, ``--config``
  YAML and notebook parameters all fill it) and a run's identity;
* :mod:`.queries` — which test and validation queries a run reranks;
* :mod:`.rerank` — :func:`rerank_query`: all methods on all presented orders of one query → observation rows;
* :mod:`.records` — the observation row, the checkpointed query and the manifest's sections (dataclasses);
* :mod:`.checkpoint`, :mod:`.manifest` — resumability and provenance;
* :mod:`.plan` — the cost model (dry run of one run, estimates and GPU hours of many);
* :mod:`.run` — :func:`run_experiment` (one run into one folder) and :func:`ensure_run` (reuse or compute and
  publish into ``results/<grid>/<run>/``);
* :mod:`.worker`, :mod:`.shards`, :mod:`.executors`, :mod:`.sharded` — paper scale: the worker that holds one
  scorer, shards and their folders, the ``local`` and ``ray`` executors, many runs' shards on one executor.

The runner may import every layer below it (data, retrieval, llm, methods, evaluation) and the run store.
"""

from __future__ import annotations

from .config import RunConfig
from .manifest import manifest_without_run
from .plan import RunPlan, format_plan, plan_run
from .queries import QuerySet, load_queries
from .records import ObservationRow, QueryRecord
from .rerank import rerank_query
from .run import RunResult, ensure_run, make_run_scorer, run_experiment, status_of
from .shards import Shard, plan_shards

__all__ = ["RunConfig", "QuerySet", "load_queries", "rerank_query", "ObservationRow", "QueryRecord", "RunPlan",
           "plan_run", "format_plan", "RunResult", "run_experiment", "ensure_run", "make_run_scorer", "status_of",
           "manifest_without_run", "Shard", "plan_shards"]
