"""The run folder: what a finished run holds on disk, and how it is found, read and published.

A finished run lives in ``<results>/<grid>/<run>/`` and holds exactly :data:`RESULT_FILES`::

    observations.jsonl.gz   one line per (query, method, presented order) — the public observations schema
    manifest.json           settings, versions, cost; ``grid_run`` = the run's settings, ``complete: true``
    metrics.json            invarirank.evaluation.evaluate(observations)
    run.json                the volatile facts of the session that computed it (wall times, workers, ...)

The first three (:data:`RUN_FILES`) are the run: they are deterministic and make a folder complete; ``run.json`` is
published beside them as the record of how long it took and where, and is never compared.

A work folder (``runs/<grid>/<run>/``, or any ``invarirank rerank --out`` folder) holds the same files with the
observations uncompressed (``observations.jsonl``) while the run is computed, plus ``.work/`` until it finishes
(``.work/shards/<shard>/``: the finished shards, the one resume record, see :mod:`invarirank.runner._shards`), plus
the **volatile file** ``run.json``. :class:`RunFolder` owns this layout: every other module asks it for the paths.

**Deterministic and volatile** (defined here, once): ``manifest.json`` holds only what equal runs share, so two
runs of one configuration write the same manifest whichever executor, shard size, thread count, machine or
session made them; it records no absolute path of the machine (a path inside the project is written relative
to the project root, one inside ``$INVARIRANK_CACHE`` as ``$INVARIRANK_CACHE/...``, any other is left out).
``run.json`` holds what varies: timings, hosts, processes, the git checkout, model loads, the executor and its
shard size and threads, per-shard counters and the machine's paths. ``publish_run`` copies it beside the
deterministic files; a folder without it is still complete (:func:`read_volatile` then gives ``{}``), so that two
equal runs have byte-identical published files whatever machines made them.

**Committed shards.** A long run can be committed piece by piece: while it is computed, every finished shard of its
work folder (``.work/shards/<shard>/``) is copied into ``<results>/<grid>/<run>/shards/<shard>/``
(:func:`export_shards`), and a later session — on this machine or a fresh clone — copies them back into its work
folder before computing (:func:`import_shards`), so only the missing shards are computed. Such a folder holds
*only* ``shards/``; it is never a finished run (:func:`complete_runs` skips it) and :func:`publish_run` removes
``shards/`` once the run's files are written. A shard holds ``shard.json`` (run, id, query ids, the run's
fingerprint), ``records.jsonl`` and ``volatile.json`` (its worker and timings; no machine path); a shard of
another configuration is refused when the run resumes (:class:`invarirank.runner._shards.ShardFolders`). Beside
them, ``shards/calibrations.json`` (:data:`CALIBRATIONS_FILE`) holds the STELLA_LW calibrations the shards were
computed with, so that a fresh machine takes them instead of computing them again; and while that calibration is
still being computed, ``shards/calibration-parts/k<K>/<query>.json`` (:data:`CALIBRATION_PARTS_DIR`): one part per
probing query, written into ``.work/calibration-parts/`` and copied here as each is computed
(:func:`export_calibration_parts`), so that a calibration longer than a session resumes with only the missing parts
(:mod:`invarirank.methods._calibration_parts`).

:meth:`RunFolder.status` is the one reuse check: a folder's status against a run's identity (the settings that change
its results, :meth:`invarirank.runner.RunConfig.identity`). This module knows the folder, not how a run is
computed (``invarirank.runner``) or shown (``invarirank.compendium``). It imports only the core modules and
``invarirank.evaluation``.

**One result type.** A finished run, read, is a :class:`Run` (:func:`load_run`, :meth:`Run.from_files`): the runner
returns it, the commands, the grid, the compendium and the lab read it. :class:`RunFolder` is not a result: it names
a folder's files and answers the reuse check, whether or not the run in it is finished.

The modules, by job: :mod:`._layout` (the file names, :class:`RunFolder`), :mod:`._runs` (:class:`Run`, the finished
runs of a results folder), :mod:`._project` (where the checkout and its ``results/`` are), :mod:`._publish`
(:func:`publish_run`, :func:`refresh_metrics`), :mod:`._shards` (committed shards and their calibrations).
"""

from __future__ import annotations

from ._layout import (
    CALIBRATION_PARTS_DIR,
    CALIBRATIONS_FILE,
    OPTIONAL_RESULT_FILES,
    RESULT_FILES,
    RUN_FILES,
    SHARD_FILES,
    SHARDS_DIR,
    VOLATILE_FILE,
    RunFolder,
    RunStatus,
    find_observations,
    identity_difference,
    read_volatile,
)
from ._project import checkout_root, project_root
from ._publish import publish_run, refresh_metrics
from ._runs import Run, complete_runs, load_run
from ._shards import (
    calibration_part_files,
    committed_calibration_parts,
    committed_queries,
    committed_shards,
    export_calibration_parts,
    export_shards,
    has_committed_calibrations,
    import_shards,
    recorded_calibrations,
    shard_query_ids,
)
