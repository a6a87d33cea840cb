"""A finished run, read: :class:`Run`, the one result type of a run, and the finished runs of a results folder.

Whoever made a run or reads one gets a :class:`Run`: the runner when it finishes or reuses one
(:func:`invarirank.runner.run_experiment`), ``invarirank rerank`` and ``report``, the grid, the compendium and the
teaching lab (:func:`load_run`). Its files stay in its folder; a :class:`~invarirank.store.RunFolder` is the
folder's layout (which file is where, the reuse check), not a result.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import read_json
from ..errors import InvariRankError
from ._layout import RunFolder, read_volatile


@dataclass
class Run:
    """A finished run: its folder, its settings and what its files hold.

    * ``path``: the run folder (``results/<grid>/<run>/`` when published, a work or ``--out`` folder otherwise);
      ``grid`` and ``name`` are its parent's and its own folder name.
    * ``dataset`` (its label when it has one), ``model``, ``scorer``, ``retriever``: as in the run's settings
      (``"?"`` when a manifest does not say).
    * ``K``: the list length (candidates per query; the largest when queries have several), ``M``: the presented
      orders per query, ``n_queries``: the queries actually reranked — spelled as
      :class:`invarirank.runner.RunConfig`'s fields and the manifest's ``grid_run`` section.
    * ``methods``: in the order of ``metrics.json`` (:func:`invarirank.compendium.load_run` puts them in the
      paper's order); ``metrics`` and ``manifest``: the two files as read; ``spec``: the run's settings as
      published (the manifest's ``grid_run``; ``{}`` in a work folder, whose manifest holds ``config``).

    The observation rows (:meth:`rows`) and the volatile ``run.json`` (:attr:`volatile`) are read from the folder
    when asked for: a run of many queries is held without its rows.
    """

    path: Path
    grid: str
    name: str
    dataset: str
    model: str
    scorer: str
    retriever: str
    K: int
    M: int
    n_queries: int
    methods: list[str]
    metrics: dict[str, Any]
    manifest: dict[str, Any]
    spec: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_files(cls, path: str | os.PathLike, metrics: Mapping[str, Any], manifest: Mapping[str, Any]) -> Run:
        """The run in folder ``path`` whose ``metrics.json`` and ``manifest.json`` hold ``metrics`` and
        ``manifest`` (as just written, or read by :func:`load_run`)."""
        p = Path(path)
        metrics, manifest = dict(metrics), dict(manifest)
        spec = dict(manifest.get("grid_run") or {})
        config = manifest.get("config") or {}
        queries = manifest.get("queries") or {}
        ks = queries.get("k") or [spec.get("K") or config.get("K")]
        first_method: dict[str, Any] = next(iter(metrics.get("methods", {}).values()), {})
        return cls(
            path=p,
            grid=p.parent.name,
            name=p.name,
            dataset=str(spec.get("label") or spec.get("dataset") or config.get("dataset") or "?"),
            model=str(spec.get("model") or config.get("model") or (manifest.get("model") or {}).get("model") or "?"),
            scorer=str(spec.get("scorer") or config.get("scorer") or "?"),
            retriever=str(spec.get("retriever") or config.get("retriever") or "?"),
            K=int(max(int(k) for k in ks if k is not None)),
            M=int(spec.get("M") or config.get("M") or 0),
            n_queries=int(queries.get("count") or first_method.get("overall", {}).get("queries") or 0),
            methods=list(metrics.get("methods", {})),
            metrics=metrics,
            manifest=manifest,
            spec=spec,
        )

    @property
    def folder(self) -> RunFolder:
        """The run's folder and its layout."""
        return RunFolder(self.path)

    @property
    def volatile(self) -> dict[str, Any]:
        """What varied in the session that made the run (:func:`read_volatile`; ``{}`` when nothing is recorded)."""
        return read_volatile(self.path)

    @property
    def observations(self) -> Path:
        """The observations file (``observations.jsonl.gz`` when published, else ``observations.jsonl``)."""
        gz = self.path / "observations.jsonl.gz"
        return gz if gz.is_file() else self.path / "observations.jsonl"

    def rows(self) -> list[dict[str, Any]]:
        """The run's observation rows, read and validated from :attr:`observations`."""
        from ..evaluation.observations import read_observations

        return read_observations(self.observations)


def load_run(path: str | os.PathLike) -> Run:
    """Read one finished run folder (``metrics.json`` + ``manifest.json``); an unreadable one is an error naming
    it."""
    p = Path(path)
    try:
        metrics = read_json(p / "metrics.json")
        manifest = read_json(p / "manifest.json")
    except (OSError, ValueError) as exc:
        raise InvariRankError(f"{p}: not a finished run folder ({exc})") from None
    return Run.from_files(p, metrics, manifest)


def complete_runs(results_dir: str | os.PathLike, grids: Iterable[str] | None = None) -> list[Path]:
    """Folders under ``results_dir/<grid>/`` holding all :data:`~invarirank.store.RUN_FILES` (sorted)."""
    root = Path(results_dir)
    if not root.is_dir():
        return []
    wanted = None if grids is None else set(grids)
    out = []
    for grid_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        if wanted is not None and grid_dir.name not in wanted:
            continue
        for run in sorted(p for p in grid_dir.iterdir() if p.is_dir()):
            if RunFolder(run).is_published():
                out.append(run)
    return out
