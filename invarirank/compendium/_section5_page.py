"""What a reader sees of the §5 rows (:func:`invarirank.compendium._section5.section5_rows`): the claims table of the
results page (each verdict marked with its run, claim and verdict so a test can read it back), the count of rows
per category, and the one headline sentence that counts them. With several models each claim is judged on each
model's own runs: the verdict cell lists every model's verdict under its name, and the headline counts each model's
categories apart.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..evaluation._comparisons import ALPHA
from ..store import Run
from ._labels import model_label
from ._section5 import CATEGORIES, NOT_TESTABLE, SEP, section5_rows
from ._tables import with_caption
from ._verdicts import MARKS, smallest_p


def _spans(claims: Sequence[tuple[str, str, str]]) -> str:
    """The data attributes of the verdicts of named claims: ``data-run``, ``data-claim``, ``data-verdict``."""
    return " ".join(
        f'<span data-run="{html.escape(r)}" data-claim="{html.escape(c)}" data-verdict="{html.escape(v)}"></span>'
        for r, c, v in claims
    )


def _cells(row: Mapping[str, Any], mark: bool) -> tuple[str, str]:
    """A row's verdict and evidence cells in HTML: one pair a line; with several models one block per model, its
    name first (its verdict's data attributes before it)."""
    models = row.get("models") or []
    if len(models) < 2 or row["verdict"] == NOT_TESTABLE:  # one model, or a claim no model can test
        verdict = (_spans(row["claims"]) if mark else "") + html.escape(row["verdict"])
        return verdict, html.escape(row["evidence"]).replace(SEP, "<br>")
    verdicts, evidence = [], []
    for m in models:
        name = f"<strong>{html.escape(m['label'])}</strong>"
        verdicts.append((_spans(m["claims"]) if mark else "") + f"{name}: {html.escape(m['verdict'])}")
        pieces = html.escape(m["evidence"]).replace(SEP, "<br>")
        evidence.append(f"{name} ({m['run'].n_queries} queries): {pieces}")
    return "<br>".join(verdicts), "<br>".join(evidence)


def _models(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each model's judgement of the first row (its ``run``, ``model``, ``label``): the models the rows judge."""
    return list(rows[0].get("models") or []) if rows else []


def section5_table(
    main: Run,
    sweep: Sequence[Run],
    table_runs: Sequence[Run] = (),
    exposure_rows: Mapping[str, list[dict]] | None = None,
    styled: bool = True,
    mark: bool = True,
) -> Any:
    """Every claim of the paper's §5 with its verdict on our runs (:func:`section5_rows`), per model when the table
    runs hold several. With ``mark`` (the page's main table) each verdict of a named claim carries ``data-run``,
    ``data-claim`` and ``data-verdict`` attributes, so a test can read them back."""
    records = section5_rows(main, sweep, table_runs, exposure_rows)
    df = pd.DataFrame.from_records(records).drop(columns=["key", "short", "claims", "category", "note", "models"])
    if styled:  # one pair per line; each verdict of a named claim carries its run, claim and verdict as attributes
        cells = [_cells(row, mark) for row in records]
        df["verdict"] = [v for v, _ in cells]
        df["evidence"] = [e for _, e in cells]
        df["the paper"] = [html.escape(t) for t in df["the paper"]]
        df["tested here (better ≻ worse)"] = [
            html.escape(t).replace(SEP, "<br>") if len(_models(records)) > 1 else html.escape(t)
            for t in df["tested here (better ≻ worse)"]
        ]
    df = df.set_index("§5")
    df.index.name = None  # the paragraph names speak for themselves: no header row of their own
    models = _models(records)
    if len(models) > 1:
        on = " and ".join(
            f"{m['label']} ({m['run'].n_queries} queries, M = {m['run'].M}, K = {m['run'].K})" for m in models
        )
        setting = (
            f"on {on}, each claim judged on each model's own runs (the K sweep of {model_label(main.model)} at "
            f"K = {', '.join(str(r.K) for r in sweep)})"
        )
    else:
        setting = (
            f"on {model_label(main.model)} ({main.n_queries} queries, M = {main.M}, K = {main.K}; the K sweep at "
            f"K = {', '.join(str(r.K) for r in sweep)})"
        )
    caption = (
        f"The paper's §5 claim by claim, {setting}. "
        f"A ≻ B: A is better than B (higher HR@5, nDCG@5, LOC; lower PPI, GPI, exposure MAD). "
        f"{MARKS['resolved']} resolved in the paper's direction, {MARKS['against']} resolved against it, "
        f"{MARKS['unresolved']} unresolved (paired sign-flip test over queries, Holm-adjusted p < 0.05), "
        f"“the other way” when its observed difference has the wrong sign (the claim is then contradicted, not "
        f"resolved); Δ = mean over queries of the first method's value minus the second's."
    )
    # class "claims": fixed column widths in the book's stylesheet, so the evidence column is not squeezed
    return with_caption(df, caption).set_table_attributes('class="claims"') if styled else df


def verdict_counts(rows: Sequence[Mapping[str, Any]], model: str | None = None) -> dict[str, int]:
    """How many rows of :func:`section5_rows` fall in each category (:data:`CATEGORIES`, and not testable), every
    category present (0 when empty): the rows' own category (the main model's), or ``model``'s (a model id)."""
    out = dict.fromkeys((*CATEGORIES, NOT_TESTABLE), 0)
    for row in rows:
        if model is None:
            out[row["category"]] += 1
        else:
            out[next(m["category"] for m in row["models"] if m["model"] == model)] += 1
    return out


def model_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """:func:`verdict_counts` of each model the rows judge (model id → counts), the main model first; every model's
    counts add up to the number of rows."""
    return {m["model"]: verdict_counts(rows, m["model"]) for m in _models(rows)}


def _setting(run: Run) -> str:
    """A model's run in the headline: scorer and resolution when they matter, queries, M and K."""
    smoke = smallest_p(run.n_queries) >= ALPHA
    setting = "a smoke run that can resolve no pair, " if smoke else ""
    if run.scorer == "simulated":
        setting = "simulated scorer, " + setting
    return f"{setting}{run.n_queries} queries × M = {run.M} presented orders, K = {run.K}"


def _counted(rows: Sequence[Mapping[str, Any]], model: str | None) -> tuple[dict[str, int], list[str]]:
    """One model's counts (:func:`verdict_counts`) and the headline's words for its five categories, naming the
    claims of every category but the first and what was left untested or went the other way."""
    counts = verdict_counts(rows, model)

    def own(row: Mapping[str, Any]) -> Mapping[str, Any]:
        return row if model is None else next(m for m in row["models"] if m["model"] == model)

    def named(category: str) -> str:
        items = [
            r["short"] + (f": {own(r)['note']}" if own(r).get("note") else "")
            for r in rows
            if own(r)["category"] == category
        ]
        return f" ({'; '.join(items)})" if items else ""

    parts = [f"**{counts['reproduced']} reproduced**"] + [f"{counts[c]} {c}{named(c)}" for c in CATEGORIES[1:]]
    return counts, parts


def headline_sentence(main: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    """The results in one sentence, from the §5 rows: the testable claims counted in each of the five categories
    (:data:`CATEGORIES`), naming the claims of every category but the first and what was left untested or went the
    other way, then the claims that cannot be tested. With several models, one such sentence per model, each on that
    model's own runs. The same sentence is quoted wherever the headline appears."""
    models = _models(rows)
    if len(models) < 2:
        counts, parts = _counted(rows, None)
        testable = sum(counts[c] for c in CATEGORIES)
        return (
            f"On {model_label(main.model)} ({_setting(main)}), of the {testable} claims of the paper's §5 that can "
            f"be tested here: " + "; ".join(parts) + f". {counts[NOT_TESTABLE]} cannot be tested with this data and "
            f"these models."
        )
    sentences = []
    for m in models:
        counts, parts = _counted(rows, m["model"])
        testable = sum(counts[c] for c in CATEGORIES)
        sentences.append(
            f"On {m['label']} ({_setting(m['run'])}), of the {testable} claims of the paper's §5 that can be tested "
            f"on its own runs: " + "; ".join(parts) + f"; {counts[NOT_TESTABLE]} cannot be tested."
        )
    return (
        " ".join(sentences)
        + " Each model's claims are judged on its own runs; a claim that cannot be tested needs other data, larger "
        "models or, for a model run at one list length, a K sweep."
    )
