"""The checks of the run schema (:class:`~invarirank.runner.RunConfig`): the coercions and range checks of
``RunConfig.normalise`` (one line naming the setting and what was expected), the names a setting is also known by,
and the checks that span several settings."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._limits import MAX_BOOTSTRAP
from ..errors import InvariRankError
from ..evaluation._settings import check_against_lists, check_settings
from ..llm.factory import SCORER_KINDS, check_scorer_options
from ..methods.registry import METHODS

#: the flags' spellings of settings (``--k``, ``--m``, ``--queries``, in ``--config`` files too; manifests' run_name)
ALIASES = {"k": "K", "m": "M", "queries": "n_queries", "run_name": "name"}
#: grid and run names become folder names: letters, digits, '.', '_' and '-' only, not starting with '.' (so not
#: ``.`` or ``..``, which would leave the results folder, nor a hidden name such as ``.work``)
_SIMPLE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
#: a device: ``auto`` or a torch device type, optionally with an index (checked before torch sees it)
_DEVICE = re.compile(r"auto|(cpu|cuda|mps|xpu|xla|meta|hpu|mtia|npu|hip|privateuseone)(:[0-9]+)?")


def simple_name(text: str) -> bool:
    """Whether ``text`` may name a grid or run folder (letters, digits, '.', '_', '-'; not starting with '.', so
    never ``.`` or ``..``)."""
    return bool(_SIMPLE_NAME.fullmatch(text))


_ALIAS_OF = {canonical: alias for alias, canonical in ALIASES.items()}


def check_sources(config: Any, where: str = "config") -> None:
    """Refuse settings that contradict each other about where the candidates come from: a candidates file
    replaces the raw files, the prepared folder and the first stage, so ``raw_dir``/``data_dir`` or another
    retriever next to ``candidates`` would be ignored (and the retriever recorded in the manifest as if it had
    run). The default retriever and ``none`` are accepted (they name no first stage of their own)."""
    if not config.candidates:
        return
    for name in ("raw_dir", "data_dir"):
        if getattr(config, name):
            raise InvariRankError(
                f"{where}: settings 'candidates' and {name!r} contradict each other (a candidates file replaces "
                f"the raw and prepared data); expected one of them"
            )
    if config.retriever not in ("lightgcn", "none"):
        raise InvariRankError(
            f"{where}: setting 'retriever' = {config.retriever!r} with 'candidates': no first stage runs on a "
            f"candidates file (its lists are the first stage); leave 'retriever' out"
        )
    unused = {f.name: f.default for f in dataclasses.fields(config)}["retrieval_seed"]
    if config.retrieval_seed != unused:
        raise InvariRankError(
            f"{where}: setting 'retrieval_seed' = {config.retrieval_seed!r} with 'candidates': no first stage runs on "
            f"a candidates file, so its seed would be recorded but never used; leave 'retrieval_seed' out"
        )


def check_evaluation(config: Any, where: str = "config") -> None:
    """The run's evaluation settings (``eval_ks``, ``exposure_k``, ``n_bootstrap``) by ``invarirank evaluate``'s own
    rules (:func:`invarirank.evaluation._settings.check_settings`: one check for both doors), before any pass runs,
    so a bad one never leaves a half-run behind."""
    names = {n: f"{where}: setting {n!r}" for n in ("exposure_k", "n_bootstrap", "seed")}
    names["ks"] = f"{where}: setting 'eval_ks'"
    check_settings(config.eval_ks, config.exposure_k, 3, None, config.n_bootstrap, config.seed, 0, names=names)


def check_lists_for_evaluation(config: Any, queries: Sequence[Any]) -> None:
    """The run's evaluation settings against its test queries' lists, by the rules :func:`invarirank.evaluate`
    applies to the observations at the merge (:func:`invarirank.evaluation._settings.check_against_lists`: an
    ``exposure_k`` at or above the shortest K, lists above GPI's limit), before the first pass (the real run) and in
    the dry run alike: a candidates file's lists set K only when it is read, and a setting refused after the
    reranking would leave a half-run behind."""
    lists = [{"input": [c.item_id for c in q.candidates]} for q in queries]
    settings = {"exposure_k": config.exposure_k, "buckets": 3}
    given = {"exposure_k": config.exposure_k != 5, "buckets": False}  # as the merge's evaluate reads them
    names = {"exposure_k": "setting 'exposure_k'"}
    where = f"the test queries of run {config.run_name!r}"
    check_against_lists(lists, settings, where, given=given, names=names)


def check_text(config: Any, where: str = "config") -> None:
    """Every text of the settings (names, paths, labels, scorer options, list items and mapping keys included) is
    valid Unicode: a lone surrogate (a YAML ``"\\ud800"`` escape, or a command-line argument that is not UTF-8,
    which Python decodes to surrogates) cannot be written into a manifest, so it is refused here, naming the
    setting, rather than as a ``UnicodeEncodeError`` when the run's files are written after every pass."""
    from ..candidates import lone_surrogate

    def walk(value: Any, name: str) -> None:
        if isinstance(value, str) and lone_surrogate(value):
            raise InvariRankError(
                f"{where}: setting {name!r} = {ascii(value)} is not valid Unicode text (a lone surrogate, or bytes "
                f"that are not UTF-8)"
            )
        if isinstance(value, (list, tuple)):
            for v in value:
                walk(v, name)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k, name)
                walk(v, name)

    for f in dataclasses.fields(config):
        walk(getattr(config, f.name), f.name)


def normalise_settings(config: Any, where: str = "config") -> None:
    """Coerce the types of a :class:`~invarirank.runner.RunConfig` in place (``\"a,b\"`` lists, sorted methods) and
    check their ranges (:meth:`~invarirank.runner.RunConfig.normalise`); raise :class:`InvariRankError`."""
    for name, lo in (
        ("K", 2),
        ("sample_k", 2),
        ("n_queries", 1),
        ("first_queries", 1),
        ("shard_queries", 1),
        ("query_window", 1),
    ):
        value = getattr(config, name)
        setattr(config, name, None if value is None else as_int(where, name, value, lo))
    if config.first_queries is not None and config.n_queries is not None and config.first_queries > config.n_queries:
        raise InvariRankError(
            f"{where}: setting 'first_queries' = {config.first_queries} is more than "
            f"n_queries = {config.n_queries}; expected at most {config.n_queries}"
        )
    for name, lo in (
        ("M", 1),
        ("seed", 0),
        ("retrieval_seed", 0),
        ("calibration_queries", 1),
        ("calibration_repeats", 1),
        ("exposure_k", 1),
        ("n_bootstrap", 0),
    ):
        setattr(config, name, as_int(where, name, getattr(config, name), lo))
    config.eval_ks = [as_int(where, "eval_ks", v, 1) for v in as_list(where, "eval_ks", config.eval_ks)]
    check_evaluation(config, where)
    methods = [str(m) for m in as_list(where, "methods", config.methods)]
    for m in methods:
        if m not in METHODS:
            raise InvariRankError(f"{where}: unknown method {m!r} in 'methods'; expected some of {', '.join(METHODS)}")
    if not methods:
        raise InvariRankError(f"{where}: setting 'methods' is empty; expected some of {', '.join(METHODS)}")
    if len(set(methods)) != len(methods):
        raise InvariRankError(f"{where}: setting 'methods' repeats a method: {methods}")
    config.methods = [m for m in METHODS if m in methods]
    if config.scorer not in SCORER_KINDS:
        raise InvariRankError(
            f"{where}: setting 'scorer' = {config.scorer!r}, expected one of {', '.join(SCORER_KINDS)}"
        )
    if not isinstance(config.scorer_options, Mapping):
        raise InvariRankError(f"{where}: setting 'scorer_options' must be a mapping of option: value")
    config.scorer_options = dict(sorted(config.scorer_options.items()))
    check_scorer_options(config.scorer, config.scorer_options, f"{where}: setting 'scorer_options'")
    if not isinstance(config.noise_floor, bool):
        raise InvariRankError(f"{where}: setting 'noise_floor' = {config.noise_floor!r}, expected true or false")
    for name in ("retriever", "scorer", "device"):
        if not isinstance(getattr(config, name), str) or not getattr(config, name):
            raise InvariRankError(f"{where}: setting {name!r} must be a non-empty string")
    for name in (
        "grid",
        "name",
        "dataset",
        "label",
        "raw_dir",
        "data_dir",
        "candidates",
        "model",
        "out",
        "cache_dir",
    ):
        value = getattr(config, name)
        if value is not None:
            if value == "" and name in ("dataset", "grid", "name", "model"):
                raise InvariRankError(f"{where}: setting {name!r} must be a non-empty string")
            setattr(config, name, str(value))
    config.check_k(where)
    check_sources(config, where)
    for name in ("grid", "name"):
        value = getattr(config, name)
        if value is not None and not simple_name(value):
            raise InvariRankError(
                f"{where}: {name} {value!r} may hold only letters, digits, '.', '_' and '-', and may not start with '.'"
            )
    for name in ("seed", "retrieval_seed"):  # seeds reach numpy, torch and implicit: 32 bits
        if getattr(config, name) > 2**32 - 1:
            raise InvariRankError(
                f"{where}: setting {name!r} = {getattr(config, name)}, expected an integer from 0 "
                f"to 4294967295 (2^32 - 1)"
            )
    if not _DEVICE.fullmatch(config.device):
        raise InvariRankError(
            f"{where}: setting 'device' = {config.device!r}, expected auto, cpu, cuda, cuda:N, "
            f"mps or another torch device name"
        )
    if config.n_bootstrap > MAX_BOOTSTRAP:
        raise InvariRankError(
            f"{where}: setting 'n_bootstrap' = {config.n_bootstrap} is above the limit "
            f"{MAX_BOOTSTRAP:,}; expected at most {MAX_BOOTSTRAP:,} resamples"
        )


def as_int(where: str, name: str, value: Any, minimum: int) -> int:
    shown = f"{name!r}" + (f" ({_ALIAS_OF[name]!r})" if name in _ALIAS_OF else "")
    if isinstance(value, bool):
        raise InvariRankError(f"{where}: setting {shown} = {value!r}, expected an integer")
    try:
        iv = int(value)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
    except (TypeError, ValueError):
        raise InvariRankError(f"{where}: setting {shown} = {value!r}, expected an integer") from None
    if iv < minimum:
        raise InvariRankError(f"{where}: setting {shown} = {iv}, expected at least {minimum}")
    return iv


def as_list(where: str, name: str, value: Any) -> list:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InvariRankError(f"{where}: setting {name!r} = {value!r}, expected a list")
