"""Run an experiment grid and execute the book's notebooks: ``python -m invarirank.grid GRID.yaml``.

A *grid file* (YAML, see ``configs/``) lists reranking runs, one per (dataset, model, scorer, K). For
every run the grid runner executes ``notebooks/rerank.ipynb`` with papermill; the notebook calls
:func:`ensure_run`, which **reuses** the finished run committed under ``results/<grid>/<run>/`` when it
is complete and was made with the same settings, and otherwise runs (or resumes) it in a work folder
(``runs/<grid>/<run>/``, not committed) and publishes the finished run into ``results/<grid>/<run>/``::

    results/<grid>/<run>/observations.jsonl.gz   one line per (query, method, presented order)
    results/<grid>/<run>/manifest.json           settings, versions, cost; key "grid_run" = the RunSpec
    results/<grid>/<run>/metrics.json            invarirank.evaluation.evaluate(observations)

Then it executes ``notebooks/data.ipynb`` once per (dataset, retriever) and ``notebooks/results.ipynb``
once, and makes sure the teaching lab's precomputed sweep (``results/lab/``) exists. Executed notebooks
land in the *build folder* (default ``book/generated/``, not committed), which the book's ``_toc.yml``
includes::

    <build>/data/<dataset>-<retriever>.ipynb
    <build>/rerank/<run>.ipynb
    <build>/results.ipynb

A notebook whose fingerprint (its source, its parameters, the files of its run(s) and the package's
source) did not change since its last successful execution is not executed again, so a second
``make book`` only rebuilds the HTML. A notebook that fails stops the grid with exit status 1 (its
partial output is kept in ``<build>/_failed/`` for inspection and never reaches the book).

Conventions: K is the number of candidates, M the number of presented orders per query; a run's name is
``<dataset>-<retriever>-<model>-<scorer>-k<K>`` unless the grid names it. Every random choice is seeded
from the grid's ``seed``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .errors import InvariRankError
from .io import atomic_write_json, atomic_write_text, read_json
from .store import RESULT_FILES, complete_runs, find_observations
from .store import publish_run as store_publish

__all__ = [
    "RunSpec", "Grid", "load_grid", "project_root", "run_status", "ensure_run", "publish_run", "complete_runs",
    "experiment_config", "run_in_work_dir", "estimate", "cost_table", "format_cost_table", "execute_notebook",
    "main_spec", "run", "main", "METHOD_ORDER", "RESULT_FILES",
]

#: The methods in the paper's order of presentation.
METHOD_ORDER = ("zero_shot", "bootstrapping", "stella", "sgs")
_SCORERS = ("span", "choice", "simulated")
_RUN_KEYS = {
    "name", "dataset", "label", "raw_dir", "retriever", "model", "scorer", "K", "M", "n_queries", "sample_k",
    "methods", "seed", "calibration_queries", "calibration_repeats", "scorer_options", "device",
}
_GRID_KEYS = {"grid", "description", "defaults", "runs", "data", "lab", "estimate", "notes", "commands",
              "scaled_down", "include_simulated"}


# --------------------------------------------------------------------------------------------------
# paths
# --------------------------------------------------------------------------------------------------
#: grid and run names become folder names: letters, digits, '.', '_' and '-' only
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9._-]+")


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The repository root: the nearest folder at or above ``start`` (default: the working directory)
    holding ``_toc.yml`` and ``configs/``; falls back to the folder above this package."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "configs").is_dir():
            return folder
    return Path(__file__).resolve().parents[1]


def _slug(text: str) -> str:
    """A file-name friendly, lower-case name: ``meta-llama/Llama-3.2-3B-Instruct`` → ``llama-3.2-3b-instruct``."""
    last = str(text).rstrip("/").split("/")[-1]
    return re.sub(r"[^a-z0-9.]+", "-", last.lower()).strip("-.") or "x"


# --------------------------------------------------------------------------------------------------
# run specification
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One reranking run of a grid: one (dataset, model, scorer, K) with its methods.

    ``sample_k`` is the K at which queries are sampled (once, seeded): the smallest K of a sweep, so
    every K of the sweep reranks the same users (``None`` = this run's own K). ``n_queries`` is how many
    test queries are sampled (``None`` = all kept ones). ``calibration_queries`` / ``calibration_repeats``
    size STELLA_LW's calibration (PROTOCOL: 150 and 5). ``scorer_options`` go to
    ``invarirank.llm.make_scorer`` (for the simulated scorer: bias_shape, bias_strength, ...).
    ``dataset`` is the data layer's name (``ml-100k``, ``movielens``, ``amazon-books``, or ``synthetic``
    for the lab); ``label`` names the data in run names and tables (``ml-32m``; default: ``dataset``);
    ``raw_dir`` is the raw files' folder (``$VARS`` expanded, relative to the repository root).
    """

    grid: str
    dataset: str = "ml-100k"
    label: str | None = None
    raw_dir: str | None = None
    retriever: str = "lightgcn"
    model: str = "smollm2-135m"
    scorer: str = "span"
    K: int = 10
    M: int = 20
    n_queries: int | None = None
    sample_k: int | None = None
    methods: tuple[str, ...] = METHOD_ORDER
    seed: int = 42
    calibration_queries: int = 150
    calibration_repeats: int = 5
    scorer_options: Mapping[str, Any] = field(default_factory=dict)
    device: str = "auto"
    name: str | None = None

    # -- derived -----------------------------------------------------------------------------------
    @property
    def run_name(self) -> str:
        """Folder name of the run inside ``results/<grid>/``."""
        if self.name:
            return self.name
        return f"{_slug(self.data_label)}-{_slug(self.retriever)}-{_slug(self.model)}-{self.scorer}-k{self.K}"

    @property
    def data_label(self) -> str:
        """The data set's name in run names and tables."""
        return self.label or self.dataset

    def resolved_raw_dir(self) -> str | None:
        """``raw_dir`` with environment variables expanded, relative to the repository root."""
        if not self.raw_dir:
            return None
        p = Path(os.path.expandvars(os.path.expanduser(self.raw_dir)))
        return str(p if p.is_absolute() else project_root() / p)

    @property
    def pool_k(self) -> int:
        """The K whose kept queries the sample is drawn from."""
        return int(self.sample_k or self.K)

    def title(self) -> str:
        """A human title for the run's notebook page."""
        q = "all" if self.n_queries is None else str(self.n_queries)
        return (f"Run: {self.data_label}, {self.model}, {self.scorer} scorer, K = {self.K} "
                f"(M = {self.M}, {q} queries)")

    def to_json(self) -> dict[str, Any]:
        """JSON-able settings (the ``grid_run`` entry of the published manifest)."""
        d = dataclasses.asdict(self)
        d["methods"] = list(self.methods)
        d["scorer_options"] = dict(self.scorer_options)
        d["run_name"] = self.run_name
        return d

    def identity(self) -> dict[str, Any]:
        """The settings that determine the run's observations (what must match to reuse a run).

        ``device`` and ``name`` are left out: the same settings on another device are the same run.
        """
        d = self.to_json()
        for key in ("device", "name", "run_name", "raw_dir"):
            d.pop(key, None)
        if "stella" not in self.methods:
            d.pop("calibration_queries")
            d.pop("calibration_repeats")
        return d

    def notebook_parameters(self, results_dir: Path, work_dir: Path) -> dict[str, Any]:
        """Papermill parameters of ``notebooks/rerank.ipynb`` for this run."""
        return {
            "grid": self.grid, "run_name": self.name, "dataset": self.dataset, "label": self.label,
            "raw_dir": self.raw_dir, "retriever": self.retriever,
            "model": self.model, "scorer": self.scorer, "K": self.K, "M": self.M,
            "n_queries": self.n_queries, "sample_k": self.sample_k, "methods": list(self.methods),
            "seed": self.seed, "calibration_queries": self.calibration_queries,
            "calibration_repeats": self.calibration_repeats, "scorer_options": dict(self.scorer_options),
            "device": self.device, "results_dir": str(results_dir), "work_dir": str(work_dir),
        }

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any], *, grid: str, where: str = "run") -> "RunSpec":
        """Build and validate a spec from a mapping (a grid entry merged with the grid's defaults)."""
        unknown = sorted(set(d) - _RUN_KEYS - {"grid", "run_name"})
        if unknown:
            raise InvariRankError(f"{where}: unknown field {unknown[0]!r}; expected some of "
                                  f"{', '.join(sorted(_RUN_KEYS))}")
        kw: dict[str, Any] = {"grid": str(d.get("grid", grid))}
        for key in ("dataset", "label", "raw_dir", "retriever", "model", "scorer", "device"):
            if key in d and d[key] is not None:
                kw[key] = str(d[key])
        if d.get("name"):
            kw["name"] = str(d["name"])
        for key, lo in (("K", 1), ("M", 1), ("seed", 0), ("calibration_queries", 1),
                        ("calibration_repeats", 1)):
            if key in d and d[key] is not None:
                kw[key] = _int(d[key], f"{where}: {key}", lo)
        for key in ("n_queries", "sample_k"):
            if d.get(key) is not None:
                kw[key] = _int(d[key], f"{where}: {key}", 1)
        if "methods" in d:
            methods = d["methods"]
            if isinstance(methods, str) or not isinstance(methods, Sequence) or not methods:
                raise InvariRankError(f"{where}: methods {methods!r}; expected a non-empty list of "
                                      f"{', '.join(METHOD_ORDER)}")
            for m in methods:
                if m not in METHOD_ORDER:
                    raise InvariRankError(f"{where}: unknown method {m!r}; expected one of "
                                          f"{', '.join(METHOD_ORDER)}")
            kw["methods"] = tuple(m for m in METHOD_ORDER if m in methods)
        if d.get("scorer_options") is not None:
            if not isinstance(d["scorer_options"], Mapping):
                raise InvariRankError(f"{where}: scorer_options must be a mapping")
            kw["scorer_options"] = dict(sorted(d["scorer_options"].items()))
        spec = cls(**kw)
        if spec.scorer not in _SCORERS:
            raise InvariRankError(f"{where}: scorer {spec.scorer!r}; expected one of {', '.join(_SCORERS)}")
        if spec.sample_k is not None and spec.sample_k > spec.K:
            raise InvariRankError(f"{where}: sample_k {spec.sample_k} is larger than K {spec.K}; queries "
                                  f"are sampled at the smallest K of a sweep")
        if not _SIMPLE_NAME.fullmatch(spec.grid) or not _SIMPLE_NAME.fullmatch(spec.run_name):
            raise InvariRankError(f"{where}: grid/run names may hold only letters, digits, '.', '_' and '-' "
                                  f"(got {spec.grid!r}/{spec.run_name!r})")
        return spec


def _int(value: Any, where: str, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < lo:
        raise InvariRankError(f"{where}: {value!r}; expected an integer >= {lo}")
    return int(value)


# --------------------------------------------------------------------------------------------------
# grid files
# --------------------------------------------------------------------------------------------------
@dataclass
class Grid:
    """A parsed grid file. ``runs`` in file order; ``data`` lists (dataset, retriever, Ks) for the data
    notebooks; ``lab`` is the teaching lab's sweep (or ``None``); ``raw`` is the whole YAML mapping."""

    name: str
    path: Path
    runs: list[RunSpec]
    data: list[dict[str, Any]]
    lab: dict[str, Any] | None
    raw: dict[str, Any]

    def run(self, name: str) -> RunSpec:
        for spec in self.runs:
            if spec.run_name == name:
                return spec
        raise KeyError(name)


def load_grid(path: str | os.PathLike) -> Grid:
    """Read and validate a grid file (errors name the file and the field)."""
    p = Path(path)
    if not p.is_file():
        raise InvariRankError(f"{p}: grid file not found")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InvariRankError(f"{p}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict):
        raise InvariRankError(f"{p}: expected a mapping with 'grid' and 'runs'")
    unknown = sorted(set(raw) - _GRID_KEYS)
    if unknown:
        raise InvariRankError(f"{p}: unknown top-level field {unknown[0]!r}; expected some of "
                              f"{', '.join(sorted(_GRID_KEYS))}")
    name = raw.get("grid")
    if not isinstance(name, str) or not _SIMPLE_NAME.fullmatch(name):
        raise InvariRankError(f"{p}: field 'grid' must be a simple name (letters, digits, . _ -), got {name!r}")
    defaults = raw.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise InvariRankError(f"{p}: field 'defaults' must be a mapping")
    entries = raw.get("runs") or []
    if not isinstance(entries, list):
        raise InvariRankError(f"{p}: field 'runs' must be a list")
    runs: list[RunSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvariRankError(f"{p}: runs[{i}] must be a mapping")
        merged = {**copy.deepcopy(defaults), **entry}
        if isinstance(defaults.get("scorer_options"), dict) and isinstance(entry.get("scorer_options"), dict):
            merged["scorer_options"] = {**defaults["scorer_options"], **entry["scorer_options"]}
        ks = merged.get("K")
        for k in (ks if isinstance(ks, list) else [ks]):   # "K: [5, 15]" expands to one run per K
            one = dict(merged, K=k)
            spec = RunSpec.from_mapping(one, grid=name, where=f"{p}: runs[{i}]")
            if spec.run_name in seen:
                raise InvariRankError(f"{p}: runs[{i}]: duplicate run {spec.run_name!r}")
            seen.add(spec.run_name)
            runs.append(spec)
    data = raw.get("data")
    if data is None:   # one data notebook per dataset of the runs, with all their retrievers and Ks
        groups: dict[str, dict[str, Any]] = {}
        for spec in runs:
            if spec.dataset == "synthetic":
                continue
            g = groups.setdefault(spec.data_label, {"dataset": spec.dataset, "label": spec.label,
                                                    "raw_dir": spec.raw_dir, "retrievers": [], "K": set()})
            if spec.retriever not in g["retrievers"]:
                g["retrievers"].append(spec.retriever)
            g["K"].add(spec.K)
        data = [dict(g, K=sorted(g["K"])) for g in groups.values()]
    elif not isinstance(data, list) or not all(isinstance(x, dict) and "dataset" in x for x in data):
        raise InvariRankError(f"{p}: field 'data' must be a list of mappings with a 'dataset'")
    lab = raw.get("lab")
    if lab is not None and not isinstance(lab, dict):
        raise InvariRankError(f"{p}: field 'lab' must be a mapping")
    return Grid(name=name, path=p, runs=runs, data=list(data), lab=lab, raw=raw)


# --------------------------------------------------------------------------------------------------
# run folders
# --------------------------------------------------------------------------------------------------
def run_status(spec: RunSpec, results_dir: str | os.PathLike) -> str:
    """``"complete"`` (all files there, same settings), ``"missing"``, ``"incomplete"`` (some files) or
    ``"mismatch"`` (complete, but made with other settings)."""
    folder = Path(results_dir) / spec.grid / spec.run_name
    present = [f for f in RESULT_FILES if (folder / f).is_file()]
    if not present:
        return "missing"
    if len(present) < len(RESULT_FILES):
        return "incomplete"
    try:
        manifest = read_json(folder / "manifest.json")
    except (OSError, ValueError):
        return "incomplete"
    stored = (manifest.get("grid_run") or {})
    if not manifest.get("complete", True):
        return "incomplete"
    return "complete" if _identity_of(stored) == spec.identity() else "mismatch"


def _identity_of(stored: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return RunSpec.from_mapping({k: v for k, v in stored.items() if k in _RUN_KEYS},
                                    grid=str(stored.get("grid", "")), where="manifest").identity()
    except (InvariRankError, TypeError):
        return {}


def publish_run(work_dir: str | os.PathLike, results_dir: str | os.PathLike, spec: RunSpec) -> Path:
    """Publish a finished run of ``spec`` from its work folder into ``results/<grid>/<run>/``
    (:func:`invarirank.store.publish_run`)."""
    return store_publish(work_dir, Path(results_dir) / spec.grid / spec.run_name, spec.to_json())


def ensure_run(spec: RunSpec, results_dir: str | os.PathLike | None = None,
               work_dir: str | os.PathLike | None = None, *, allow_run: bool = True) -> Path:
    """Return the finished run folder of ``spec``: reuse it when complete and matching, else run or
    resume it in ``work_dir/<grid>/<run>`` and publish it. A folder made with *other* settings is never
    overwritten: that is an error naming the folder (delete it, or give the run another ``name``)."""
    root = project_root()
    results = Path(results_dir) if results_dir else root / "results"
    work_root = Path(work_dir) if work_dir else root / "runs"
    status = run_status(spec, results)
    target = results / spec.grid / spec.run_name
    if status == "complete":
        print(f"grid: reusing the finished run {target}", file=sys.stderr)
        return target
    if status == "mismatch":
        stored = read_json(target / "manifest.json").get("grid_run", {})
        diff = sorted(k for k, v in spec.identity().items() if _identity_of(stored).get(k) != v)
        raise InvariRankError(
            f"{target}: a finished run with other settings ({', '.join(diff) or 'unknown'}) is there; "
            f"delete the folder or give this run another name")
    if not allow_run:
        raise InvariRankError(f"{target}: run {status} and running is not allowed here")
    work = work_root / spec.grid / spec.run_name
    t0 = time.perf_counter()
    run_in_work_dir(spec, work)
    print(f"grid: ran {spec.run_name} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return publish_run(work, results, spec)


def experiment_config(spec: RunSpec, work: str | os.PathLike) -> Any:
    """The :class:`invarirank.experiment.ExperimentConfig` of a run spec, writing into ``work``.

    The dataset ``synthetic`` (the teaching lab) is a seeded synthetic candidates file
    (:func:`invarirank.data.synthetic.write_synthetic_candidates`) written into ``work`` first: ``n_queries`` test
    and ``calibration_queries`` validation candidate sets of K made-up items.
    """
    from .experiment import ExperimentConfig   # noqa: PLC0415

    work = Path(work)
    options = dict(spec.scorer_options)
    if spec.device and spec.device != "auto" and spec.scorer != "simulated":
        options.setdefault("device", spec.device)
    settings: dict[str, Any] = {
        "dataset": spec.dataset, "raw_dir": spec.resolved_raw_dir(), "retriever": spec.retriever, "k": spec.K,
        "scorer": spec.scorer,
        "model": None if spec.scorer == "simulated" and spec.model == "simulated" else spec.model,
        "scorer_options": options, "m": spec.M, "queries": spec.n_queries, "methods": list(spec.methods),
        "seed": spec.seed, "calibration_queries": spec.calibration_queries,
        "calibration_repeats": spec.calibration_repeats, "out": str(work),
    }
    if spec.sample_k is not None and spec.sample_k != spec.K:
        settings["k_sweep"] = sorted({spec.sample_k, spec.K})
    if spec.dataset == "synthetic":
        from .data.synthetic import write_synthetic_candidates   # noqa: PLC0415

        path = work.parent / f".{work.name}-candidates.jsonl"
        write_synthetic_candidates(path, n_test=spec.n_queries or 40, n_validation=spec.calibration_queries,
                                   k=spec.K, seed=spec.seed)
        settings["candidates"] = str(path)
    return ExperimentConfig.from_mapping(settings, where=f"run {spec.run_name}")


def run_in_work_dir(spec: RunSpec, work: str | os.PathLike) -> Path:
    """Run (or resume: the experiment runner checkpoints every query) ``spec`` into ``work``.

    ``work`` is the grid's scratch folder of this run. A *finished* run already there is reused when it
    was made with the same configuration, and removed otherwise (the grid file changed; the finished
    results live under ``results/``); an unfinished one is resumed by the experiment runner.
    """
    from .experiment import run_experiment   # noqa: PLC0415

    work = Path(work)
    config = experiment_config(spec, work)
    if (work / "manifest.json").is_file() and not (work / ".work").exists():
        try:
            done = read_json(work / "manifest.json").get("config") or {}
        except (OSError, ValueError):
            done = {}
        wanted = config.fingerprint_fields()
        if {k: v for k, v in done.items() if k in wanted} == wanted and find_observations(work):
            return work
        print(f"grid: removing {work}: a finished run with another configuration (the grid changed)",
              file=sys.stderr)
        for name in ("observations.jsonl", "metrics.json", "manifest.json", "calibration.json"):
            (work / name).unlink(missing_ok=True)
    run_experiment(config, progress=True)
    return work


# --------------------------------------------------------------------------------------------------
# cost estimates
# --------------------------------------------------------------------------------------------------
def estimate(spec: RunSpec, *, n_queries: int | None = None, calibration_relevant: float = 1.0) -> dict[str, Any]:
    """Scorer passes of a run, from the method definitions (what ``invarirank rerank --dry-run`` counts).

    Per presented order each method requests zero-shot 1, bootstrapping 3, SGS K and STELLA_LW 4–10
    passes; the shared pass cache computes the presented order once for all methods (and bootstrapping's
    two shuffles are STELLA_LW's updates 1–2), so the *distinct* passes per order are fewer
    (:func:`invarirank.experiment.estimate_passes_per_order`). ``passes_min``/``passes_max`` are the
    distinct passes of the run with STELLA_LW stopping after 4 / 10 updates. Calibration:
    ``calibration_queries × calibration_relevant × K × calibration_repeats`` (``calibration_relevant``:
    the assumed relevant candidates per validation query among its top K).
    """
    from .experiment import estimate_passes_per_order   # noqa: PLC0415  (torch-free)

    q = n_queries if n_queries is not None else spec.n_queries
    if q is None:
        raise InvariRankError(f"{spec.run_name}: n_queries unknown; give it to estimate passes")
    lo = estimate_passes_per_order(list(spec.methods), spec.K, 4)
    hi = estimate_passes_per_order(list(spec.methods), spec.K, 10)
    calibration = (spec.calibration_queries * calibration_relevant * spec.K * spec.calibration_repeats
                   if "stella" in spec.methods else 0.0)
    return {"run": spec.run_name, "K": spec.K, "M": spec.M, "queries": q,
            "requested_max": q * spec.M * hi["requested_total"],
            "passes_min": q * spec.M * lo["unique"], "passes_max": q * spec.M * hi["unique"],
            "calibration_passes": int(round(calibration)),
            "total_min": int(q * spec.M * lo["unique"] + round(calibration)),
            "total_max": int(q * spec.M * hi["unique"] + round(calibration))}


def tokens_per_pass(K: int, history_tokens: float, tokens_per_candidate: float) -> float:
    """Prompt tokens of one pass: the history part plus K candidate lines (no prefix reuse assumed)."""
    return history_tokens + K * tokens_per_candidate


def cost_table(grid: Grid) -> "Any":
    """The estimated cost of a grid (pandas DataFrame, one row per run): distinct scorer passes (STELLA_LW
    stopping after 4–10 updates), calibration passes, and GPU hours under the grid's ``estimate:``
    assumptions::

        estimate:
          history_tokens: 450           # prompt tokens before the candidates
          tokens_per_candidate: 25      # tokens of one candidate line with its delimiters
          effective_tflops: 100         # sustained bf16 throughput of one GPU, TFLOP/s
          calibration_relevant: 1.5     # relevant candidates per calibration query
          parameters_billion: {model-id: 3.2, ...}

    A forward pass over L tokens costs about ``2 × parameters × L`` FLOPs; hours = passes × that /
    throughput. An upper-bound style estimate: prefix reuse and early stopping make real runs shorter.
    """
    import pandas as pd   # noqa: PLC0415

    est = grid.raw.get("estimate") or {}
    hist = float(est.get("history_tokens", 450))
    per_cand = float(est.get("tokens_per_candidate", 25))
    tflops = float(est.get("effective_tflops", 100))
    rel = float(est.get("calibration_relevant", 1.0))
    params = est.get("parameters_billion") or {}
    rows = []
    for spec in grid.runs:
        e = estimate(spec, calibration_relevant=rel)
        billions = params.get(spec.model)
        tokens = tokens_per_pass(spec.K, hist, per_cand)
        sec = None if billions is None else 2 * float(billions) * 1e9 * tokens / (tflops * 1e12)
        rows.append({
            "run": spec.run_name, "K": spec.K, "M": spec.M, "queries": e["queries"],
            "passes (min)": e["passes_min"], "passes (max)": e["passes_max"],
            "calibration passes": e["calibration_passes"], "tokens per pass": int(tokens),
            "s per pass": None if sec is None else round(sec, 4),
            "GPU hours (min)": None if sec is None else round((e["total_min"]) * sec / 3600, 1),
            "GPU hours (max)": None if sec is None else round((e["total_max"]) * sec / 3600, 1)})
    return pd.DataFrame.from_records(rows)


def format_cost_table(grid: Grid) -> str:
    """:func:`cost_table` as fixed-width text with a total line (what the paper grid's header shows)."""
    df = cost_table(grid)
    head = f"{'run':<56}{'passes (min-max)':>22}{'calib.':>9}{'s/pass':>8}{'GPU h (min-max)':>17}"
    lines = [head]
    for _, r in df.iterrows():
        known = r["s per pass"] is not None and r["s per pass"] == r["s per pass"]
        gpu = f"{r['GPU hours (min)']:.1f}-{r['GPU hours (max)']:.1f}" if known else "?"
        sp = f"{r['s per pass']:.3f}" if known else "?"
        passes = f"{int(r['passes (min)']):,}-{int(r['passes (max)']):,}"
        lines.append(f"{r['run']:<56}{passes:>22}{int(r['calibration passes']):>9,}{sp:>8}{gpu:>17}")
    passes = f"{int(df['passes (min)'].sum()):,}-{int(df['passes (max)'].sum()):,}"
    gpu = f"{df['GPU hours (min)'].sum():.0f}-{df['GPU hours (max)'].sum():.0f}"
    lines.append(f"{'total':<56}{passes:>22}{int(df['calibration passes'].sum()):>9,}{'':>8}{gpu:>17}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# notebooks
# --------------------------------------------------------------------------------------------------
def _fingerprint(*parts: Any, files: Iterable[Path] = ()) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode("utf-8"))
        h.update(b"\0")
    for f in sorted({Path(x) for x in files}):
        h.update(str(f.name).encode("utf-8"))
        h.update(f.read_bytes() if f.is_file() else b"<missing>")
    return h.hexdigest()


def _package_files() -> list[Path]:
    pkg = Path(__file__).resolve().parent
    return sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)


def _stored_fingerprint(path: Path) -> str | None:
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return (nb.get("metadata", {}).get("invarirank") or {}).get("fingerprint")


def execute_notebook(source: str | os.PathLike, output: str | os.PathLike, parameters: Mapping[str, Any], *,
                     title: str | None = None, fingerprint: str | None = None, force: bool = False,
                     cwd: str | os.PathLike | None = None, kernel: str = "python3",
                     failed_dir: str | os.PathLike | None = None) -> bool:
    """Execute ``source`` with papermill into ``output``; return False when skipped (same fingerprint).

    ``title`` replaces the first Markdown heading (papermill cannot parameterise Markdown). The output
    only appears once the execution succeeded (written to a temporary file and renamed); on failure
    the partial notebook goes to ``failed_dir`` and :class:`InvariRankError` names the notebook and the
    error.
    """
    import nbformat   # noqa: PLC0415
    import papermill  # noqa: PLC0415

    src, out = Path(source), Path(output)
    if fingerprint and not force and out.is_file() and _stored_fingerprint(out) == fingerprint:
        print(f"grid: {out} is up to date", file=sys.stderr)
        return False
    nb = nbformat.read(src, as_version=4)
    if title:
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
                lines = cell.source.lstrip().splitlines()
                cell.source = "\n".join([f"# {title}", *lines[1:]])
                break
    nb.metadata.setdefault("invarirank", {})
    nb.metadata["invarirank"]["fingerprint"] = fingerprint
    nb.metadata["invarirank"]["parameters"] = json.loads(json.dumps(dict(parameters), default=str))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_in = out.with_name(f".{out.stem}.in.ipynb")
    tmp_out = out.with_name(f".{out.stem}.tmp.ipynb")
    nbformat.write(nb, tmp_in)
    print(f"grid: executing {src.name} -> {out}", file=sys.stderr, flush=True)
    try:
        papermill.execute_notebook(str(tmp_in), str(tmp_out), parameters=dict(parameters),
                                   kernel_name=kernel, cwd=str(cwd) if cwd else None,
                                   progress_bar=False, log_output=False, request_save_on_cell_execute=False)
    except Exception as exc:  # papermill raises PapermillExecutionError (or kernel errors)
        failed = Path(failed_dir) if failed_dir else out.parent / "_failed"
        failed.mkdir(parents=True, exist_ok=True)
        if tmp_out.is_file():
            os.replace(tmp_out, failed / out.name)
        out.unlink(missing_ok=True)
        ename = getattr(exc, "ename", type(exc).__name__)
        evalue = str(getattr(exc, "evalue", exc)).strip().splitlines()
        raise InvariRankError(f"notebook {src} ({out.name}) failed: {ename}: "
                              f"{evalue[-1] if evalue else ''} (partial output: {failed / out.name})") from None
    finally:
        tmp_in.unlink(missing_ok=True)
    _hide_injected_parameters(tmp_out)
    os.replace(tmp_out, out)
    return True


def _hide_injected_parameters(path: Path) -> None:
    """Collapse papermill's injected-parameters cell in the book (tag ``hide-cell``)."""
    import nbformat   # noqa: PLC0415

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags and "hide-cell" not in tags:
            cell.metadata["tags"] = [*tags, "hide-cell"]
    nbformat.write(nb, path)


# --------------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------------
def _lab_runs(lab: Mapping[str, Any]) -> list[RunSpec]:
    """The lab sweep's runs: one simulated run per (bias shape, bias strength)."""
    base = {k: v for k, v in lab.items() if k not in {"shapes", "strengths", "grid"}}
    base.setdefault("scorer", "simulated")
    base.setdefault("model", "simulated")
    opts = dict(base.pop("scorer_options", {}) or {})
    out = []
    for shape in lab.get("shapes", ["primacy"]):
        for strength in lab.get("strengths", [1.0]):
            o = dict(opts, bias_shape=shape, bias_strength=float(strength))
            name = f"{shape}-s{float(strength):g}"
            out.append(RunSpec.from_mapping(dict(base, scorer_options=o, name=name),
                                            grid=str(lab.get("grid", "lab")), where="lab"))
    return out


def run(grid_path: str | os.PathLike, *, build_dir: str | os.PathLike | None = None,
        results_dir: str | os.PathLike | None = None, work_dir: str | os.PathLike | None = None,
        force: bool = False, only: Sequence[str] = (), skip_results: bool = False,
        kernel: str = "python3") -> dict[str, Any]:
    """Execute a grid (see the module docstring); returns a summary (what ran, what was reused)."""
    root = project_root()
    grid = load_grid(grid_path)
    build = Path(build_dir) if build_dir else root / "book" / "generated"
    results = Path(results_dir) if results_dir else root / "results"
    work = Path(work_dir) if work_dir else root / "runs"
    notebooks = root / "notebooks"
    build.mkdir(parents=True, exist_ok=True)
    pkg = _package_files()
    summary: dict[str, Any] = {"grid": grid.name, "executed": [], "skipped": [], "runs": {}}

    # 1. the teaching lab's precomputed sweep (simulated; no notebook page per run)
    if grid.lab:
        for spec in _lab_runs(grid.lab):
            before = run_status(spec, results)
            ensure_run(spec, results, work)
            summary["runs"][f"{spec.grid}/{spec.run_name}"] = "reused" if before == "complete" else "ran"

    # 2. data notebooks
    data_pages = []
    for entry in grid.data:
        ks = entry.get("K", [])
        ks = ks if isinstance(ks, list) else [ks]
        rets = entry.get("retrievers", entry.get("retriever", ["lightgcn"]))
        raw_dir = entry.get("raw_dir")
        if raw_dir:
            raw_dir = RunSpec(grid=grid.name, raw_dir=str(raw_dir)).resolved_raw_dir()
        params = {"dataset": entry["dataset"], "label": entry.get("label"), "raw_dir": raw_dir,
                  "retrievers": list(rets if isinstance(rets, list) else [rets]),
                  "K_values": [int(k) for k in ks],
                  "seed": int(entry.get("seed", (grid.raw.get("defaults") or {}).get("seed", 42)))}
        out = build / "data" / f"{_slug(entry.get('label') or params['dataset'])}.ipynb"
        data_pages.append(out)
        if only and "data" not in only:
            continue
        fp = _fingerprint(params, files=[notebooks / "data.ipynb", *pkg])
        done = execute_notebook(notebooks / "data.ipynb", out, params, fingerprint=fp, force=force,
                                cwd=notebooks, kernel=kernel, failed_dir=build / "_failed")
        summary["executed" if done else "skipped"].append(str(out))

    # 3. one reranking notebook per run
    run_pages = []
    for spec in grid.runs:
        out = build / "rerank" / f"{spec.run_name}.ipynb"
        run_pages.append(out)
        if only and spec.run_name not in only and "rerank" not in only:
            continue
        before = run_status(spec, results)
        params = spec.notebook_parameters(results, work)
        run_files = [results / spec.grid / spec.run_name / f for f in RESULT_FILES[1:]]
        fp = _fingerprint(params, files=[notebooks / "rerank.ipynb", *run_files, *pkg])
        if before != "complete":
            fp = None   # the run must be (re)computed: always execute
        done = execute_notebook(notebooks / "rerank.ipynb", out, params, title=spec.title(), fingerprint=fp,
                                force=force, cwd=notebooks, kernel=kernel, failed_dir=build / "_failed")
        if fp is None:   # store the fingerprint of the now finished run
            fp_after = _fingerprint(params, files=[notebooks / "rerank.ipynb", *run_files, *pkg])
            _set_fingerprint(out, fp_after)
        summary["runs"][f"{spec.grid}/{spec.run_name}"] = "reused" if before == "complete" else "ran"
        summary["executed" if done else "skipped"].append(str(out))

    # pages of runs no longer in the grid would be stale: remove them
    for folder, keep in ((build / "rerank", run_pages), (build / "data", data_pages)):
        if folder.is_dir():
            for nb in folder.glob("*.ipynb"):
                if nb not in keep:
                    nb.unlink()

    # 4. the results notebook (every complete run under results/, except the lab's)
    if not skip_results:
        out = build / "results.ipynb"
        params = {"grid": grid.name, "results_dir": str(results), "grid_file": str(Path(grid_path).resolve()),
                  "paper_table": str(root / "book" / "data" / "paper_table1.csv"),
                  "include_simulated": bool(grid.raw.get("include_simulated", False)),
                  "main_run": main_spec(grid).run_name if grid.runs else None}
        run_files = [f for d in complete_runs(results) for f in (d / "metrics.json", d / "manifest.json")]
        fp = _fingerprint(params, files=[notebooks / "results.ipynb", Path(grid_path), params["paper_table"],
                                         *run_files, *pkg])
        done = execute_notebook(notebooks / "results.ipynb", out, params, fingerprint=fp, force=force,
                                cwd=notebooks, kernel=kernel, failed_dir=build / "_failed")
        summary["executed" if done else "skipped"].append(str(out))
    return summary


def main_spec(grid: Grid) -> RunSpec:
    """The grid's main run (it sets Table 1): the first run with the most methods."""
    return max(grid.runs, key=lambda s: len(s.methods))


def _set_fingerprint(path: Path, fp: str) -> None:
    import nbformat   # noqa: PLC0415

    nb = nbformat.read(path, as_version=4)
    nb.metadata.setdefault("invarirank", {})["fingerprint"] = fp
    with open(path.with_name(f".{path.name}.tmp"), "w", encoding="utf-8") as fh:
        nbformat.write(nb, fh)
    os.replace(path.with_name(f".{path.name}.tmp"), path)


def _print_estimate(grid: Grid, seconds_per_pass: float | None, results_dir: Path) -> None:
    """Status and distinct passes of every run; minutes at ``seconds_per_pass`` (runs already complete
    cost nothing)."""
    todo_lo = todo_hi = 0
    print(f"{'run':<52} {'status':<9} {'queries':>7} {'passes (distinct)':>18} {'calib.':>7}")
    for spec in grid.runs:
        status = run_status(spec, results_dir)
        try:
            est = estimate(spec)
        except InvariRankError as exc:
            print(f"{spec.run_name:<52} {status:<9} {exc}")
            continue
        if status != "complete":
            todo_lo += est["total_min"]
            todo_hi += est["total_max"]
        print(f"{spec.run_name:<52} {status:<9} {est['queries']:>7} "
              f"{est['passes_min']:>8}-{est['passes_max']:<9} {est['calibration_passes']:>7}")
    text = (f"passes still to compute: {todo_lo}-{todo_hi} (calib.: STELLA_LW calibration, counted with one relevant "
            f"candidate per validation query; each further relevant candidate adds as many again)")
    if seconds_per_pass:
        text += (f"; at {seconds_per_pass:g} s per pass about {todo_lo * seconds_per_pass / 60:.1f}-"
                 f"{todo_hi * seconds_per_pass / 60:.1f} minutes of scoring (plus model loading, first stage and "
                 f"notebook execution)")
    print(text)
    if grid.raw.get("estimate"):
        print()
        print(format_cost_table(grid))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m invarirank.grid",
        description="Run (or reuse) the runs of a grid and execute the book's notebooks.")
    parser.add_argument("grid", help="grid file (YAML), e.g. configs/grid-default.yaml")
    parser.add_argument("--build-dir", help="where executed notebooks go (default: book/generated)")
    parser.add_argument("--results-dir", help="finished runs, results/<grid>/<run>/ (default: results)")
    parser.add_argument("--work-dir", help="runs in progress (default: runs)")
    parser.add_argument("--force", action="store_true", help="execute every notebook even when up to date")
    parser.add_argument("--only", action="append", default=[],
                        help="execute only these pages: a run name, 'data' or 'rerank' (repeatable)")
    parser.add_argument("--skip-results", action="store_true", help="do not execute the results notebook")
    parser.add_argument("--dry-run", action="store_true",
                        help="print each run's status and its scorer passes, run nothing")
    parser.add_argument("--seconds-per-pass", type=float, default=None,
                        help="for --dry-run: seconds per scorer pass, to print minutes (measure it with "
                             "`invarirank rerank --dry-run`)")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel for papermill (default python3)")
    args = parser.parse_args(argv)
    try:
        if args.dry_run:
            root = project_root()
            _print_estimate(load_grid(args.grid), args.seconds_per_pass,
                            Path(args.results_dir) if args.results_dir else root / "results")
            return 0
        t0 = time.perf_counter()
        summary = run(args.grid, build_dir=args.build_dir, results_dir=args.results_dir, work_dir=args.work_dir,
                      force=args.force, only=args.only, skip_results=args.skip_results, kernel=args.kernel)
    except InvariRankError as exc:
        print(f"invarirank: error: {exc}", file=sys.stderr)
        return 1
    ran = sum(v == "ran" for v in summary["runs"].values())
    print(f"grid {summary['grid']}: {len(summary['runs'])} runs ({ran} computed, "
          f"{len(summary['runs']) - ran} reused), {len(summary['executed'])} notebooks executed, "
          f"{len(summary['skipped'])} up to date, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
