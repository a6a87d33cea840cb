"""Grid files: many runs in one YAML file (see ``configs/``). A grid entry only fills the run schema
(:class:`invarirank.runner.RunConfig`): it is merged with the file's ``defaults`` and read like any other config.

Top-level fields: ``grid`` (its name: ``results/<grid>/<run>/``), ``runs`` (entries; ``K: [5, 15]`` expands to one
run per K), ``defaults``, ``data`` (the data notebooks: dataset, retrievers, Ks; default: one per data set of the
runs), ``lab`` (the teaching lab's sweep: one simulated run per bias shape × strength), ``estimate`` (GPU-hour
assumptions, :func:`invarirank.runner._grid_estimate.grid_cost_table`), ``include_simulated`` (show simulated runs on
the results page), ``pages`` (the runs that get a page in the book: ``all``, the default, or a list of run names;
:mod:`invarirank.grid._book` executes them, ``invarirank grid`` never does), and free text (``description``,
``notes``, ``commands``, ``scaled_down``).
"""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import existing_file, read_utf8
from .._yaml_reader import load_yaml
from ..errors import InvariRankError
from ..runner import RunConfig, simple_name

_GRID_KEYS = {
    "grid",
    "description",
    "defaults",
    "runs",
    "data",
    "lab",
    "estimate",
    "notes",
    "commands",
    "scaled_down",
    "include_simulated",
    "pages",
}
#: the fields of a ``data`` entry (a data notebook's parameters)
_DATA_KEYS = {"dataset", "label", "raw_dir", "retrievers", "retriever", "K", "seed"}
#: the fields of ``estimate`` (:func:`invarirank.runner._grid_estimate.grid_cost_table`'s assumptions)
_ESTIMATE_NUMBERS = {"history_tokens", "tokens_per_candidate", "effective_tflops", "calibration_relevant"}
#: run settings a grid places itself: an entry that sets them would be ignored, so it is refused
_PLACED_BY_GRID = {"out"}


@dataclass
class Grid:
    """A parsed grid file. ``runs`` in file order; ``data`` lists (dataset, retrievers, Ks) for the data notebooks;
    ``lab`` is the teaching lab's sweep (or ``None``); ``raw`` is the whole YAML mapping; ``pages`` the names of the
    runs that get a page in the book, in file order (the file's ``pages``: every run by default; the lab's runs
    never get one, the lab page reads them itself)."""

    name: str
    path: Path
    runs: list[RunConfig]
    data: list[dict[str, Any]]
    lab: dict[str, Any] | None
    raw: dict[str, Any]
    pages: list[str] = field(default_factory=list)

    def run(self, name: str) -> RunConfig:
        """The run called ``name`` (``KeyError`` if there is none)."""
        for config in self.runs:
            if config.run_name == name:
                return config
        raise KeyError(name)


def _read_yaml(p: Path) -> Any:
    existing_file(p, "grid file")
    return load_yaml(read_utf8(p, "grid file"), str(p))


def _data_entries(runs: list[RunConfig]) -> list[dict[str, Any]]:
    """One data notebook per data set of the runs, with all their retrievers and Ks (synthetic data has none)."""
    groups: dict[str, dict[str, Any]] = {}
    for config in runs:
        if config.dataset == "synthetic" or config.candidates:  # no data set to prepare: a file of candidates
            continue
        g = groups.setdefault(
            config.data_label,
            {
                "dataset": config.effective_dataset,
                "label": config.label,
                "raw_dir": config.raw_dir,
                "retrievers": [],
                "K": set(),
            },
        )
        if config.retriever not in g["retrievers"]:
            g["retrievers"].append(config.retriever)
        g["K"].add(config.effective_k)
    return [dict(g, K=sorted(g["K"])) for g in groups.values()]


def load_grid(
    path: str | os.PathLike, *, execution: Mapping[str, Any] | None = None, root: str | os.PathLike | None = None
) -> Grid:
    """Read and check a grid file (errors name the file and the field). ``execution`` (flags such as
    ``--shard-queries``) overrides the runs' execution settings (:meth:`RunConfig.execution_fields`: never part
    of a run's identity); None values are ignored. ``root``: the project root, against which the runs' relative
    paths (``raw_dir``, ``data_dir``, ``candidates``; ``$VARS`` and ``~`` expanded) are made absolute, once, so
    that the notebooks, which run in ``notebooks/``, read the same files (paths are not part of a run's
    identity; the manifest writes them relative to the project again)."""
    overrides = {k: v for k, v in (execution or {}).items() if v is not None}
    unknown = sorted(set(overrides) - RunConfig.execution_fields())
    if unknown:
        raise InvariRankError(f"not an execution setting: {unknown[0]!r}")
    p = Path(path)
    raw = _read_yaml(p)
    if not isinstance(raw, dict):
        raise InvariRankError(f"{p}: expected a mapping with 'grid' and 'runs'")
    unknown = sorted(set(raw) - _GRID_KEYS)
    if unknown:
        raise InvariRankError(
            f"{p}: unknown top-level field {unknown[0]!r}; expected some of {', '.join(sorted(_GRID_KEYS))}"
        )
    name = raw.get("grid")
    if not isinstance(name, str) or not simple_name(name):
        raise InvariRankError(
            f"{p}: field 'grid' must be a simple name (letters, digits, . _ -, not starting with '.'), got {name!r}"
        )
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise InvariRankError(f"{p}: field 'defaults' must be a mapping")
    entries = raw.get("runs") or []
    if not isinstance(entries, list):
        raise InvariRankError(f"{p}: field 'runs' must be a list")
    runs: list[RunConfig] = []
    seen: set[str] = set()
    _refuse_placed(defaults, f"{p}: defaults")
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvariRankError(f"{p}: runs[{i}] must be a mapping")
        _refuse_placed(entry, f"{p}: runs[{i}]")
        merged = {**copy.deepcopy(defaults), **entry}
        if isinstance(defaults.get("scorer_options"), dict) and isinstance(entry.get("scorer_options"), dict):
            merged["scorer_options"] = {**defaults["scorer_options"], **entry["scorer_options"]}
        ks = merged.get("K")
        if isinstance(ks, list) and not ks:
            raise InvariRankError(f"{p}: runs[{i}]: field 'K' is an empty list; expected one K or a list of Ks")
        if isinstance(ks, list) and len(ks) > 1 and merged.get("name") is not None:
            # every K of the list would be a run of that one name: the second would read as a duplicate
            raise InvariRankError(
                f"{p}: runs[{i}]: field 'name' = {merged['name']!r} with 'K' = {ks!r} would name {len(ks)} runs "
                f"alike; expected one K per named run (or no 'name': each K's run is named for its K)"
            )
        for k in ks if isinstance(ks, list) else [ks]:  # "K: [5, 15]" expands to one run per K
            config = RunConfig.from_mapping(dict(merged, K=k), f"{p}: runs[{i}]", grid=name)
            if overrides:
                config = config.replace(**overrides)
            if root is not None:
                config = config.with_absolute_paths(Path(root))
            if config.run_name in seen:
                raise InvariRankError(f"{p}: runs[{i}]: duplicate run {config.run_name!r}")
            seen.add(config.run_name)
            runs.append(config)
    data = raw.get("data")
    if data is None:
        data = _data_entries(runs)
    else:
        _check_data(data, f"{p}: data")
    if raw.get("estimate") is not None:
        _check_estimate(raw["estimate"], f"{p}: estimate")
    if "include_simulated" in raw and not isinstance(raw["include_simulated"], bool):
        raise InvariRankError(f"{p}: field 'include_simulated' = {raw['include_simulated']!r}, expected true or false")
    lab = raw.get("lab")
    if lab is not None:
        _check_lab(lab, f"{p}: lab")
    if not runs and lab is None:
        raise InvariRankError(f"{p}: field 'runs' is empty or missing; a grid needs at least one run (or a 'lab')")
    pages = _check_pages(raw.get("pages", "all"), runs, f"{p}: field 'pages'")
    return Grid(name=name, path=p, runs=runs, data=list(data), lab=lab, raw=raw, pages=pages)


def _check_pages(pages: Any, runs: list[RunConfig], where: str) -> list[str]:
    """``pages``: ``all`` (every run of the file) or a list of the file's run names, each once; returns the names in
    the runs' file order. Declared here, not found in ``results/``, so that the book executes exactly these pages
    and a declared run that is missing is an error, not a page that silently disappears."""
    names = [c.run_name for c in runs]
    if pages == "all":
        return names
    if not isinstance(pages, list) or not all(isinstance(x, str) for x in pages):
        raise InvariRankError(f"{where} = {pages!r}, expected 'all' or a list of run names of this grid")
    for i, page in enumerate(pages):
        if page not in names:
            known = ", ".join(names) or "none"
            raise InvariRankError(f"{where}: {page!r} is not a run of this grid; expected some of {known}")
        if page in pages[:i]:
            raise InvariRankError(f"{where}: run {page!r} is listed twice")
    return [n for n in names if n in pages]


def _refuse_placed(entry: Mapping[str, Any], where: str) -> None:
    for key in sorted(_PLACED_BY_GRID & set(entry)):
        raise InvariRankError(
            f"{where}: field {key!r} cannot be set in a grid file (a grid run lives in "
            f"<results>/<grid>/<run>/; use 'name' to choose its folder name)"
        )


def _check_data(data: Any, where: str) -> None:
    """The ``data`` entries: a list of mappings with a ``dataset`` name and only the known fields."""
    if not isinstance(data, list) or not all(isinstance(x, dict) and "dataset" in x for x in data):
        raise InvariRankError(f"{where}: must be a list of mappings with a 'dataset'")
    for i, entry in enumerate(data):
        unknown = sorted(set(entry) - _DATA_KEYS, key=str)
        if unknown:
            raise InvariRankError(
                f"{where}[{i}]: unknown field {unknown[0]!r}; expected some of {', '.join(sorted(_DATA_KEYS))}"
            )
        if not isinstance(entry["dataset"], str) or not entry["dataset"]:
            raise InvariRankError(f"{where}[{i}]: field 'dataset' = {entry['dataset']!r}, expected a name")
        ks = entry.get("K", [])
        for k in ks if isinstance(ks, list) else [ks]:
            if isinstance(k, bool) or not isinstance(k, int) or k < 2:
                raise InvariRankError(f"{where}[{i}]: field 'K' = {ks!r}, expected integers >= 2")
        seed = entry.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvariRankError(f"{where}[{i}]: field 'seed' = {seed!r}, expected an integer >= 0")
        for name in ("label", "raw_dir", "retriever"):
            if entry.get(name) is not None and not isinstance(entry[name], str):
                raise InvariRankError(f"{where}[{i}]: field {name!r} = {entry[name]!r}, expected a string")
        rets = entry.get("retrievers", [])
        if not isinstance(rets, (list, str)) or (isinstance(rets, list) and not all(isinstance(r, str) for r in rets)):
            raise InvariRankError(f"{where}[{i}]: field 'retrievers' = {rets!r}, expected a list of names")


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _check_estimate(estimate: Any, where: str) -> None:
    """``estimate``: positive finite numbers, and ``parameters_billion`` a mapping of model → billions."""
    if not isinstance(estimate, dict):
        raise InvariRankError(
            f"{where}: must be a mapping of assumptions ({', '.join(sorted(_ESTIMATE_NUMBERS))}, parameters_billion)"
        )
    for key, value in estimate.items():
        if key in _ESTIMATE_NUMBERS:
            if not _finite(value):
                raise InvariRankError(f"{where}: field {key!r} = {value!r}, expected a positive number")
        elif key == "parameters_billion":
            if not isinstance(value, dict) or not all(isinstance(m, str) and _finite(b) for m, b in value.items()):
                raise InvariRankError(
                    f"{where}: field 'parameters_billion' = {value!r}, expected a mapping of "
                    f"model name: positive number"
                )
        else:
            raise InvariRankError(
                f"{where}: unknown field {key!r}; expected some of "
                f"{', '.join(sorted(_ESTIMATE_NUMBERS | {'parameters_billion'}))}"
            )


def check_folders(grid: Grid, results_dir: str | os.PathLike) -> None:
    """Every run folder ``<results>/<grid>/<run>/`` stays inside ``results_dir`` once resolved (symbolic links
    and ``..`` included); raise :class:`InvariRankError` naming the run otherwise."""
    from .._io import inside

    for config in [*grid.runs, *(lab_runs(grid.lab) if grid.lab else [])]:
        inside(
            results_dir,
            Path(results_dir) / str(config.grid) / config.run_name,
            f"{grid.path}: run {config.run_name}: its folder",
        )


def _check_lab(lab: Any, where: str) -> None:
    """The lab sweep's fields: ``shapes`` a non-empty list of names, ``strengths`` a non-empty list of finite
    numbers; then every run of the sweep is checked like any run."""
    if not isinstance(lab, dict):
        raise InvariRankError(f"{where}: must be a mapping")
    _refuse_placed(lab, where)
    for name, ok, expected in (
        ("shapes", lambda v: isinstance(v, str) and v, "names of bias shapes"),
        (
            "strengths",
            lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
            "finite numbers",
        ),
    ):
        value = lab.get(name)
        if value is None:
            continue
        if not isinstance(value, list) or not value or not all(ok(v) for v in value):
            raise InvariRankError(f"{where}: field {name!r} = {value!r}, expected a non-empty list of {expected}")
    try:
        lab_runs(lab)
    except InvariRankError as exc:
        raise InvariRankError(f"{where}: {str(exc).removeprefix('lab: ')}") from None


def check_paths(grid: Grid) -> None:
    """Before a dry or real run: every path setting of every run (``raw_dir``, ``data_dir``, ``candidates``) has
    its environment variables set; an unset ``${VAR}`` is an error naming the run, the setting and the variable."""
    for config in grid.runs:
        config.check_path_variables(f"{grid.path}: run {config.run_name}")


def lab_runs(lab: Mapping[str, Any]) -> list[RunConfig]:
    """The lab sweep's runs (grid ``lab`` unless it says otherwise): one simulated run per (bias shape, bias
    strength), named ``<shape>-s<strength>``."""
    base = {k: v for k, v in lab.items() if k not in {"shapes", "strengths", "grid"}}
    base.setdefault("scorer", "simulated")
    base.setdefault("model", "simulated")
    opts = dict(base.pop("scorer_options", {}) or {})
    out = []
    for shape in lab.get("shapes", ["primacy"]):
        for strength in lab.get("strengths", [1.0]):
            o = dict(opts, bias_shape=shape, bias_strength=float(strength))
            out.append(
                RunConfig.from_mapping(
                    dict(base, scorer_options=o, name=f"{shape}-s{float(strength):g}"),
                    "lab",
                    grid=str(lab.get("grid", "lab")),
                )
            )
    return out


def main_run(grid: Grid, K: int | None = None) -> RunConfig:
    """The grid's main run (it sets Table 1): the first run with the most methods, among the runs at list length
    ``K`` when given (the book's ``main_K``, :mod:`invarirank.grid.book_config`: the paper's grid lists every
    run at K = 15, 25 and 50 with all four methods, and its Table 1 is the one at K = 25)."""
    runs = grid.runs if K is None else [c for c in grid.runs if c.effective_k == K]
    if not runs:
        raise InvariRankError(f"{grid.path}: no run at K = {K} (the main K the book gives this grid)")
    return max(runs, key=lambda c: len(c.methods))


def main_sweep(grid: Grid, K: int | None = None) -> list[RunConfig]:
    """The main run (:func:`main_run`) first, then every other run of its setting (data set, first stage, model,
    scorer), in file order: its K sweep, what a results page needs complete to take Table 1 and Figures 1–2 from
    this grid."""
    main = main_run(grid, K)
    setting = (main.data_label, main.retriever, main.model_name, main.scorer)
    return [
        main,
        *(c for c in grid.runs if c is not main and (c.data_label, c.retriever, c.model_name, c.scorer) == setting),
    ]
