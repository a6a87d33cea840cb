"""Label prior against position bias: which label, and which presented position, a labelling reranker puts first.

A choice-style reranker writes a label before every candidate (``[A]``, ``[B]``, ...) and ranks by the labels'
log-probabilities. With the fixed scheme, label ``i`` of the alphabet always sits at presented position ``i``, so a
preference for a letter and a preference for a place cannot be told apart: the share of lists whose first place
carries label ``A`` *is* the share whose first place is presented position 0. The audit's ``label-swap`` design
permutes the labels independently of the positions (each row records them in ``labels``: the label written
before each presented position); then

* **first place by label** — the share of lists in which the candidate carrying label ``L`` is ranked first;
* **first place by position** — the share of lists in which the candidate at presented position ``p`` is ranked
  first

separate: a reranker that follows the letters shows a peaked first column and a flat second one, a reranker with
a positional habit the reverse, a content reader both flat (at ``1/K``). Beside them, **exposure by position**:
the share of lists in which the candidate at position ``p`` is in the top ``exposure_k`` (the runs' exposure
curve, here per label as well).

Conventions: positions are 0-based presented positions; labels are those of the choice prompt's alphabet
(``A..Z`` then ``a..z``), so in a row without ``labels`` position ``p`` carries the alphabet's ``p``-th letter.
Shares are over lists (rows), each list counted once; a uniform reranker gives ``1/K`` everywhere (``exposure_k/K``
for exposure). The *peak* of a distribution is its largest share; *total variation from uniform*
(``0.5 * sum |share - 1/K|``, 0 = flat, ``1 - 1/K`` = always the same one) summarises how far it is from flat.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InvariRankError
from ..evaluation import read_observations
from ..methods.registry import BASELINE_METHOD
from ..store import Run
from ._labels import model_label

#: the labels of the choice prompt, in order (label ``i`` at presented position ``i`` in the fixed scheme)
CHOICE_ALPHABET: tuple[str, ...] = tuple(string.ascii_uppercase + string.ascii_lowercase)


@dataclass(frozen=True)
class LabelPrior:
    """One method's counts over ``lists`` rows of length ``k``: ``first_by_label[L]``, ``first_by_position[p]``,
    ``exposure_by_position[p]`` and ``exposure_by_label[L]`` are shares of the lists (module docstring);
    ``swapped`` says whether the rows' labels were permuted (a ``label-swap`` audit) — without it the by-label and
    by-position columns are the same numbers by construction."""

    method: str
    k: int
    lists: int
    exposure_k: int
    swapped: bool
    labels: tuple[str, ...]
    first_by_label: dict[str, float]
    first_by_position: list[float]
    exposure_by_position: list[float]
    exposure_by_label: dict[str, float]

    @staticmethod
    def _tv(shares: Iterable[float], k: int) -> float:
        return 0.5 * float(sum(abs(s - 1.0 / k) for s in shares))

    @property
    def label_tv(self) -> float:
        """Total variation of first place by label from uniform."""
        return self._tv(self.first_by_label.values(), self.k)

    @property
    def position_tv(self) -> float:
        """Total variation of first place by position from uniform."""
        return self._tv(self.first_by_position, self.k)

    @property
    def top_label(self) -> tuple[str, float]:
        """The label most often ranked first and its share."""
        best = max(self.labels, key=lambda lab: (self.first_by_label[lab], -self.labels.index(lab)))
        return best, self.first_by_label[best]

    @property
    def top_position(self) -> tuple[int, float]:
        """The presented position most often ranked first (0-based) and its share."""
        best = int(np.argmax(self.first_by_position))
        return best, self.first_by_position[best]


def _row_labels(row: Mapping[str, Any], k: int, where: str) -> tuple[tuple[str, ...], bool]:
    given = row.get("labels")
    if given is None:
        if k > len(CHOICE_ALPHABET):
            raise InvariRankError(f"{where}: K = {k} has no fixed labels (the alphabet has {len(CHOICE_ALPHABET)})")
        return CHOICE_ALPHABET[:k], False
    if not isinstance(given, Sequence) or isinstance(given, str) or len(given) != k or len(set(given)) != k:
        raise InvariRankError(f"{where}: field 'labels' = {given!r}; expected {k} distinct labels, one per position")
    labels = tuple(str(x) for x in given)
    return labels, labels != CHOICE_ALPHABET[:k]


def label_prior(rows: Iterable[Mapping[str, Any]], *, exposure_k: int = 5) -> dict[str, LabelPrior]:
    """Per method (in first-seen order), the label prior next to position bias of ``rows`` (observation rows:
    ``method``, ``input``, ``output``, optional ``labels``; :func:`invarirank.read_observations` gives them). All
    rows of a method must have the same K. Errors name the row and field."""
    if isinstance(exposure_k, bool) or not isinstance(exposure_k, int) or exposure_k < 1:
        raise InvariRankError(f"label_prior: exposure_k = {exposure_k!r}; expected an integer >= 1")
    acc: dict[str, dict[str, Any]] = {}
    for n, row in enumerate(rows):
        where = f"row {n} (query {row.get('query_id')!r}, method {row.get('method')!r})"
        presented, output = list(row.get("input") or []), list(row.get("output") or [])
        k = len(presented)
        if k == 0 or sorted(output) != sorted(presented) or len(set(presented)) != k:
            raise InvariRankError(f"{where}: 'output' must be a permutation of a non-empty 'input'")
        labels, swapped = _row_labels(row, k, where)
        a = acc.setdefault(
            str(row["method"]),
            {
                "k": k,
                "n": 0,
                "swapped": False,
                "first_pos": np.zeros(k),
                "exp_pos": np.zeros(k),
                "first": {},
                "exp": {},
            },
        )
        if a["k"] != k:
            raise InvariRankError(f"{where}: K = {k}, but the method's earlier rows have K = {a['k']}")
        a["n"] += 1
        a["swapped"] = a["swapped"] or swapped
        where_is = {item: p for p, item in enumerate(presented)}
        first = where_is[output[0]]
        a["first_pos"][first] += 1
        a["first"][labels[first]] = a["first"].get(labels[first], 0) + 1
        top = [where_is[item] for item in output[: min(exposure_k, k)]]
        a["exp_pos"][top] += 1
        for p in top:
            a["exp"][labels[p]] = a["exp"].get(labels[p], 0) + 1
    out = {}
    for method, a in acc.items():
        k, n = a["k"], a["n"]
        extra = sorted(x for x in {*a["first"], *a["exp"]} if x not in CHOICE_ALPHABET[:k])
        labels = (*CHOICE_ALPHABET[:k], *extra)
        out[method] = LabelPrior(
            method=method,
            k=k,
            lists=n,
            exposure_k=min(exposure_k, k),
            swapped=a["swapped"],
            labels=labels,
            first_by_label={lab: a["first"].get(lab, 0) / n for lab in labels},
            first_by_position=[float(x) / n for x in a["first_pos"]],
            exposure_by_position=[float(x) / n for x in a["exp_pos"]],
            exposure_by_label={lab: a["exp"].get(lab, 0) / n for lab in labels},
        )
    return out


def label_prior_table(prior: LabelPrior) -> pd.DataFrame:
    """One method's prior as a table: one row per index ``i`` = 0..K-1 — the alphabet's ``i``-th label with the
    share of lists it is ranked first (and in the top ``exposure_k``), and presented position ``i`` with the share
    of lists its candidate is ranked first (and in the top ``exposure_k``). In the fixed scheme the label and
    position columns coincide (the same candidates)."""
    x = prior.exposure_k
    rows = []
    for i in range(prior.k):
        lab = prior.labels[i] if i < len(prior.labels) else ""
        rows.append(
            {
                "label": lab,
                "first place by label": prior.first_by_label.get(lab, 0.0),
                f"top-{x} by label": prior.exposure_by_label.get(lab, 0.0),
                "position": i,
                "first place by position": prior.first_by_position[i],
                f"top-{x} exposure by position": prior.exposure_by_position[i],
            }
        )
    return pd.DataFrame(rows).set_index("position")


def _spread(values: Sequence[float], n: int = 8) -> str:
    shown = " ".join(f"{v:.2f}" for v in values[:n])
    return shown + (" …" if len(values) > n else "")


def label_prior_summary(runs: Sequence[Run], method: str = BASELINE_METHOD) -> pd.DataFrame:
    """One row per run of the choice scorer holding ``method``: its model, K, lists, the label most often ranked
    first and its share, the share for label A (= presented position 0 in the fixed scheme), the uniform share
    ``1/K``, and the first-place and top-5 shares by presented position (0, 1, 2, ...; the first eight)."""
    rows = []
    for run in runs:
        if run.scorer != "choice" or method not in run.methods:
            continue
        p = label_prior(read_observations(run.observations), exposure_k=5).get(method)
        if p is None:
            continue
        best, share = p.top_label
        rows.append(
            {
                "run": f"{run.grid}/{run.name}",
                "model": model_label(run.model),
                "K": p.k,
                "lists": p.lists,
                "label most often first": f"{best} ({share:.2f})",
                "label A first": p.first_by_label["A"],
                "uniform 1/K": 1.0 / p.k,
                "first place by position": _spread(p.first_by_position),
                f"top-{p.exposure_k} exposure by position": _spread(p.exposure_by_position),
            }
        )
    return pd.DataFrame(rows)


def _paired_fixed(swap_rows: Sequence[Mapping[str, Any]], fixed_rows: Sequence[Mapping[str, Any]], method: str):
    """The fixed-label rows of the swap audit's queries and method, in the swap audit's presented orders."""
    wanted = {(r["query_id"], tuple(r["input"])) for r in swap_rows if r["method"] == method}
    return [r for r in fixed_rows if r["method"] == method and (r["query_id"], tuple(r["input"])) in wanted]


def label_swap_comparison(
    swap_rows: Sequence[Mapping[str, Any]],
    fixed_rows: Sequence[Mapping[str, Any]],
    method: str = BASELINE_METHOD,
    digits: int = 2,
) -> pd.DataFrame:
    """The same presented orders with the labels fixed (label ``i`` at position ``i``) and permuted (a
    ``label-swap`` audit): for each, the label and the position most often ranked first with their shares and the
    total variation of each distribution from uniform (shares and distances rounded to ``digits``). Only the fixed
    rows whose query and presented order the swap audit also shows are used (a paired comparison)."""
    fixed = label_prior(_paired_fixed(swap_rows, fixed_rows, method)).get(method)
    swap = label_prior([r for r in swap_rows if r["method"] == method]).get(method)
    if swap is None or not swap.swapped:
        raise InvariRankError(f"label_swap_comparison: no label-swap rows of method {method!r}")
    out = []
    for what, p in (("labels fixed (A, B, C, … by position)", fixed), ("labels permuted (label-swap)", swap)):
        if p is None:
            continue
        (lab, lab_share), (pos, pos_share) = p.top_label, p.top_position
        out.append(
            {
                "labels": what,
                "lists": p.lists,
                "label most often first": lab,
                "its share": round(lab_share, digits),
                "position most often first": pos,
                "its share ": round(pos_share, digits),
                "TV from uniform, by label": round(p.label_tv, digits),
                "TV from uniform, by position": round(p.position_tv, digits),
            }
        )
    return pd.DataFrame(out).set_index("labels")


def label_swap_sentence(
    swap_rows: Sequence[Mapping[str, Any]], fixed_rows: Sequence[Mapping[str, Any]], method: str = BASELINE_METHOD
) -> str:
    """In words: what the label-swap audit separates. The verdict's rule: the scorer ranks *by the label* when the
    total variation from uniform of first place by label is at least twice that by position, *by the position* in
    the reverse case, else by both."""
    swap = label_prior([r for r in swap_rows if r["method"] == method]).get(method)
    if swap is None or not swap.swapped:
        raise InvariRankError(f"label_swap_sentence: no label-swap rows of method {method!r}")
    fixed = label_prior(_paired_fixed(swap_rows, fixed_rows, method)).get(method)
    users = len({r["query_id"] for r in swap_rows if r["method"] == method})
    (lab, lab_share), (pos, pos_share) = swap.top_label, swap.top_position
    lt, pt = swap.label_tv, swap.position_tv
    if lt >= 2 * pt:
        verdict = "by the label letter, not by the place the candidate is written in"
    elif pt >= 2 * lt:
        verdict = "by the place the candidate is written in, not by its label letter"
    else:
        verdict = "by both its label letter and its place (neither separation is twice the other)"
    text = (
        f"With the labels permuted independently of the positions ({swap.lists} lists of {users} users, "
        f"K = {swap.k}; uniform {1 / swap.k:.2f}), label {lab} is ranked first in {lab_share:.2f} of the lists, "
        f"while the position most often first, {pos}, holds first place in {pos_share:.2f}; "
        f"total variation from uniform is {lt:.2f} by label and {pt:.2f} by position."
    )
    if fixed is not None:  # the fixed labels' favourite, and where its share goes once letter and place part
        (flab, fshare), (fpos, _) = fixed.top_label, fixed.top_position
        text += (
            f" On the same users and presented orders with the fixed labels, label {flab} (always at position "
            f"{fpos}) is ranked first in {fshare:.2f} of the lists; with the labels permuted, label {flab} "
            f"in {swap.first_by_label[flab]:.2f} and position {fpos} in {swap.first_by_position[fpos]:.2f}."
        )
    return text + f" The choice scorer on this model ranks {verdict}."


def label_swap_pairs(
    results_dir: str | os.PathLike, runs: Sequence[Run], method: str = BASELINE_METHOD
) -> list[tuple[str, list[dict], list[dict]]]:
    """The committed ``label-swap`` audits under ``results_dir/<grid>/<folder>/`` (an audit's ``manifest.json``
    with ``kind: "audit"`` and design ``label-swap``) of a project choice scorer, each with the rows of the
    committed choice run of the same model and K that shows ``method`` the same users in the same presented
    orders with the fixed labels: ``(title, swap rows, fixed rows)``, in folder order. An audit without such a
    run is left out."""
    out = []
    root = Path(results_dir)
    for manifest in sorted(root.glob("*/*/manifest.json")) if root.is_dir() else []:
        head = json.loads(manifest.read_text(encoding="utf-8"))
        if head.get("kind") != "audit" or (head.get("design") or {}).get("name") != "label-swap":
            continue
        scorer = ((head.get("rerankers") or [{}])[0].get("scorer")) or {}
        if scorer.get("scorer") != "choice":
            continue
        swap = [r for r in read_observations(manifest.parent / "observations.jsonl") if r["method"] == method]
        k = len(swap[0]["input"]) if swap else 0
        for run in runs:
            if run.scorer != "choice" or run.model != scorer.get("model") or run.K != k or method not in run.methods:
                continue
            fixed = _paired_fixed(swap, read_observations(run.observations), method)
            if len(fixed) == len(swap):
                title = f"{model_label(run.model)}, K = {k}: {manifest.parent.parent.name}/{manifest.parent.name}"
                out.append((f"{title} against {run.grid}/{run.name}", swap, fixed))
                break
    return out
