"""THE check of evaluation settings, for ``invarirank evaluate``'s flags, :func:`invarirank.evaluate`'s arguments and
a run's evaluation settings (``RunConfig``) alike: :func:`check_settings` (the settings alone) and
:func:`check_against_lists` (the settings against the lists of the observations)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .._limits import MAX_BOOTSTRAP, MAX_PERMUTATIONS
from ..errors import InvariRankError
from ._comparisons import PERMUTATIONS
from ._kemeny import MAX_EXACT_K
from ._references import REFERENCE_REPLICATES

#: the level of every bootstrap interval
CI_LEVEL = 0.95


def check_settings(
    ks: Iterable[int],
    exposure_k: int,
    buckets: int,
    exact_kemeny_max_k: int | None,
    n_bootstrap: int,
    seed: int,
    n_permutations: int = PERMUTATIONS,
    *,
    reference_replicates: int = REFERENCE_REPLICATES,
    names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Validated settings: THE check of evaluation settings, for ``invarirank evaluate``'s flags and
    :func:`evaluate`'s arguments alike (raises :class:`InvariRankError` naming the parameter, or its name in
    ``names``: the command line passes its flags). Types are not coerced: a cut-off of ``5.0``, ``"5"`` or
    ``True`` is an error, as it is on the command line. Bounds on work: at most
    :data:`~invarirank._limits.MAX_BOOTSTRAP` resamples and :data:`~invarirank._limits.MAX_PERMUTATIONS` sign flips
    (more would run for days); PPI needs at least two buckets."""
    names = dict(names or {})

    def bad(param: str, why: str) -> InvariRankError:
        return InvariRankError(f"{names.get(param, param)}: {why}")

    if isinstance(ks, (str, bytes, Mapping)) or not isinstance(ks, Iterable):
        raise bad("ks", f"expected a list of positive integers, got {ks!r}")
    ks = list(ks)
    if any(isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) for k in ks):
        raise bad("ks", f"expected positive integers, got {ks!r}")
    ks = [int(k) for k in ks]
    if not ks or any(k < 1 for k in ks):
        raise bad("ks", f"expected at least one cut-off, all >= 1, got {ks}")
    ks = list(dict.fromkeys(ks))
    for name, value, low in (
        ("exposure_k", exposure_k, 1),
        ("buckets", buckets, 1),
        ("n_bootstrap", n_bootstrap, 0),
        ("n_permutations", n_permutations, 0),
        ("reference_replicates", reference_replicates, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise bad(name, f"expected an integer >= {low}, got {value!r}")
    for name, value, limit in (
        ("n_bootstrap", n_bootstrap, MAX_BOOTSTRAP),
        ("n_permutations", n_permutations, MAX_PERMUTATIONS),
    ):
        if value > limit:
            raise bad(name, f"{value} is above the limit {limit:,}; expected at most {limit:,}")
    if buckets == 1:
        raise InvariRankError(
            f"{names.get('buckets', 'buckets')} 1: PPI compares position buckets and is not defined with one "
            f"bucket; expected >= 2"
        )
    if exact_kemeny_max_k is not None:
        if (
            isinstance(exact_kemeny_max_k, bool)
            or not isinstance(exact_kemeny_max_k, (int, np.integer))
            or not 0 <= exact_kemeny_max_k <= MAX_EXACT_K
        ):
            off = names.get("exact_kemeny_off", "None")
            raise bad(
                "exact_kemeny_max_k",
                f"expected an integer from 0 to {MAX_EXACT_K} (or {off} to switch the "
                f"exact search off), got {exact_kemeny_max_k!r}",
            )
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise bad("seed", f"expected an integer >= 0, got {seed!r}")
    return {
        "ks": ks,
        "exposure_k": int(exposure_k),
        "buckets": int(buckets),
        "exact_kemeny_max_k": None if exact_kemeny_max_k is None else int(exact_kemeny_max_k),
        "bootstrap": int(n_bootstrap),
        "permutations": int(n_permutations),
        "seed": int(seed),
        "ci_level": CI_LEVEL,
        "reference_replicates": int(reference_replicates),
    }


def check_against_lists(
    rows: Sequence[Mapping[str, Any]],
    settings: Mapping[str, Any],
    where: str,
    *,
    given: Mapping[str, bool],
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """Reject settings that cannot be meant for the lists of ``rows`` (K = the length of ``input``; the shortest
    list counts), for the command line and :func:`evaluate` alike: lists longer than GPI's limit, an exposure
    cut-off at or above K (every candidate exposed: zero position bias by construction) and, when ``given``
    (not the default), more PPI buckets than positions. The defaults (exposure 5, 3 buckets) on shorter lists are
    kept as documented (the numbers of committed runs): the returned notes say so (the command line prints them,
    :func:`evaluate` warns). Errors name the parameter (its flag in ``names``) and ``where``."""
    if not rows:
        return []
    lengths = [len(r["input"]) for r in rows]
    return check_list_lengths(min(lengths), max(lengths), settings, where, given=given, names=names)


def check_list_lengths(
    k: int,
    longest: int,
    settings: Mapping[str, Any],
    where: str,
    *,
    given: Mapping[str, bool],
    names: Mapping[str, str] | None = None,
) -> list[str]:
    """:func:`check_against_lists` given the shortest (``k``) and the longest list's K."""
    from ._consistency import MAX_GPI_K

    names = dict(names or {})
    if longest > MAX_GPI_K:
        raise InvariRankError(
            f"{where}: lists of K = {longest} candidates are above the limit K <= {MAX_GPI_K} "
            f"of GPI's local search (its work grows as K^4)"
        )
    exposure = names.get("exposure_k", "exposure_k")
    if given.get("exposure_k") and settings["exposure_k"] >= k:
        how = "equal to" if settings["exposure_k"] == k else "larger than"
        raise InvariRankError(
            f"{exposure} {settings['exposure_k']} is {how} K = {k} (the shortest list in {where}): "
            f"every candidate would count as exposed (zero position bias by construction); "
            f"expected {exposure} < {k}"
        )
    notes = []
    for name, why in (
        ("exposure_k", "every candidate would count as exposed"),
        ("buckets", "PPI needs at least one position per bucket"),
    ):
        if settings[name] <= k:
            continue
        label = names.get(name, name)
        if given.get(name):
            raise InvariRankError(
                f"{label} {settings[name]} is larger than K = {k} (the shortest list in {where}): "
                f"{why}; expected {label} <= {k}"
            )
        notes.append(
            f"the default {label} {settings[name]} is larger than K = {k} (the shortest list in {where}): "
            f"{why}; pass {label} <= {k}"
        )
    return notes
