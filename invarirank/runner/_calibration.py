"""A run's calibration (STELLA_LW's, per K) computed in parts and journaled: :func:`calibrate_in_parts`.

The calibrated method's :class:`~invarirank.methods.registry.Calibrator` says what the calibration is (``plan``:
the probing queries and what determines each part; ``part``: one part on a worker; the plan's ``finish``: the
sum); this module only distributes and keeps the parts:

* **Parts.** One unit of work per probing query (:class:`~invarirank.runner._worker.CalibrationTask`), spread over
  the executor's workers (``map_calibration``) like shards; their integer counts summed in query order give the very
  matrix, ``calibration.json`` and manifest of the calibration computed in one piece.
* **Journal.** Each part, as it arrives in the driver, is written atomically into the run folder's
  ``.work/calibration-parts/k<K>/<query>.json`` (:meth:`invarirank.store.RunFolder.calibration_part`), beside
  ``.work/calibrations.json``; ``on_part`` is then called (a grid run copies the parts into
  ``results/<grid>/<run>/shards/calibration-parts/`` to be committed:
  :func:`invarirank.store.export_calibration_parts`).
  A rerun — this session's, or a fresh checkout's that imported the committed parts — reads the journal first and
  computes only the missing parts.
* **Cache.** The whole calibration is looked up in, and written to, the calibration cache of the driver's machine
  (``$INVARIRANK_CACHE/stella/<key>.json``), as is the run's recorded calibration: when either holds it, no part
  is computed and the journal is not read.
* **Refusal rule.** A journal part of a query that is not one of the calibration's probing queries is not counted;
  a part of a probing query made with anything else that determines it (scorer identity, repeats, seed, the
  query's content or relevant candidates, the method, the part format), or a malformed or unreadable one, stops
  the run before any pass with one line naming the file and the fields that differ: it is another calibration's
  work, never silently mixed in or overwritten.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .._io import atomic_write_json, read_json
from ..errors import InvariRankError
from ..methods.registry import calibrated_method
from ..store import RunFolder, calibration_part_files
from ..types import Query
from ._config import RunConfig
from ._executor_protocol import Executor
from ._worker import CalibrationResult, CalibrationTask


def journal_parts(out: str | Path, k: int) -> list[tuple[Path, Any]]:
    """The calibration parts journaled in the run folder ``out`` for lists of ``k``, read: ``(file, record)``; an
    unreadable file is an error naming it."""
    found = []
    for path in calibration_part_files(RunFolder(out).calibration_parts).get(k, []):
        try:
            found.append((path, read_json(path)))
        except (OSError, ValueError) as exc:
            raise InvariRankError(
                f"{path}: unreadable calibration part ({type(exc).__name__}: {exc}); restore it (e.g. from git) or "
                f"delete it to compute that part again"
            ) from None
    return found


def _refuse(path: Path, differ: Sequence[str], out: Path) -> InvariRankError:
    what = "a malformed calibration part" if differ in (["top1"], ["part"]) else "a calibration part of another run"
    return InvariRankError(
        f"{path}: {what} (differs in: {', '.join(differ)}); its probes would not count for this calibration. "
        f"Resume where it was made, or delete {RunFolder(out).calibration_parts} (and the run's "
        f"shards/calibration-parts/ in the results folder) to compute the parts again"
    )


def calibrate_in_parts(
    config: RunConfig,
    executor: Executor,
    validation: Sequence[Query],
    k: int,
    key_identity: Mapping[str, Any],
    *,
    known: Mapping[str, Any] | None = None,
    progress: bool = False,
    on_part: Callable[[int], None] | None = None,
    facts: dict[str, Any] | None = None,
) -> Any:
    """The calibration of ``config``'s calibrated method for lists of ``k`` (see the module docstring), the run
    folder being ``config.out``: taken from the cache or from ``known`` (the run's recorded calibration) when they
    match, else summed from its parts — those in the journal, and the others computed on ``executor``'s workers,
    each journaled as it arrives and then announced to ``on_part(n)`` (n: parts computed so far in this session).
    ``progress``: a bar over the passes on standard error. ``facts`` (volatile, for ``run.json``) gets the number of
    ``parts``, how many were ``journaled`` before and ``computed`` now, their ``seconds`` and ``workers``."""
    calibrated = calibrated_method(config.methods)
    if calibrated is None or calibrated.calibrator is None:
        raise InvariRankError(f"{config.run_name}: no method of {list(config.methods)} needs a calibration")
    out = Path(str(config.out))
    plan = calibrated.calibrator.plan(
        validation,
        k,
        key_identity,
        method=calibrated.name,
        n_queries=config.calibration_queries,
        repeats=config.calibration_repeats,
        seed=config.seed,
        cache_dir=config.cache_dir,
        known=known,
    )
    if plan.done is not None:
        return plan.done
    facts = facts if facts is not None else {}
    parts: dict[int, list[int]] = {}
    for path, record in journal_parts(out, k):
        index, differ = plan.match(record)
        if differ:
            raise _refuse(path, differ, out)
        if index is not None:
            parts[index] = list(record["top1"])
    tasks = [
        CalibrationTask(str(out), calibrated.name, k, i, q, config.calibration_repeats, config.seed)
        for i, q in enumerate(plan.queries)
        if i not in parts
    ]
    facts.update(parts=len(plan.queries), journaled=len(parts), computed=0, seconds=0.0, workers=[])
    if tasks:
        _compute(config, executor, plan, tasks, parts, out, progress, on_part, facts)
    return plan.finish(parts)


def _compute(
    config: RunConfig,
    executor: Executor,
    plan: Any,
    tasks: list[CalibrationTask],
    parts: dict[int, list[int]],
    out: Path,
    progress: bool,
    on_part: Callable[[int], None] | None,
    facts: dict[str, Any],
) -> None:
    """Compute ``tasks`` on the executor; journal each part as it arrives (then ``on_part``); count them in
    ``facts``."""
    folder = RunFolder(out)
    resumed = len(parts)
    if resumed:
        print(
            f"{config.run_name}: calibration at K={plan.k}: {resumed} of {len(plan.queries)} parts journaled, "
            f"{len(tasks)} to compute",
            file=sys.stderr,
        )
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(
            total=plan.passes,
            initial=sum(plan.part_passes(i) for i in parts),
            desc=f"STELLA calibration K={plan.k}",
            unit="pass",
            file=sys.stderr,
            dynamic_ncols=True,
        )
    done = [0]

    def on_result(res: CalibrationResult) -> None:
        query = plan.queries[res.index]
        atomic_write_json(folder.calibration_part(plan.k, query.query_id), plan.record(res.index, res.top1))
        parts[res.index] = list(res.top1)
        done[0] += 1
        who = {name: res.worker.get(name) for name in ("host", "pid", "slot")}
        facts["computed"] = done[0]
        facts["seconds"] = round(float(facts["seconds"]) + res.seconds, 3)
        if who not in facts["workers"]:
            facts["workers"].append(who)
        if bar is not None:
            bar.update(len(res.top1))
        if on_part is not None:
            on_part(done[0])

    try:
        executor.map_calibration(config, tasks, on_result)
    finally:
        if bar is not None:
            bar.close()
