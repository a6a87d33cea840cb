"""Tables of the paper's claims on our runs: the verdict of each claim per run (:func:`claims_table`) and every
claimed pair of one run with its paired comparison (:func:`pairwise_table`). Read through :mod:`._verdicts` from
``metrics.json``; differences are "expected better minus expected worse", in the metric's units."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..store import Run
from ._labels import method_label, model_label, p_value, run_setting
from ._tables import with_caption
from ._verdicts import MARKS, claim_label, pair_state, queries_needed, run_claims

_STATE_TEXT = {
    "resolved": f"{MARKS['resolved']} resolved",
    "against": f"{MARKS['against']} resolved against",
    "unresolved": f"{MARKS['unresolved']} unresolved",
}


def _run_column(run: Run, runs: Sequence[Run]) -> str:
    """A run's column name: its model, plus scorer, K and queries where the runs differ in them."""
    parts = [model_label(run.model)]
    for attr, fmt in (("scorer", "{} scorer"), ("K", "K = {}"), ("n_queries", "{} queries")):
        if len({getattr(r, attr) for r in runs}) > 1:
            parts.append(fmt.format(getattr(run, attr)))
    return ", ".join(parts)


def claims_table(runs: Sequence[Run], styled: bool = True) -> Any | None:
    """Rows: the paper's claims (in words); columns: one per run with verdicts; cells: reproduced / contradicted /
    unresolved. ``None`` when no run has a verdict."""
    shown = [r for r in runs if run_claims(r)]
    if not shown:
        return None
    records: dict[str, dict[str, str]] = {}
    for run in shown:
        for verdict in run_claims(run).values():
            records.setdefault(claim_label(verdict), {})[_run_column(run, shown)] = verdict["verdict"]
    df = pd.DataFrame.from_dict(records, orient="index").fillna("–")
    df.index.name = "the paper's claim"
    caption = (
        "The paper's claims on our runs (" + "; ".join(run_setting(r) for r in shown) + "): reproduced = "
        "every claimed pair resolved in the paper's direction, contradicted = some pair's observed "
        "difference the other way (resolved or not), unresolved = otherwise (paired sign-flip test, Holm-adjusted "
        "p < 0.05 over the claim's pairs)."
    )
    return with_caption(df, caption) if styled else df


#: the claims in the order the results page's §5 table lists them (the paper's order: effectiveness, then
#: preference and output consistency, then exposure), so the pairwise table reads in the same order
SECTION5_ORDER = ("hr5_stella_best", "ppi_order", "gpi_order", "loc_order", "exposure_flattened")


def pairwise_table(run: Run, digits: int = 3, styled: bool = True) -> Any | None:
    """Every claimed pair of ``run``: mean difference (expected better − expected worse) [95% paired bootstrap
    interval], raw and Holm-adjusted p, state, and the queries that would resolve the observed difference at 80%
    power (:func:`~invarirank.compendium._verdicts.queries_needed`; unresolved pairs only). ``None`` when the run has
    no verdict."""
    claims = run_claims(run)
    if not claims:
        return None
    records = []
    order = [n for n in SECTION5_ORDER if n in claims] + [n for n in claims if n not in SECTION5_ORDER]
    for verdict in (claims[n] for n in order):
        for p in verdict["pairs"]:
            ci = p.get("ci")
            diff = (
                f"{p['mean_diff']:+.{digits}f}" + (f" [{ci[0]:+.{digits}f}, {ci[1]:+.{digits}f}]" if ci else "")
            ).replace("-", "−")  # a true minus, as in the claims' table
            q = queries_needed(p, len(verdict["pairs"]))
            records.append(
                {
                    "claim": claim_label(verdict),
                    "pair": f"{method_label(p['better'])} vs {method_label(p['worse'])}",
                    "n": p["n"],
                    "difference [95% CI]": diff,
                    "p": p_value(p["p"]),
                    "Holm p": p_value(p["p_holm"]),
                    "state": _STATE_TEXT[pair_state(p)]
                    + (", the other way" if p["direction"] == "reversed" and not p["resolved"] else ""),
                    "queries for 80% power": "–" if p["resolved"] or q is None else f"{q:,}",
                }
            )
    df = pd.DataFrame.from_records(records).set_index(["claim", "pair"])
    paired = ""
    if df["n"].nunique() == 1:  # the same queries in every pair: said once, not in a column
        paired = f" (every pair paired over the same {df['n'].iloc[0]} queries)"
        df = df.drop(columns="n")
    caption = (
        f"The claimed pairs, {run_setting(run)}{paired}: difference = mean over queries of the expected better "
        f"method's value minus the expected worse one's (metric units), 95% paired bootstrap interval, "
        f"two-sided paired sign-flip p (raw and Holm-adjusted over the claim's pairs); queries for 80% power "
        f"from the observed mean and spread (normal approximation), at least as many as the exact test needs "
        f"to resolve a pair of the claim, and none for a difference of the wrong sign."
    )
    return with_caption(df, caption) if styled else df
