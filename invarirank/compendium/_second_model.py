"""What a second, small model of Table 1 can and cannot say about the paper's 3–7 B results: a paragraph computed
from the §5 rows (each model's categories, :func:`invarirank.compendium._section5.section5_rows`), the runs'
``metrics.json`` (orderings, the comparisons with a random order) and the paper's own Table 1 (its models' orderings
and, for a model of the same family as one of the paper's, that model's values). Nothing here is typed but words.

Conventions: a model's *family* is the first part of its id (``qwen2.5`` of ``qwen2.5-coder-0.5b`` and of
``qwen2.5-7b-instruct``); an ordering lists methods best first (:func:`._method_orderings.ordering`); a method is
*above a random order* on HR@5 when its paired sign-flip p against the random-order reference is below 0.05 (no
correction) with a positive difference, as in :func:`invarirank.compendium._prose.reference_sentence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..evaluation._comparisons import ALPHA
from ..methods.registry import BASELINE_METHOD
from ..store import Run
from ._labels import HIGHER_IS_BETTER, PAPER_LOC_ORDER, decimal, method_label, metric_label, model_label, paper_dataset
from ._method_orderings import ordering
from ._section5 import BETTER, CATEGORIES, NOT_TESTABLE
from ._section5_parts import count_words

#: the consistency measures whose method ordering the paper reports for every model (PPI, GPI, LOC)
CONSISTENCY = ("ppi", "gpi", "loc")


def _family(model: str) -> str:
    return str(model).rstrip("/").split("/")[-1].lower().split("-")[0]


def _paper_rows(paper: pd.DataFrame, run: Run) -> pd.DataFrame:
    """The paper's Table 1 rows on the data set closest to the run's."""
    dataset = paper_dataset(run.dataset)
    return paper[paper.dataset == dataset] if dataset else paper.iloc[0:0]


def _paper_ordering(rows: pd.DataFrame, model: str, metric: str) -> list[str]:
    """One paper model's methods best first on ``metric`` (its Table 1 values)."""
    own = rows[rows.model == model]
    values = {m: float(v) for m, v in zip(own.method, own[metric])}
    return sorted(values, key=lambda m: values[m], reverse=HIGHER_IS_BETTER.get(metric, True))


def _words(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _above_random(run: Run) -> list[str]:
    """The run's methods whose HR@5 is resolved above the random-order reference (p < 0.05, no correction)."""
    comparisons = (((run.metrics.get("references") or {}).get("random") or {}).get("comparisons") or {}).get("hr@5")
    return [
        m
        for m, rec in (comparisons or {}).items()
        if m in run.methods and rec.get("p") is not None and rec["p"] < ALPHA and rec["mean_diff"] > 0
    ]


def _own(row: Mapping[str, Any], model: str) -> Mapping[str, Any]:
    return next(m for m in row["models"] if m["model"] == model)


def _agreement(rows: Sequence[Mapping[str, Any]], first: str, second: str) -> tuple[list[str], list[str], list[str]]:
    """The claims both models can test: those in the same category on both, those that differ (with each model's
    category); then the claims only the first can test."""
    same: list[str] = []
    differ: list[str] = []
    only_first: list[str] = []
    for row in rows:
        a, b = _own(row, first)["category"], _own(row, second)["category"]
        if a == NOT_TESTABLE and b == NOT_TESTABLE:
            continue
        if b == NOT_TESTABLE:
            only_first.append(row["short"])
        elif a == b:
            same.append(f"{row['short']} ({a})")
        elif a != NOT_TESTABLE:
            differ.append(f"{row['short']} ({model_label(first)}: {a}; {model_label(second)}: {b})")
    return same, differ, only_first


def second_model_paragraph(rows: Sequence[Mapping[str, Any]], paper: pd.DataFrame) -> str:
    """A paragraph per model of the §5 rows after the first (the main run's): what its runs can and cannot say about
    the paper's results on 3–7 B models. Empty when the rows judge one model (no second model in Table 1)."""
    models = list(rows[0].get("models") or []) if rows else []
    if len(models) < 2:
        return ""
    first = models[0]
    return "\n\n".join(_paragraph(rows, paper, first, m) for m in models[1:])


def _paragraph(
    rows: Sequence[Mapping[str, Any]], paper: pd.DataFrame, first: Mapping[str, Any], second: Mapping[str, Any]
) -> str:
    run: Run = second["run"]
    label, other = second["label"], first["label"]
    prows = _paper_rows(paper, run)
    paper_models = list(dict.fromkeys(prows.model))
    kin = [m for m in paper_models if _family(m) == _family(run.model)]
    who = f"**What {label} can and cannot say about the paper's 3–7 B models.** {label}"
    if kin:
        tuned = " (tuned for code)" if "coder" in str(run.model).lower() else ""
        who += f", of the family of the paper's {model_label(kin[0])}{tuned},"
    parts = [f"{who} was run here on {run.n_queries} queries at K = {run.K} and is judged on its own runs."]

    counts = {c: sum(_own(r, second["model"])["category"] == c for r in rows) for c in (*CATEGORIES, NOT_TESTABLE)}
    testable = sum(counts[c] for c in CATEGORIES)
    same, differ, only_first = _agreement(rows, first["model"], second["model"])
    agree = (
        f"Of the {testable} claims it can test, {counts['reproduced']} are reproduced and "
        f"{counts['contradicted']} contradicted; on the {len(same) + len(differ)} claims both models can test, it "
        f"agrees with {other} on {len(same)}"
        + (f" and differs on {len(differ)}: {'; '.join(differ)}" if differ else "")
        + "."
    )
    if only_first:
        agree += f" Testable on {other} only: {'; '.join(only_first)}."
    parts.append(agree)

    # the consistency orderings: ours against every paper model's
    held = [
        metric
        for metric in CONSISTENCY
        if all(
            [m for m in _paper_ordering(prows, pm, metric) if m in PAPER_LOC_ORDER] == list(PAPER_LOC_ORDER)
            for pm in paper_models
        )
    ]
    by_key = {r["key"]: r for r in rows if r.get("key")}
    both = [
        metric_label(metric)
        for metric in held
        if metric in by_key
        and all(_own(by_key[metric], m["model"])["category"] == "reproduced" for m in (first, second))
    ]
    if held and paper_models:
        ordering_text = BETTER.join(method_label(m) for m in PAPER_LOC_ORDER)
        found = (
            f"the paper finds the ordering {ordering_text} on {_words([metric_label(m) for m in held])} for each of "
            f"its {count_words(len(paper_models), 'model')}"
        )
        rest = [metric_label(m) for m in held if metric_label(m) not in both]
        if both:
            parts.append(
                f"What it can say: {found}, and on {_words(both)} it is reproduced, resolved pair by pair, on both of "
                f"our small models as well"
                + (f" (on {_words(rest)} not on both)" if rest else "")
                + ": an ordering seen from these small models up to the paper's does not hinge on one model's size "
                "or tuning."
            )
        else:
            parts.append(
                f"{found[0].upper()}{found[1:]}; on none of them is it reproduced on both of our small models, so "
                f"they do not speak with one voice about it."
            )
    if kin:
        mine = run.metrics["methods"].get(BASELINE_METHOD, {}).get("overall", {}).get("loc")
        value = prows[(prows.model == kin[0]) & (prows.method == BASELINE_METHOD)]["loc"]
        level = (
            f" ({method_label(BASELINE_METHOD)}'s LOC {decimal(mine)} here, "
            f"{decimal(float(value.iloc[0]))} in the paper)"
            if mine is not None and not value.empty
            else ""
        )
        ours = BETTER.join(method_label(m) for m in ordering(run, "loc"))
        theirs = BETTER.join(method_label(m) for m in _paper_ordering(prows, kin[0], "loc"))
        parts.append(
            f"On LOC it orders the methods {ours}, the paper's {model_label(kin[0])} {theirs}; the levels differ"
            f"{level}."
        )
    above = _above_random(run)
    if above:
        parts.append(
            f"On effectiveness, {_words([method_label(m) for m in above])} "
            f"{'is' if len(above) == 1 else 'are'} resolved above a random order on HR@5, so its verdict on the "
            f"HR@5 claim rests on rankings better than chance."
        )
    else:
        parts.append(
            f"On effectiveness no method's HR@5 is resolved above a random order at these {run.n_queries} queries, "
            f"so its verdict on the HR@5 claim says nothing about the paper's models' effectiveness."
        )
    sweep = by_key.get("persists")
    no_sweep = sweep is not None and _own(sweep, second["model"])["category"] == NOT_TESTABLE
    parts.append(
        "What it cannot say: how large any effect is in the paper's models (a level is not comparable across "
        "model sizes, data sets and query samples)"
        + (f", how the methods move across K (it was run at K = {run.K} only)" if no_sweep else "")
        + ", or anything on Amazon Books."
    )
    return " ".join(parts)
