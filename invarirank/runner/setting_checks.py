"""Checks of the run schema that span several settings (``RunConfig.normalise`` calls them), kept apart from
:mod:`.config` so that the schema's module stays a readable size."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import InvariRankError
from ..evaluation.settings import check_against_lists, check_settings

__all__ = ["check_sources", "check_evaluation", "check_lists_for_evaluation", "check_text"]


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
    rules (:func:`invarirank.evaluation.settings.check_settings`: one check for both doors), before any pass runs,
    so a bad one never leaves a half-run behind."""
    names = {n: f"{where}: setting {n!r}" for n in ("exposure_k", "n_bootstrap", "seed")}
    names["ks"] = f"{where}: setting 'eval_ks'"
    check_settings(config.eval_ks, config.exposure_k, 3, None, config.n_bootstrap, config.seed, 0, names=names)


def check_lists_for_evaluation(config: Any, queries: Sequence[Any]) -> None:
    """The run's evaluation settings against its test queries' lists, by the rules :func:`invarirank.evaluate`
    applies to the observations at the merge (:func:`invarirank.evaluation.settings.check_against_lists`: an
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
