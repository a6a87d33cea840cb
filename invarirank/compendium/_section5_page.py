"""What a reader sees of the §5 rows (:func:`invarirank.compendium._section5.section5_rows`): the claims table of the
results page (each verdict marked with its run, claim and verdict so a test can read it back), the count of rows
per category, and the one headline sentence that counts them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..evaluation._comparisons import ALPHA
from ..store import Run
from ._labels import model_label
from ._section5 import CATEGORIES, NOT_TESTABLE, SEP, section5_rows
from ._tables import with_caption
from ._verdicts import MARKS, smallest_p


def section5_table(
    main: Run,
    sweep: Sequence[Run],
    table_runs: Sequence[Run] = (),
    exposure_rows: Mapping[str, list[dict]] | None = None,
    styled: bool = True,
    mark: bool = True,
) -> Any:
    """Every claim of the paper's §5 with its verdict on our runs (:func:`section5_rows`). With ``mark`` (the
    page's main table) each verdict of a named claim carries ``data-run``, ``data-claim`` and ``data-verdict``
    attributes, so a test can read them back."""
    records = section5_rows(main, sweep, table_runs, exposure_rows)
    df = pd.DataFrame.from_records(records).drop(columns=["short", "claims", "category", "note"])
    if styled:  # one pair per line; each verdict of a named claim carries its run, claim and verdict as attributes
        import html

        df["verdict"] = [
            " ".join(
                f'<span data-run="{html.escape(r)}" data-claim="{html.escape(c)}" '
                f'data-verdict="{html.escape(v)}"></span>'
                for r, c, v in row["claims"]
                if mark
            )
            + html.escape(row["verdict"])
            for row in records
        ]
        df["evidence"] = [html.escape(e).replace(SEP, "<br>") for e in df["evidence"]]
        df["the paper"] = [html.escape(t) for t in df["the paper"]]
        df["tested here (better ≻ worse)"] = [html.escape(t) for t in df["tested here (better ≻ worse)"]]
    df = df.set_index("§5")
    df.index.name = None  # the paragraph names speak for themselves: no header row of their own
    caption = (
        f"The paper's §5 claim by claim, on {model_label(main.model)} ({main.n_queries} queries, "
        f"M = {main.M}, K = {main.K}; the K sweep at K = {', '.join(str(r.K) for r in sweep)}). "
        f"A ≻ B: A is better than B (higher HR@5, nDCG@5, LOC; lower PPI, GPI, exposure MAD). "
        f"{MARKS['resolved']} resolved in the paper's direction, {MARKS['against']} resolved against it, "
        f"{MARKS['unresolved']} unresolved (paired sign-flip test over queries, Holm-adjusted p < 0.05), "
        f"“the other way” when its observed difference has the wrong sign (the claim is then contradicted, not "
        f"resolved); Δ = mean over queries of the first method's value minus the second's."
    )
    # class "claims": fixed column widths in the book's stylesheet, so the evidence column is not squeezed
    return with_caption(df, caption).set_table_attributes('class="claims"') if styled else df


def verdict_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many rows of :func:`section5_rows` fall in each category (:data:`CATEGORIES`, and not testable), every
    category present (0 when empty)."""
    out = dict.fromkeys((*CATEGORIES, NOT_TESTABLE), 0)
    for row in rows:
        out[row["category"]] += 1
    return out


def headline_sentence(main: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    """The results in one sentence, from the §5 rows: the testable claims counted in each of the five categories
    (:data:`CATEGORIES`), naming the claims of every category but the first and what was left untested or went the
    other way, then the claims that cannot be tested. The same sentence is quoted wherever the headline appears."""
    counts = verdict_counts(rows)
    testable = sum(counts[c] for c in CATEGORIES)

    def named(category: str) -> str:
        items = [r["short"] + (f": {r['note']}" if r.get("note") else "") for r in rows if r["category"] == category]
        return f" ({'; '.join(items)})" if items else ""

    smoke = smallest_p(main.n_queries) >= ALPHA
    setting = "a smoke run that can resolve no pair, " if smoke else ""
    if main.scorer == "simulated":
        setting = "simulated scorer, " + setting
    parts = [f"**{counts['reproduced']} reproduced**"] + [f"{counts[c]} {c}{named(c)}" for c in CATEGORIES[1:]]
    return (
        f"On {model_label(main.model)} ({setting}{main.n_queries} queries × M = {main.M} presented orders, "
        f"K = {main.K}), of the {testable} claims of the paper's §5 that can be tested here: "
        + "; ".join(parts)
        + f". {counts[NOT_TESTABLE]} cannot be tested with this data and these models."
    )
