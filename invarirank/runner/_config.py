"""THE run schema: :class:`RunConfig`, every setting of one reranking run, and its identity.

One dataclass is filled by every way of describing a run — a grid entry (``configs/*.yaml``), the
``invarirank rerank`` flags, a ``--config`` YAML file and the parameters of ``notebooks/rerank.ipynb`` — so a
setting has one name, one default and one check, spelled as its field (``K``, ``M``, ``n_queries``) everywhere but
at the command line's edge (flags, ``--config`` files) and in stored manifests' ``run_name`` (:data:`ALIASES`). And
``k_sweep: [6, 10]`` = ``sample_k: 6`` (queries sampled among those kept at the sweep's smallest K) everywhere.

Conventions: K is the number of candidates per query (the list length), M the number of presented orders per
query; methods always run, and rows are written, in the method registry's (the paper's) order.

**Identity** (what a finished run is reused for): :meth:`RunConfig.identity` holds only the settings that change
a run's results (``IDENTITY`` metadata below; not names, folders, devices or labels), and of those only the ones
that differ from their declared default. So a setting added later with a default that reproduces the old
behaviour never invalidates a committed run: old manifests simply lack it and read as the default. The
calibration sizes count only when the run has a calibrated method (STELLA_LW), ``sample_k`` only when it differs
from K, and no ``model`` means the scorer's default model. :meth:`RunConfig.from_manifest` reads every manifest
written so far (its ``grid_run`` section, else its ``config`` section, old key names included).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import existing_file, read_utf8
from .._yaml_reader import load_yaml
from ..errors import InvariRankError
from ..llm.factory import DEFAULT_MODEL
from ..methods.registry import METHODS, calibrated_method
from ._setting_checks import ALIASES, as_int, check_text, normalise_settings

#: K of a first-stage run when none is given (a candidates file keeps its own lists)
DEFAULT_K = 25
_IDENTITY = {"identity": True}


def slug(text: str) -> str:
    """A file-name friendly, lower-case name: ``meta-llama/Llama-3.2-3B-Instruct`` → ``llama-3.2-3b-instruct``."""
    last = str(text).rstrip("/").split("/")[-1]
    return re.sub(r"[^a-z0-9.]+", "-", last.lower()).strip("-.") or "x"


#: the settings that name a user's file or folder (see :meth:`RunConfig.with_absolute_paths`)
PATH_SETTINGS = ("raw_dir", "data_dir", "candidates")


def _expanded(value: str) -> Path:
    """``value`` with ``~`` and environment variables expanded."""
    return Path(os.path.expandvars(os.path.expanduser(value)))


@dataclass
class RunConfig:
    """Every setting of one run. Fields with ``identity`` metadata determine its results (see the module docstring).

    Where the run lives: ``grid``/``name`` (published as ``results/<grid>/<name>/``; ``name`` None →
    :attr:`run_name`), ``out`` (the folder ``invarirank rerank`` writes), ``cache_dir`` (None → ``$INVARIRANK_CACHE``).
    Data: ``dataset`` (None → ``ml-100k`` with the first stage, the candidates file's name with ``candidates``;
    ``synthetic`` = seeded made-up candidate sets for the teaching lab), ``label`` (its name in run names and
    tables), ``raw_dir`` (the raw files), ``data_dir`` (an already prepared folder), ``retriever``/``retrieval_seed``
    (the first stage), ``candidates`` (a candidates file instead of it); a relative path of these three is taken
    against the project root in a grid run, the working directory in a run with ``out``
    (:meth:`with_absolute_paths`).
    Reranking: ``K`` (None → 25 with the first stage, the file's own lists with ``candidates``), ``sample_k``
    (sample among queries kept at this K; None → ``K``), ``n_queries`` (None → all kept; more than are kept: all
    of them, with a note), ``first_queries`` (keep only the first N of the sampled queries, in run order, so that a
    smaller run reranks a prefix of a larger one's users; None → all sampled), ``M``, ``methods``,
    ``seed``, STELLA_LW's ``calibration_queries``/``calibration_repeats`` (the protocol: 150 and 5), ``noise_floor``
    (M copies of one order). Scorer: ``scorer`` (a kind of :data:`invarirank.llm.factory.SCORER_KINDS`),
    ``model`` (None → the scorer's default), ``scorer_options`` (for ``invarirank.llm.make_scorer``), ``device``
    (``auto`` or e.g. ``cuda``; never part of the identity). Evaluation: ``eval_ks``, ``exposure_k``,
    ``n_bootstrap``.
    """

    grid: str | None = None
    name: str | None = None
    dataset: str | None = field(default=None, metadata=_IDENTITY)
    label: str | None = None
    raw_dir: str | None = None
    data_dir: str | None = None
    retriever: str = field(default="lightgcn", metadata=_IDENTITY)
    retrieval_seed: int = field(default=42, metadata=_IDENTITY)
    candidates: str | None = None
    K: int | None = field(default=None, metadata=_IDENTITY)
    sample_k: int | None = field(default=None, metadata=_IDENTITY)
    n_queries: int | None = field(default=None, metadata=_IDENTITY)
    first_queries: int | None = field(default=None, metadata=_IDENTITY)
    M: int = field(default=20, metadata=_IDENTITY)
    methods: list[str] = field(default_factory=lambda: list(METHODS), metadata=_IDENTITY)
    seed: int = field(default=42, metadata=_IDENTITY)
    calibration_queries: int = field(default=150, metadata=_IDENTITY)
    calibration_repeats: int = field(default=5, metadata=_IDENTITY)
    noise_floor: bool = field(default=False, metadata=_IDENTITY)
    scorer: str = field(default="span", metadata=_IDENTITY)
    model: str | None = field(default=None, metadata=_IDENTITY)
    scorer_options: dict[str, Any] = field(default_factory=dict, metadata=_IDENTITY)
    device: str = "auto"
    eval_ks: list[int] = field(default_factory=lambda: [1, 5, 10], metadata=_IDENTITY)
    exposure_k: int = field(default=5, metadata=_IDENTITY)
    n_bootstrap: int = field(default=1000, metadata=_IDENTITY)
    out: str | None = None
    cache_dir: str | None = None
    shard_queries: int | None = field(default=None, metadata={"execution": True})
    query_window: int | None = field(default=None, metadata={"execution": True})

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def field_names(cls) -> list[str]:
        """The settings' names, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def execution_fields(cls) -> frozenset[str]:
        """Settings that only say how a run is computed (written to the volatile ``run.json``, not the manifest)."""
        return frozenset(f.name for f in dataclasses.fields(cls) if f.metadata.get("execution"))

    @classmethod
    def canonical(
        cls, data: Mapping[str, Any], where: str = "config", *, strict: bool = True, aliases: bool = False
    ) -> dict[str, Any]:
        """``data`` with ``k_sweep`` as ``sample_k`` and, with ``aliases`` (the flags' edge, stored manifests),
        :data:`ALIASES` renamed; with ``strict``, an unknown key is an error naming ``where``, else dropped."""
        if not isinstance(data, Mapping):
            raise InvariRankError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
        names = set(cls.field_names())
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key == "k_sweep":
                if value is not None:
                    sweep = [v.strip() for v in value.split(",") if v.strip()] if isinstance(value, str) else value
                    if not isinstance(sweep, (list, tuple)):
                        raise InvariRankError(f"{where}: setting 'k_sweep' = {value!r}, expected a list")
                    if sweep:
                        out["sample_k"] = min(as_int(where, "k_sweep", v, 1) for v in sweep)
                continue
            name = ALIASES.get(key, key) if aliases else key
            if name not in names:
                if strict:
                    known = ", ".join(sorted(names | {"k_sweep"} | (set(ALIASES) if aliases else set())))
                    raise InvariRankError(f"{where}: unknown setting {key!r}; expected one of {known}")
                continue
            if value is not None and out.get(name) is not None and out[name] != value:
                raise InvariRankError(f"{where}: setting {name!r} given twice (as {key!r} too)")
            if value is not None or name not in out:
                out[name] = value
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], where: str = "config", *, grid: str | None = None) -> RunConfig:
        """Build and check a config from a mapping (a grid entry, notebook parameters, a ``--config`` file): the one
        validation path of every way of describing a run; ``grid`` fills ``grid`` when the mapping does not.
        Unknown keys and bad values raise :class:`InvariRankError`."""
        kw = cls.canonical(data, where)
        if grid is not None and kw.get("grid") is None:
            kw["grid"] = grid
        defaults = cls()
        for name, value in list(kw.items()):
            if value is None and getattr(defaults, name) is not None:
                del kw[name]  # None = "the default" for settings that have one
        config = cls(**kw)
        config.normalise(where)
        return config

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> RunConfig:
        """Read a ``--config`` YAML file (a mapping of settings)."""
        p = Path(path)
        existing_file(p, "config file")
        data = load_yaml(read_utf8(p, "config file"), str(p), "malformed YAML")
        if data is None:
            data = {}
        return cls.from_mapping(cls.canonical(data, str(p), aliases=True), str(p))  # the flags' spellings too

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> RunConfig:
        """The config a finished run was made with: its ``grid_run`` section, else its ``config`` section (both
        as written by every version so far; keys this version does not know are ignored)."""
        stored = manifest.get("grid_run") or manifest.get("config") or {}
        return cls.from_mapping(cls.canonical(stored, "manifest", strict=False, aliases=True), "manifest")

    @classmethod
    def identity_of_manifest(cls, manifest: Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`identity` of the run a manifest describes ({} when it cannot be read)."""
        try:
            return cls.from_manifest(manifest).identity()
        except (InvariRankError, TypeError, ValueError):
            return {}

    def replace(self, **changes: Any) -> RunConfig:
        """A checked copy with ``changes`` (settings spelled as the fields are)."""
        config = dataclasses.replace(self, **self.canonical(changes, "config"))
        config.normalise("config")
        return config

    def to_dict(self) -> dict[str, Any]:
        """All settings as JSON (the manifest's ``config`` section)."""
        return dataclasses.asdict(self)

    def to_json(self) -> dict[str, Any]:
        """All settings but the execution ones, plus the run's folder name (the published manifest's
        ``grid_run`` section)."""
        skip = self.execution_fields()
        return {**{k: v for k, v in self.to_dict().items() if k not in skip}, "run_name": self.run_name}

    # -- identity --------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """The settings that determine the run's results and differ from their default (see the module
        docstring); two runs with equal identities are the same run."""
        defaults = type(self)()
        out = {}
        for f in dataclasses.fields(self):
            if not f.metadata.get("identity"):
                continue
            if f.name.startswith("calibration_") and calibrated_method(self.methods) is None:
                continue
            if f.name == "sample_k" and self.sample_k == self.effective_k:
                continue  # sampling at the run's own K is the default
            value, default = getattr(self, f.name), getattr(defaults, f.name)
            if f.name == "model":  # no model = the scorer's default model
                value, default = self.model_name, defaults.model_name
            if value != default:
                out[f.name] = value
        return out

    # -- derived ---------------------------------------------------------------------------------
    @property
    def effective_dataset(self) -> str:
        """The data set's name: ``dataset``, else ``ml-100k`` (first stage) or the candidates file's name."""
        if self.dataset:
            return self.dataset
        return Path(self.candidates).name if self.candidates else "ml-100k"

    @property
    def effective_k(self) -> int | None:
        """K of the run: ``K``, else 25 with the first stage, else None (the candidates file's own)."""
        if self.K is not None:
            return self.K
        return None if self.candidates else DEFAULT_K

    @property
    def planned_queries(self) -> int | None:
        """The test queries the run asks for: ``first_queries`` when set (never above ``n_queries``), else
        ``n_queries``; None: every kept query."""
        return self.first_queries if self.first_queries is not None else self.n_queries

    @property
    def pool_k(self) -> int | None:
        """The K whose kept queries the sample is drawn from (``sample_k``, else K)."""
        return self.sample_k if self.sample_k is not None else self.effective_k

    @property
    def data_label(self) -> str:
        """The data set's name in run names and tables (``label``, else the data set's name)."""
        return self.label or self.effective_dataset

    @property
    def model_name(self) -> str:
        """The model's name: ``model``, else the scorer's default (``simulated`` for the simulated scorer)."""
        return self.model or ("simulated" if self.scorer == "simulated" else DEFAULT_MODEL)

    @property
    def run_name(self) -> str:
        """Folder name inside ``results/<grid>/``: ``name``, else ``<data>-<retriever>-<model>-<scorer>-k<K>``."""
        if self.name:
            return self.name
        return (
            f"{slug(self.data_label)}-{slug(self.retriever)}-{slug(self.model_name)}-{self.scorer}-k{self.effective_k}"
        )

    def _expanded_paths(self) -> dict[str, Path]:
        """The path settings (:data:`PATH_SETTINGS`) that are set, with ``~`` and environment variables expanded;
        a value naming an unset ``$VAR`` is left out (the grid's check names it)."""
        return {
            name: _expanded(value)
            for name in PATH_SETTINGS
            if (value := getattr(self, name)) and "$" not in os.path.expandvars(value)
        }

    def unset_path_variable(self) -> tuple[str, str, str] | None:
        """The first path setting (:data:`PATH_SETTINGS`) whose value uses an environment variable that is not
        set, as ``(setting, value, variable)``; None when there is none."""
        for name in PATH_SETTINGS:
            value = getattr(self, name)
            left = re.search(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", os.path.expandvars(value)) if value else None
            if left:
                return name, str(value), left.group(1)
        return None

    def check_path_variables(self, where: str | None = None) -> None:
        """Raise :class:`InvariRankError` when a path setting uses an unset environment variable
        (:meth:`unset_path_variable`): one line naming ``where`` (a file, a flag, a grid's run) when given, the
        setting, its value and the variable."""
        if unset := self.unset_path_variable():
            name, value, variable = unset
            raise InvariRankError(
                f"{where + ': ' if where else ''}setting {name!r} = {value!r} uses the environment "
                f"variable {variable}, which is not set"
            )

    def relative_paths(self) -> list[str]:
        """The path settings (:data:`PATH_SETTINGS`) given as relative paths (after expanding ``~`` and
        environment variables): the ones :meth:`with_absolute_paths` changes."""
        return [name for name, p in self._expanded_paths().items() if not p.is_absolute()]

    def with_absolute_paths(self, root: Path) -> RunConfig:
        """A copy whose path settings (:data:`PATH_SETTINGS`) are what the run reads: ``~`` and environment
        variables expanded, a relative path taken against ``root`` (normalised). The one path rule: a grid takes
        ``root`` = the project root, a check of a run's inputs the working directory. A value that names an unset
        ``$VAR`` is left as given (the grid's check names it)."""
        changes = {
            name: str(p if p.is_absolute() else Path(os.path.normpath(root / p)))
            for name, p in self._expanded_paths().items()
        }
        return self.replace(**changes) if changes else self

    # -- checks ----------------------------------------------------------------------------------
    def normalise(self, where: str = "config") -> None:
        """Coerce types (``"a,b"`` lists, sorted methods) and check ranges; raise :class:`InvariRankError`."""
        check_text(self, where)
        normalise_settings(self, where)

    def check_k(self, where: str = "config", list_k: int | None = None, source: str = "") -> None:
        """Reject settings that cannot be meant for the run's K (the list length: ``effective_k``, else
        ``list_k``, the shortest candidate list of the candidates file ``source``), because they would give wrong
        metrics without a word: K = 1 (one order only, equal to the retrieval order), an exposure cut-off above K
        (every item is always exposed: zero position bias), a sweep whose smallest K is above K (another query
        pool). Raises :class:`InvariRankError` naming the setting."""
        k = self.effective_k if self.effective_k is not None else list_k
        if k is None:
            return
        of = f" (the shortest list in {source})" if self.effective_k is None and source else ""
        if k < 2:
            raise InvariRankError(
                f"{where}: K = {k}{of}: a list of one candidate has one order only, equal to the "
                f"retrieval order; expected K >= 2"
            )
        if self.exposure_k > k:
            raise InvariRankError(
                f"{where}: setting 'exposure_k' = {self.exposure_k} is larger than K = {k}{of}: "
                f"every candidate would count as exposed (zero position bias); expected "
                f"exposure_k <= K (e.g. --exposure-k {max(1, k // 2)})"
            )
        if self.sample_k is not None and self.sample_k > k:
            raise InvariRankError(
                f"{where}: the sweep's smallest K (k_sweep / sample_k = {self.sample_k}) is larger "
                f"than K = {k}{of}; queries are sampled at the smallest K of a sweep that holds K"
            )


def check_lists(config: RunConfig, lengths: Mapping[str, int], source: str) -> None:
    """Check ``config`` against the candidate lists of the candidates file ``source`` (``lengths``: query id →
    list length, test queries), before any scoring: ``K`` larger than a list would silently run a smaller K."""
    if not lengths:
        return
    shortest = min(lengths, key=lambda q: lengths[q])
    if config.K is not None and lengths[shortest] < config.K:
        raise InvariRankError(
            f"{source}: query {shortest!r} has {lengths[shortest]} candidates, fewer than K = "
            f"{config.K} (--k); expected lists of at least K candidates (or a smaller --k)"
        )
    config.check_k("config", lengths[shortest], source)
