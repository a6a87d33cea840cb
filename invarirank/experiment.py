"""One experiment configuration → one run folder (resumable, atomic, deterministic).

``run_experiment(config)`` reranks every selected test query under M presented orders with every
chosen method and writes, into ``config.out`` (RUN_DIR):

* ``observations.jsonl`` — the evaluation core's schema, one line per query × method × presented order
  (ordered by query, then method, then order), with ``model``, ``dataset``, ``k``, ``scores`` (the first
  pass's scores, aligned with ``input``) and ``passes`` (scorer calls the method made for that order,
  before de-duplication). No wall-clock times, so equal runs give byte-identical files.
* ``metrics.json`` — :func:`invarirank.evaluation.evaluate` of those rows.
* ``calibration.json`` — STELLA_LW's count and transition matrices per K (when STELLA runs).
* ``manifest.json`` — the full config, data and first-stage provenance, the selected queries, the
  model's identity, seeds, pass counts (per method; scorer calls; shared-cache hits; calibration),
  package versions and git commit; everything that varies between equal runs (timings, token counts,
  the scorer's own cache statistics, whether a run was resumed) sits under the one key ``"run"``.

Resumability: each finished query is appended (flush + fsync) to ``RUN_DIR/.work/checkpoint.jsonl``,
whose first line holds a fingerprint of the config, the data and the scorer identity. A rerun of the
same command re-reads it (a torn last line from a kill is dropped), reranks only the missing queries
and then writes the final files, each atomically, manifest last; ``.work`` is removed at the very end.
Killed at any moment and resumed, a run gives the same ``observations.jsonl``, ``metrics.json`` and
``calibration.json`` bytes, and the same manifest outside ``"run"``, as an uninterrupted one.

Query selection: ``queries = N`` samples N test queries with the seed from those kept at the smallest K
of ``k_sweep`` (or at ``k``), so a sweep over K compares the same users. With ``candidates`` (a
candidates file), its ``split = "test"`` lines are the queries and its ``split = "validation"`` lines
calibrate STELLA; given ``k``, longer candidate lists are cut to their first ``k`` and queries without
a relevant item among them are dropped (as the first stage would); without ``k`` the file is used as is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import __version__
from .candidates import queries_sha256
from .errors import InvariRankError
from .io import atomic_write_json, dumps_json, sha256_file
from .orders import presented_orders, rng_for
from .types import Query, Scorer

__all__ = ["ExperimentConfig", "QuerySet", "RunResult", "load_queries", "make_scorer_for", "run_experiment",
           "plan_experiment", "format_plan", "estimate_passes_per_order", "DEFAULT_METHODS"]

DEFAULT_METHODS = ("zero_shot", "bootstrapping", "sgs", "stella")
SCORERS = ("span", "choice", "simulated")
DEFAULT_K = 25
_CHECKPOINT_VERSION = 1


# ---------------------------------------------------------------------------------------------
# configuration
# ---------------------------------------------------------------------------------------------
@dataclass
class ExperimentConfig:
    """Every setting of a run (YAML keys and ``invarirank rerank`` flags have the same names).

    ``dataset`` None → ``ml-100k`` with the first stage, the file's name with ``candidates`` (it is the
    ``dataset`` field of every observation). ``k`` is None → 25 with the first stage, the file's own lists with
    ``candidates``. ``queries`` None →
    all kept test queries. ``scorer_options`` are passed to the scorer (e.g. ``bias_shape`` for the
    simulated one, ``device``/``dtype`` for real ones). ``eval_ks``, ``exposure_k``, ``n_bootstrap``
    go to the evaluation. ``cache_dir`` None → ``$INVARIRANK_CACHE`` (STELLA calibration cache).
    """

    dataset: str | None = None
    raw_dir: str | None = None
    data_dir: str | None = None
    retriever: str = "lightgcn"
    retrieval_seed: int = 42
    k: int | None = None
    k_sweep: list[int] | None = None
    candidates: str | None = None
    scorer: str = "span"
    model: str | None = None
    scorer_options: dict[str, Any] = field(default_factory=dict)
    m: int = 20
    queries: int | None = None
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    seed: int = 42
    calibration_queries: int = 150
    calibration_repeats: int = 5
    noise_floor: bool = False
    eval_ks: list[int] = field(default_factory=lambda: [1, 5, 10])
    exposure_k: int = 5
    n_bootstrap: int = 1000
    out: str | None = None
    cache_dir: str | None = None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "config") -> "ExperimentConfig":
        """Build from a mapping (YAML/JSON); unknown keys are errors naming ``where``."""
        if not isinstance(data, Mapping):
            raise InvariRankError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
        names = set(cls.field_names())
        for key in data:
            if key not in names:
                raise InvariRankError(f"{where}: unknown setting {key!r}; expected one of {', '.join(sorted(names))}")
        cfg = cls(**{k: v for k, v in data.items()})
        cfg.normalise(where)
        return cfg

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> "ExperimentConfig":
        import yaml
        p = Path(path)
        if not p.is_file():
            raise InvariRankError(f"{p}: no such config file")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise InvariRankError(f"{p}{line}: malformed YAML ({getattr(exc, 'problem', exc)})") from None
        return cls.from_mapping(data, str(p))

    def replace(self, **changes: Any) -> "ExperimentConfig":
        cfg = dataclasses.replace(self, **changes)
        cfg.normalise("config")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    # -- validation ------------------------------------------------------------------------------
    def normalise(self, where: str = "config") -> None:
        """Coerce types (e.g. ``"a,b"`` lists) and check ranges; raise :class:`InvariRankError`."""
        def as_int(name: str, value: Any, minimum: int | None = None, optional: bool = False) -> int | None:
            if value is None and optional:
                return None
            if isinstance(value, bool):
                raise InvariRankError(f"{where}: setting {name!r} = {value!r}, expected an integer")
            try:
                iv = int(value)
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
            except (TypeError, ValueError):
                raise InvariRankError(f"{where}: setting {name!r} = {value!r}, expected an integer") from None
            if minimum is not None and iv < minimum:
                raise InvariRankError(f"{where}: setting {name!r} = {iv}, expected at least {minimum}")
            return iv

        def as_list(name: str, value: Any) -> list:
            if isinstance(value, str):
                return [v.strip() for v in value.split(",") if v.strip()]
            if isinstance(value, (list, tuple)):
                return list(value)
            raise InvariRankError(f"{where}: setting {name!r} = {value!r}, expected a list")

        self.k = as_int("k", self.k, 1, optional=True)
        if self.k_sweep is not None:
            self.k_sweep = [as_int("k_sweep", v, 1) for v in as_list("k_sweep", self.k_sweep)]  # type: ignore[misc]
            if not self.k_sweep:
                self.k_sweep = None
        self.m = as_int("m", self.m, 1)  # type: ignore[assignment]
        self.queries = as_int("queries", self.queries, 1, optional=True)
        self.seed = as_int("seed", self.seed, 0)  # type: ignore[assignment]
        self.retrieval_seed = as_int("retrieval_seed", self.retrieval_seed, 0)  # type: ignore[assignment]
        self.calibration_queries = as_int("calibration_queries", self.calibration_queries, 1)  # type: ignore[assignment]
        self.calibration_repeats = as_int("calibration_repeats", self.calibration_repeats, 1)  # type: ignore[assignment]
        self.exposure_k = as_int("exposure_k", self.exposure_k, 1)  # type: ignore[assignment]
        self.n_bootstrap = as_int("n_bootstrap", self.n_bootstrap, 0)  # type: ignore[assignment]
        self.eval_ks = [as_int("eval_ks", v, 1) for v in as_list("eval_ks", self.eval_ks)]  # type: ignore[misc]
        methods = [str(m) for m in as_list("methods", self.methods)]
        for m in methods:
            if m not in DEFAULT_METHODS:
                raise InvariRankError(f"{where}: unknown method {m!r} in 'methods'; expected some of "
                                      f"{', '.join(DEFAULT_METHODS)}")
        if not methods:
            raise InvariRankError(f"{where}: setting 'methods' is empty; expected some of {', '.join(DEFAULT_METHODS)}")
        if len(set(methods)) != len(methods):
            raise InvariRankError(f"{where}: setting 'methods' repeats a method: {methods}")
        self.methods = methods
        if self.scorer not in SCORERS:
            raise InvariRankError(f"{where}: setting 'scorer' = {self.scorer!r}, expected one of {', '.join(SCORERS)}")
        if not isinstance(self.scorer_options, Mapping):
            raise InvariRankError(f"{where}: setting 'scorer_options' must be a mapping of option: value")
        self.scorer_options = dict(self.scorer_options)
        if not isinstance(self.noise_floor, bool):
            raise InvariRankError(f"{where}: setting 'noise_floor' = {self.noise_floor!r}, expected true or false")
        for name in ("dataset", "retriever"):
            value = getattr(self, name)
            if (value is not None or name == "retriever") and (not isinstance(value, str) or not value):
                raise InvariRankError(f"{where}: setting {name!r} must be a non-empty string")
        for name in ("raw_dir", "data_dir", "candidates", "out", "cache_dir", "model"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, str(value))

    @property
    def effective_dataset(self) -> str:
        """The data set's name: ``dataset``, else ``ml-100k`` (first stage) or the candidates file's name."""
        if self.dataset:
            return self.dataset
        return Path(self.candidates).name if self.candidates else "ml-100k"

    @property
    def effective_k(self) -> int | None:
        """K of the run: ``k``, else 25 with the first stage, else None (the candidates file's own)."""
        if self.k is not None:
            return self.k
        return None if self.candidates else DEFAULT_K

    def fingerprint_fields(self) -> dict[str, Any]:
        """The settings that determine the results (everything but ``out`` and ``cache_dir``)."""
        d = self.to_dict()
        d.pop("out", None)
        d.pop("cache_dir", None)
        return d


# ---------------------------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------------------------
@dataclass
class QuerySet:
    """The run's test queries (in run order), the validation queries (STELLA calibration) and
    provenance for the manifest."""

    test: list[Query]
    validation: list[Query]
    info: dict[str, Any]


def _truncate(q: Query, k: int) -> Query:
    scores = q.candidate_scores[:k] if q.candidate_scores else ()
    return dataclasses.replace(q, candidates=q.candidates[:k], candidate_scores=scores)


def _kept_at(q: Query, k: int) -> bool:
    truth = set(q.ground_truth)
    return any(c.item_id in truth for c in q.candidates[:k])


def _sample(pool_ids: list[str], n: int | None, seed: int) -> list[str]:
    if n is None or n >= len(pool_ids):
        return list(pool_ids)
    idx = sorted(int(i) for i in rng_for(seed, "queries").choice(len(pool_ids), size=n, replace=False))
    return [pool_ids[i] for i in idx]


def _retrieve(config: ExperimentConfig, k: int, info: dict[str, Any], progress: bool = True) -> Any:
    try:
        from .retrieval import retrieve
    except ImportError as exc:
        raise InvariRankError(f"the first stage (invarirank.retrieval.retrieve) is not available: {exc}; "
                              f"use --candidates FILE") from None
    data_dir = info.get("data_dir")
    if data_dir is None:
        if config.data_dir:
            data_dir = config.data_dir
        else:
            try:
                from .data import prepare
            except ImportError as exc:
                raise InvariRankError(f"the data layer (invarirank.data.prepare) is not available: {exc}; "
                                      f"use --data-dir DIR or --candidates FILE") from None
            data_dir = str(prepare(config.effective_dataset, raw_dir=config.raw_dir))
        info["data_dir"] = str(data_dir)
    return retrieve(data_dir, retriever=config.retriever, k=k, seed=config.retrieval_seed, progress=progress)


def _stable_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """First-stage statistics without wall-clock fields (``*seconds*``), which vary between equal runs."""
    return {k: (_stable_stats(v) if isinstance(v, Mapping) else v) for k, v in stats.items() if "seconds" not in k}


def load_queries(config: ExperimentConfig, progress: bool = True) -> QuerySet:
    """Select the run's queries (see the module docstring); prepares data and runs or loads the first
    stage on demand (through their caches) unless ``config.candidates`` is given."""
    k = config.effective_k
    k_min = min(config.k_sweep) if config.k_sweep else k
    info: dict[str, Any] = {}
    if config.candidates:
        from .candidates import read_candidates
        path = Path(config.candidates)
        every = read_candidates(path)
        info.update({"source": "candidates", "dataset": config.effective_dataset, "candidates_file": str(path),
                     "candidates_sha256": sha256_file(path)})
        test = [q for q in every if q.split == "test"]
        validation = [q for q in every if q.split == "validation"]
        others = sorted({q.split for q in every} - {"test", "validation"})
        if others:
            raise InvariRankError(f"{path}: split {others[0]!r} in the candidates file; expected 'test' or 'validation'")
        if not test:
            raise InvariRankError(f"{path}: no test queries (lines with split 'test')")
        pool = [q for q in test if k_min is None or _kept_at(q, k_min)]
        if k is not None:
            at_k = {q.query_id: _truncate(q, k) for q in test if _kept_at(q, k)}
        else:
            at_k = {q.query_id: q for q in test}
        info["test_queries_in_file"] = len(test)
    else:
        assert k is not None
        res = _retrieve(config, k, info, progress)
        info.update({"source": "first_stage", "dataset": config.effective_dataset, "retriever": config.retriever,
                     "retrieval_seed": config.retrieval_seed, "retrieval_dir": str(getattr(res, "out_dir", "")),
                     "retrieval_stats": _stable_stats(getattr(res, "stats", {}) or {})})
        test, validation = list(res.test), list(res.validation)
        at_k = {q.query_id: q for q in test}
        if k_min is not None and k_min != k:
            res_min = _retrieve(config, k_min, info, progress)
            pool = list(res_min.test)
            info["retrieval_stats_at_smallest_k"] = _stable_stats(getattr(res_min, "stats", {}) or {})
        else:
            pool = test
    pool_ids = [q.query_id for q in pool]
    chosen = _sample(pool_ids, config.queries, config.seed)
    missing = [qid for qid in chosen if qid not in at_k]
    queries = [at_k[qid] for qid in chosen if qid in at_k]
    if not queries:
        raise InvariRankError("no test queries to rerank"
                              + (f" (none keeps a relevant item among its first {k} candidates)" if k else ""))
    info.update({"k": k, "sampled_from_k": k_min, "pool_queries": len(pool_ids), "sampled": len(chosen),
                 "dropped_at_k": missing, "validation_queries": len(validation)})
    return QuerySet(queries, validation, info)


# ---------------------------------------------------------------------------------------------
# scorer
# ---------------------------------------------------------------------------------------------
def _parse_option_value(value: Any) -> Any:
    if isinstance(value, str):
        import yaml
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            return value
    return value


def make_scorer_for(config: ExperimentConfig) -> Scorer:
    """The run's scorer: :func:`invarirank.llm.factory.make_scorer` when it is available; the simulated
    scorer is also built directly (it needs no model and no torch)."""
    options = {k: _parse_option_value(v) for k, v in config.scorer_options.items()}
    make = None
    try:
        from .llm.factory import make_scorer as make
    except ImportError:
        make = None
    if make is None:
        if config.scorer != "simulated":
            raise InvariRankError(f"scorer {config.scorer!r} is not available in this installation "
                                  f"(invarirank.llm.factory is missing); use --scorer simulated")
        from .llm.simulated import SimulatedScorer
        try:
            return SimulatedScorer(seed=config.seed, **({"model": config.model} if config.model else {}), **options)
        except TypeError as exc:
            raise InvariRankError(f"simulated scorer: bad option ({exc}); options: bias_shape, bias_strength, "
                                  f"noise_sd, relevance, utility_sd") from None
    kwargs: dict[str, Any] = {"seed": config.seed, **options}
    if config.noise_floor and config.scorer != "simulated" and "pass_cache" not in options:
        kwargs["pass_cache"] = False        # every copy must really be recomputed to measure the noise floor
    if config.cache_dir:
        kwargs["cache_dir"] = config.cache_dir
    try:
        return make(config.scorer, config.model, **kwargs)
    except TypeError as exc:
        raise InvariRankError(f"scorer {config.scorer!r}: bad option ({exc})") from None


def scorer_key_identity(scorer: Any) -> dict[str, Any]:
    """What determines a scorer's scores: ``key_identity()`` where the scorer has one (real scorers: weights,
    tokenizer, dtype, device type, template, options — not cache locations), else ``identity()``."""
    fn = getattr(scorer, "key_identity", None)
    return dict(fn()) if callable(fn) else dict(scorer.identity())


def _model_name(config: ExperimentConfig, identity: Mapping[str, Any]) -> str:
    name = identity.get("model") or identity.get("name") or config.model or config.scorer
    return str(name)


# ---------------------------------------------------------------------------------------------
# checkpoint
# ---------------------------------------------------------------------------------------------
class _Checkpoint:
    """Append-only JSONL of finished queries under ``RUN_DIR/.work`` (first line: fingerprint)."""

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.path = path
        self.fingerprint = fingerprint

    def load(self) -> dict[str, dict]:
        """The finished queries' records; a torn last line (no newline: a kill mid-write) is cut off."""
        done: dict[str, dict] = {}
        if not self.path.exists():
            return done
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]          # everything up to the last newline
        for n, raw in enumerate(complete.split(b"\n")[:-1], 1):
            try:
                rec = json.loads(raw.decode("utf-8"))
                if not isinstance(rec, dict):
                    raise ValueError
            except (UnicodeDecodeError, ValueError):
                raise InvariRankError(f"{self.path}:{n}: corrupt checkpoint line; remove {self.path.parent} "
                                      f"to start the run afresh") from None
            if n == 1:
                if rec.get("fingerprint") != self.fingerprint:
                    raise InvariRankError(
                        f"{self.path}: an unfinished run with a different configuration, data or model is in "
                        f"this folder; rerun it with its own settings, choose another --out, or remove "
                        f"{self.path.parent}")
            else:
                done[str(rec["query_id"])] = rec
        if len(complete) < len(data):
            if complete:
                with open(self.path, "r+b") as fh:         # keep appends line-aligned
                    fh.truncate(len(complete))
            else:
                self.path.unlink()
        return done

    def _append(self, obj: Mapping[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def ensure_header(self) -> None:
        if not self.path.exists():
            self._append({"checkpoint_version": _CHECKPOINT_VERSION, "fingerprint": self.fingerprint})

    def append(self, record: Mapping[str, Any]) -> None:
        self._append(record)


# ---------------------------------------------------------------------------------------------
# provenance
# ---------------------------------------------------------------------------------------------
_PACKAGES = ("numpy", "pandas", "pyarrow", "scipy", "tqdm", "pyyaml", "safetensors", "torch", "transformers",
             "accelerate", "gguf", "implicit", "seaborn", "matplotlib")


def package_versions() -> dict[str, str | None]:
    """Versions of the packages that matter (from installed metadata; nothing is imported)."""
    from importlib import metadata
    out: dict[str, str | None] = {"python": platform.python_version(), "invarirank": __version__}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_info() -> dict[str, Any]:
    """The git commit of the package's checkout (None outside git) and whether its tree is dirty."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
        dirty = None
        if commit:
            status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                    capture_output=True, text=True, timeout=20)
            dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit, dirty = None, None
    return {"commit": commit, "dirty": dirty}


def _sha256_json(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# pass estimates and the dry run
# ---------------------------------------------------------------------------------------------
def estimate_passes_per_order(methods: Sequence[str], k: int, stella_updates: int) -> dict[str, Any]:
    """Scorer calls per presented order: requested per method, and distinct passes with the shared pass
    cache (first passes shared by all methods; bootstrapping's 2 shuffles are STELLA's updates 1–2)."""
    from .methods import passes_per_order
    requested = {m: passes_per_order(m, k, stella_updates) for m in methods}
    unique = 1
    if "bootstrapping" in methods:
        unique += 2
    if "sgs" in methods:
        unique += k - 1
    if "stella" in methods:
        unique += (stella_updates - 1) - (min(stella_updates - 1, 2) if "bootstrapping" in methods else 0)
    return {"requested": requested, "requested_total": sum(requested.values()), "unique": unique}


@dataclass
class Plan:
    """What a run will do (``--dry-run``)."""

    config: ExperimentConfig
    n_queries: int
    ks: list[int]
    per_method: dict[str, dict[str, int]]          # method -> {"min": passes, "max": passes}
    unique_min: int
    unique_max: int
    calibration_passes: int
    calibration_cached: dict[int, bool]
    measured_passes: int
    measured_seconds: float
    measured_cached: int
    info: dict[str, Any]

    @property
    def seconds_per_pass(self) -> float:
        return self.measured_seconds / self.measured_passes if self.measured_passes else float("nan")


def plan_experiment(config: ExperimentConfig, *, measure_passes: int = 4, queries: QuerySet | None = None,
                    scorer: Scorer | None = None) -> Plan:
    """Count the passes a run needs and time a few real passes to estimate its duration (runs nothing
    else; the data and first stage are prepared on demand, through their caches)."""
    from .methods.stella import (calibration_key, calibration_pass_count, select_calibration_queries)
    qs = queries or load_queries(config)
    scorer = scorer or make_scorer_for(config)
    m = config.m
    ks = sorted({q.k for q in qs.test})
    per_method: dict[str, dict[str, int]] = {name: {"min": 0, "max": 0} for name in config.methods}
    unique_min = unique_max = 0
    for q in qs.test:
        lo = estimate_passes_per_order(config.methods, q.k, 4)
        hi = estimate_passes_per_order(config.methods, q.k, 10)
        for name in config.methods:
            per_method[name]["min"] += m * lo["requested"][name]
            per_method[name]["max"] += m * hi["requested"][name]
        unique_min += m * lo["unique"]
        unique_max += m * hi["unique"]
    cal_passes = 0
    cal_cached: dict[int, bool] = {}
    if "stella" in config.methods:
        from .assets import cache_dir as default_cache_dir
        root = Path(config.cache_dir) if config.cache_dir else default_cache_dir()
        identity = scorer_key_identity(scorer)
        for k in ks:
            probe = select_calibration_queries(qs.validation, k, config.calibration_queries, config.seed)
            key = calibration_key(identity, k, probe, config.calibration_queries, config.calibration_repeats,
                                  config.seed)
            cached = (root / "stella" / f"{key}.json").is_file()
            cal_cached[k] = cached
            if not cached:
                cal_passes += calibration_pass_count(probe, k, config.calibration_repeats)
    measured = 0
    cached_hits = 0
    t0 = time.perf_counter()
    first = qs.test[0]
    for o in presented_orders(first.query_id, first.k, max(measure_passes, 1), config.seed)[:measure_passes]:
        res = scorer.score(first, [first.candidates[i] for i in o.positions])
        measured += 1
        cached_hits += int(bool(res.cached))
    seconds = time.perf_counter() - t0
    return Plan(config, len(qs.test), ks, per_method, unique_min, unique_max, cal_passes, cal_cached, measured,
                seconds, cached_hits, qs.info)


def _fmt_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "?"
    if s < 90:
        return f"{s:.1f} s"
    if s < 5400:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def format_plan(plan: Plan) -> str:
    """The dry run's printout: passes per method, distinct passes, calibration, time estimate."""
    c = plan.config
    lines = [f"dry run: {plan.n_queries} queries x M={c.m} orders, K={','.join(map(str, plan.ks))}, "
             f"scorer {c.scorer}{' ' + c.model if c.model else ''}, methods {','.join(c.methods)}"
             + (" (noise floor: M copies of one order)" if c.noise_floor else ""),
             "",
             f"{'method':<15}{'passes per order':>18}{'passes (requested)':>22}"]
    k_txt = "/".join(map(str, plan.ks))
    per_order = {"zero_shot": "1", "bootstrapping": "3", "sgs": f"K={k_txt}", "stella": "4-10"}
    for name, rng in plan.per_method.items():
        span = f"{rng['min']}" if rng["min"] == rng["max"] else f"{rng['min']}-{rng['max']}"
        lines.append(f"{name:<15}{per_order[name]:>18}{span:>22}")
    lines.append("")
    lines.append(f"distinct scorer passes with the shared pass cache: {plan.unique_min}-{plan.unique_max} "
                 f"(about M*(K+8) = {c.m * (sum(plan.ks) / len(plan.ks) + 8) * plan.n_queries:.0f})")
    if "stella" in c.methods:
        cached = [k for k, v in plan.calibration_cached.items() if v]
        lines.append(f"STELLA calibration: {plan.calibration_passes} passes (relevant candidates x K x "
                     f"{c.calibration_repeats} repeats on up to {c.calibration_queries} validation queries)"
                     + (f"; cached for K={','.join(map(str, cached))}" if cached else ""))
    rate = plan.seconds_per_pass
    note = f", {plan.measured_cached} of them from the scorer's cache" if plan.measured_cached else ""
    lines.append(f"measured: {plan.measured_passes} passes in {plan.measured_seconds:.3f} s "
                 f"({rate:.4f} s per pass{note})")
    lo = (plan.unique_min + plan.calibration_passes) * rate
    hi = (plan.unique_max + plan.calibration_passes) * rate
    lines.append(f"estimated time: {_fmt_seconds(lo)} - {_fmt_seconds(hi)} "
                 f"(scorer passes only; the scorer's persistent cache may make it shorter)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """The run folder and its contents (``metrics`` and ``manifest`` as written)."""

    out_dir: Path
    metrics: dict[str, Any]
    manifest: dict[str, Any]
    rows: list[dict[str, Any]]


def _evaluate(rows: list[dict], config: ExperimentConfig) -> dict[str, Any]:
    from .evaluation import evaluate
    return evaluate(rows, ks=tuple(config.eval_ks), exposure_k=config.exposure_k, n_bootstrap=config.n_bootstrap,
                    seed=config.seed)


def _rerank_query(scorer: Any, query: Query, config: ExperimentConfig, model: str, dataset: str,
                  calibrations: Mapping[int, Any], on_order: Callable[[int], None] | None = None) -> dict[str, Any]:
    """All methods on all presented orders of one query → the checkpoint record. ``on_order(t)`` is
    called after order ``t`` (progress display).

    With a scorer that batches (``batch_size`` > 1: the GPU default), all (order, method) pairs of the
    query run in lockstep and each round's requests go to the scorer as one batch (:func:`drive_many`);
    otherwise order by order, method by method. Both request the same passes and, with a deterministic
    scorer, give the same rows (the tests check it); the noise floor always goes order by order."""
    from .methods import batch_size_of, drive, drive_many, method_steps
    scorer.clear()
    before = scorer.counters()
    orders = presented_orders(query.query_id, query.k, config.m, config.seed, noise_floor=config.noise_floor)
    relevant = list(query.ground_truth)
    by_method: dict[str, list[dict]] = {name: [] for name in config.methods}
    passes = {name: 0 for name in config.methods}

    def steps(o: Any, name: str) -> Any:
        opts = {"matrix": calibrations[query.k].matrix} if name == "stella" else {}
        return method_steps(name, query, [query.candidates[i] for i in o.positions], seed=config.seed, t=o.key,
                            **opts)

    def record(o: Any, name: str, res: Any) -> None:
        passes[name] += res.passes
        by_method[name].append({
            "schema_version": 1, "query_id": query.query_id, "method": name, "permutation": o.t,
            "input": [query.candidates[i].item_id for i in o.positions], "output": list(res.output),
            "relevant": relevant, "model": model, "dataset": dataset, "k": query.k,
            "scores": [float(s) for s in res.scores], "passes": res.passes})

    if batch_size_of(scorer) > 1 and not config.noise_floor:
        pairs = [(o, name) for o in orders for name in config.methods]
        for (o, name), res in zip(pairs, drive_many([steps(o, name) for o, name in pairs], scorer, query)):
            record(o, name, res)
        if on_order is not None and orders:
            on_order(orders[-1].t)              # every order finished in the same round
    else:
        for o in orders:
            if config.noise_floor:
                scorer.clear()                  # copies share nothing: each one is scored afresh
            for name in config.methods:
                record(o, name, drive(steps(o, name), scorer, query))
            if on_order is not None:
                on_order(o.t)
    after = scorer.counters()
    scorer.clear()
    return {"query_id": query.query_id,
            "rows": [row for name in config.methods for row in by_method[name]],
            "passes": passes,
            "requests": after["requests"] - before["requests"], "hits": after["hits"] - before["hits"],
            "misses": after["misses"] - before["misses"], "tokens": after["tokens"] - before["tokens"]}


def _refuse_foreign_run(out: Path, fingerprint: str) -> None:
    """A finished run with another configuration, data or model in ``out`` is never overwritten."""
    path = out / "manifest.json"
    if not path.is_file():
        return
    try:
        from .io import read_json
        theirs = read_json(path).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        theirs = None
    if theirs != fingerprint:
        raise InvariRankError(f"{out}: holds a finished run with a different configuration, data or model; "
                              f"choose another --out or remove that folder")


def run_experiment(config: ExperimentConfig, *, progress: bool = True,
                   on_query_done: Callable[[int], None] | None = None,
                   queries: QuerySet | None = None, scorer: Scorer | None = None) -> RunResult:
    """Run (or resume) ``config`` into ``config.out``; see the module docstring.

    ``on_query_done(n)`` is called after the n-th query of this session is safely checkpointed (tests
    use it to simulate a kill). ``queries``/``scorer`` may be given to skip loading them.
    """
    from .methods import PassCache, batch_size_of
    from .methods.stella import load_or_calibrate
    if not config.out:
        raise InvariRankError("no run folder: give --out RUN_DIR (or 'out' in the config)")
    out = Path(config.out)
    if out.exists() and not out.is_dir():
        raise InvariRankError(f"{out}: --out must be a folder")
    timings: dict[str, float] = {}
    t_start = time.perf_counter()

    t = time.perf_counter()
    qs = queries or load_queries(config, progress)
    timings["data_seconds"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    base_scorer = scorer or make_scorer_for(config)
    timings["scorer_load_seconds"] = round(time.perf_counter() - t, 3)
    identity = base_scorer.identity()
    key_identity = scorer_key_identity(base_scorer)
    model = _model_name(config, identity)
    dataset = config.effective_dataset
    test_sha256 = queries_sha256(qs.test)
    fingerprint = _sha256_json({"config": config.fingerprint_fields(), "identity": key_identity,
                                "queries": test_sha256,
                                "validation": queries_sha256(qs.validation) if "stella" in config.methods else None,
                                "invarirank": __version__, "checkpoint": _CHECKPOINT_VERSION})
    work = out / ".work"
    _refuse_foreign_run(out, fingerprint)
    ckpt = _Checkpoint(work / "checkpoint.jsonl", fingerprint)
    done = ckpt.load()
    resumed = len(done)

    # STELLA calibration, one matrix per K (cached on disk, keyed by scorer identity, K, data, settings)
    t = time.perf_counter()
    calibrations: dict[int, Any] = {}
    if "stella" in config.methods:
        for k in sorted({q.k for q in qs.test}):
            cal = load_or_calibrate(base_scorer, qs.validation, k, n_queries=config.calibration_queries,
                                    repeats=config.calibration_repeats, seed=config.seed,
                                    cache_dir=config.cache_dir, progress=progress)
            if not cal.query_ids:
                raise InvariRankError(
                    f"STELLA calibration for K={k}: none of the {len(qs.validation)} validation queries has a "
                    f"relevant item among its first {k} candidates; drop 'stella' from --methods or provide "
                    f"validation queries")
            calibrations[k] = cal
    timings["calibration_seconds"] = round(time.perf_counter() - t, 3)

    # reranking, one checkpointed query at a time
    t = time.perf_counter()
    cache = PassCache(base_scorer)
    todo = [q for q in qs.test if q.query_id not in done]
    ckpt.ensure_header()
    bar = None
    on_order = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(qs.test), initial=len(qs.test) - len(todo), desc="rerank", unit="query",
                   file=sys.stderr, dynamic_ncols=True)

        last = [0.0]

        def on_order(t: int) -> None:            # finer feedback inside a (long) real-model query
            now = time.monotonic()
            if now - last[0] >= 1.0:
                last[0] = now
                bar.set_postfix(order=f"{t + 1}/{config.m}", passes=cache.misses, shared_hits=cache.hits)
    try:
        for n, q in enumerate(todo, 1):
            tq = time.perf_counter()
            record = _rerank_query(cache, q, config, model, dataset, calibrations, on_order)
            record["seconds"] = round(time.perf_counter() - tq, 4)
            ckpt.append(record)
            done[q.query_id] = record
            if bar is not None:
                bar.update(1)
            if on_query_done is not None:
                on_query_done(n)
    finally:
        if bar is not None:
            bar.close()
    timings["rerank_seconds_this_session"] = round(time.perf_counter() - t, 3)

    # final files: observations, metrics, calibration, manifest (each atomic), then drop .work
    records = [done[q.query_id] for q in qs.test]
    rows = [row for rec in records for row in rec["rows"]]
    from .evaluation import write_observations
    write_observations(out / "observations.jsonl", rows)
    t = time.perf_counter()
    metrics = _evaluate(rows, config)
    timings["evaluation_seconds"] = round(time.perf_counter() - t, 3)
    atomic_write_json(out / "metrics.json", metrics)
    if calibrations:
        atomic_write_json(out / "calibration.json",
                          {"method": "stella", "calibrations": {str(k): c.to_json() for k, c in calibrations.items()}})
    else:
        (out / "calibration.json").unlink(missing_ok=True)

    per_method = {}
    for name in config.methods:
        counts = [row["passes"] for row in rows if row["method"] == name]
        per_method[name] = {"passes": int(sum(counts)), "orders": len(counts),
                            "per_order_mean": round(sum(counts) / len(counts), 6) if counts else None,
                            "per_order_min": min(counts) if counts else None,
                            "per_order_max": max(counts) if counts else None}
    requests = sum(r["requests"] for r in records)
    hits = sum(r["hits"] for r in records)
    misses = sum(r["misses"] for r in records)
    timings["rerank_seconds_all_sessions"] = round(sum(float(r.get("seconds", 0.0)) for r in records), 3)
    timings["total_seconds_this_session"] = round(time.perf_counter() - t_start, 3)
    manifest = {
        "manifest_version": 1,
        "invarirank_version": __version__,
        "fingerprint": fingerprint,
        "config": config.to_dict(),
        "data": qs.info,
        "queries": {"count": len(qs.test), "ids": [q.query_id for q in qs.test],
                    "k": sorted({q.k for q in qs.test}), "validation_available": len(qs.validation),
                    "fingerprint": test_sha256},
        "model": identity,
        "methods": list(config.methods),
        "seeds": {"seed": config.seed, "retrieval_seed": config.retrieval_seed,
                  "orders": "order t of a query: numpy default_rng(blake2b64('{seed}|{query_id}|order|{t}')), "
                            "redrawn while equal to the retrieval order",
                  "method_shuffles": "blake2b64('{seed}|{query_id}|{t}|shuffle|{j}') and "
                                     "'{seed}|{query_id}|{t}|sgs|{step}'",
                  "noise_floor": config.noise_floor},
        "passes": {"per_method": per_method,
                   "requested": requests, "scorer_calls": misses, "shared_cache_hits": hits,
                   "shared_cache_hit_rate": round(hits / requests, 6) if requests else None,
                   "calibration": {str(k): {"passes": c.passes, "queries": len(c.query_ids), "key": c.key}
                                   for k, c in calibrations.items()}},
        "files": {"observations": "observations.jsonl", "metrics": "metrics.json",
                  "calibration": "calibration.json" if calibrations else None,
                  "observations_sha256": sha256_file(out / "observations.jsonl")},
        "packages": package_versions(),
        "git": git_info(),
        "run": {"timings": timings,
                "tokens_computed": sum(int(r.get("tokens", 0)) for r in records),
                "scorer_stats": dict(getattr(base_scorer, "stats", {}) or {}),
                "calibration_from_cache": {str(k): c.from_cache for k, c in calibrations.items()},
                "queries_resumed_from_checkpoint": resumed,
                # > 1: every query's orders and methods ran in lockstep, scorer calls in batches
                "scorer_batch_size": batch_size_of(base_scorer),
                "platform": platform.platform()},
    }
    atomic_write_json(out / "manifest.json", manifest)
    shutil.rmtree(work, ignore_errors=True)
    return RunResult(out, metrics, manifest, rows)


def manifest_without_run(manifest: Mapping[str, Any]) -> str:
    """The manifest's canonical JSON without the volatile ``run`` and ``git`` sections (for comparisons)."""
    return dumps_json({k: v for k, v in manifest.items() if k not in ("run", "git")})
