"""Every claim of the paper's §5 (Results) on our runs: reproduced, contradicted, unresolved, or not testable here
(with the reason), and the computed sentences that interpret Figure 1, Figure 2 and the choice scorer.

Notation: ``A ≻ B`` reads "A is better than B" on the metric named (higher HR@k, nDCG@k and LOC; lower PPI, GPI
and exposure deviation). A claim is judged as everywhere in the package (:mod:`invarirank.evaluation.claims`):
paired sign-flip p-values over queries, Holm-adjusted over the claim's pairs; a pair is resolved when its adjusted
p < 0.05; **reproduced** = every pair resolved in the paper's direction, **contradicted** = some pair resolved the
other way, **unresolved** otherwise. Claims that combine several metrics (SGS better than zero-shot on exposure and
on all three consistency measures) or several list lengths (the ordering persists across K) take Holm's correction
over all of their pairs. Every value comes from the runs' ``metrics.json`` and, for the exposure skew, their
observations; nothing is typed here but the paper's own wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..evaluation.claims import holm
from ..evaluation.comparisons import ALPHA, comparison, sign_flip_p
from ..methods.registry import SWEEP_METHODS
from ..store import Run
from .labels import (
    HIGHER_IS_BETTER,
    METRIC_LABELS,
    decimal,
    method_label,
    metric_label,
    model_label,
    p_equals,
    signed,
)
from .tables import with_caption
from .verdicts import MARKS, claim_label, run_claims, smallest_p

__all__ = [
    "BETTER",
    "Pair",
    "judge_pairs",
    "exposure_skew",
    "section5_rows",
    "section5_table",
    "figure1_sentence",
    "figure2_sentence",
    "choice_sentence",
    "headline_sentence",
    "verdict_counts",
    "markdown_to_html",
]

#: the one ordering notation of the book: "A ≻ B" = A is better than B on the metric named
BETTER = " ≻ "

NOT_TESTABLE = "not testable here"
#: between the pieces of evidence of one claim (one pair per line in the table)
SEP = "; "


class Pair(NamedTuple):
    """One claimed pair: on ``metric`` (of ``run``), ``better`` should beat ``worse``."""

    run: Run
    metric: str
    better: str
    worse: str


def judge_pairs(pairs: Sequence[Pair], alpha: float = ALPHA) -> dict | None:
    """The verdict of a claim made of ``pairs`` (possibly over several metrics and runs), Holm-adjusted over all of
    them: ``{"verdict": ..., "pairs": [{..., "p_holm", "state"}]}``; ``None`` when some pair was not compared."""
    records = []
    for pair in pairs:
        rec = comparison(pair.run.metrics.get("comparisons") or {}, pair.metric, pair.better, pair.worse)
        if rec is None:
            return None
        records.append(rec)
    if not records:
        return None
    out = []
    for pair, rec, p_holm in zip(pairs, records, holm([r["p"] for r in records])):
        gain = rec["mean_diff"] if HIGHER_IS_BETTER.get(pair.metric, True) else -rec["mean_diff"]
        resolved = p_holm < alpha
        state = "unresolved" if not resolved else "resolved" if gain > 0 else "against"
        out.append(
            {
                "pair": pair,
                "mean_diff": rec["mean_diff"],
                "n": rec["n"],
                "p": rec["p"],
                "p_holm": p_holm,
                "state": state,
            }
        )
    states = {p["state"] for p in out}
    verdict = "contradicted" if "against" in states else "reproduced" if states == {"resolved"} else "unresolved"
    return {"verdict": verdict, "pairs": out}


def exposure_skew(run: Run, method: str = "zero_shot", k: int = 5, rows: list[dict] | None = None) -> dict | None:
    """Does ``method`` give the last third of input positions more top-``k`` exposure than the first third?

    Per query: the share of (row, position) cells of the tail bucket (presented positions p with
    ``floor(3p/K) = 2``) whose candidate lands in the output top k, minus the same share of the head bucket
    (``floor(3p/K) = 0``). Returns ``{"mean_diff": mean over queries of tail − head, "n", "p"}`` (two-sided paired
    sign-flip p, :func:`invarirank.evaluation.comparisons.sign_flip_p`); ``None`` when K <= k (every candidate is in
    the top k) or the method is not in the run."""
    if run.K <= k or method not in run.methods:
        return None
    if rows is None:
        from ..evaluation import read_observations

        rows = read_observations(run.observations)
    by_query: dict[str, list[float]] = {}
    for row in rows:
        if row["method"] != method:
            continue
        top = set(row["output"][:k])
        K = len(row["input"])
        head = [c in top for p, c in enumerate(row["input"]) if min(3 * p // K, 2) == 0]
        tail = [c in top for p, c in enumerate(row["input"]) if min(3 * p // K, 2) == 2]
        by_query.setdefault(row["query_id"], []).append(float(np.mean(tail)) - float(np.mean(head)))
    diffs = [float(np.mean(v)) for v in by_query.values()]
    if not diffs:
        return None
    return {"mean_diff": float(np.mean(diffs)), "n": len(diffs), "p": sign_flip_p(diffs)[0]}


def _count(n: int, noun: str) -> str:
    """``one model``, ``two models``, ``12 models``: small counts in words, as the sentences around them."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"{words.get(n, str(n))} {noun}{'' if n == 1 else 's'}"


def _pair_text(p: Mapping[str, Any], with_context: bool = False) -> str:
    pair: Pair = p["pair"]
    where = f" ({metric_label(pair.metric)}, K = {pair.run.K})" if with_context else ""
    return (
        f"{MARKS[p['state']]} {method_label(pair.better)}{BETTER}{method_label(pair.worse)}{where} "
        f"(Δ {signed(p['mean_diff'])}, {p_equals(p['p_holm'], 'Holm p')})"
    )


def _verdict_pairs_text(verdict: Mapping[str, Any]) -> str:
    """A claim's pairs of :func:`invarirank.compendium.verdicts.run_claims` with their state, difference and p."""
    out = []
    for p in verdict["pairs"]:
        state = "unresolved" if not p["resolved"] else "resolved" if p["direction"] == "as claimed" else "against"
        out.append(
            f"{MARKS[state]} {method_label(p['better'])}{BETTER}{method_label(p['worse'])} "
            f"(Δ {signed(p['mean_diff'])}, {p_equals(p['p_holm'], 'Holm p')})"
        )
    return SEP.join(out)


def _of_claim(name: str, runs: Sequence[Run]) -> tuple[str, str, str, list[tuple[str, str, str]]]:
    """(claim tested, verdict, evidence, [(run, claim name, verdict)]) of a named paper claim on each of ``runs``
    that has it."""
    tested, verdicts, evidence = "", [], []
    for run in runs:
        v = run_claims(run).get(name)
        if v is None:
            continue
        tested = claim_label(v)
        who = f"{model_label(run.model)}, {run.n_queries} queries" if len(runs) > 1 else ""
        verdicts.append(v["verdict"] + (f" ({who})" if who else ""))
        evidence.append((f"{who}: " if who else "") + _verdict_pairs_text(v))
    found = [(run.name, name, run_claims(run)[name]["verdict"]) for run in runs if name in run_claims(run)]
    if not verdicts:
        return tested or "–", NOT_TESTABLE, "the runs shown lack one of the claim's methods", []
    return tested, "; ".join(verdicts), SEP.join(evidence), found


def _sweep_runs(sweep: Sequence[Run], methods: Sequence[str]) -> list[Run]:
    return [r for r in sweep if all(m in r.methods for m in methods)]


def section5_rows(
    main: Run,
    sweep: Sequence[Run],
    table_runs: Sequence[Run] = (),
    exposure_rows: Mapping[str, list[dict]] | None = None,
) -> list[dict[str, str]]:
    """The rows of :func:`section5_table`: one per claim of the paper's §5, in the paper's order, each with the
    paper's wording, the claim as tested here, the verdict and its evidence (or why it cannot be tested).
    ``table_runs``: the runs at the main run's K with all four methods (a second model joins the verdicts)."""
    exposure_rows = exposure_rows or {}
    claim_runs = [r for r in (table_runs or [main]) if r.K == main.K and run_claims(r)] or [main]
    n_models = len({r.model for r in claim_runs})
    rows: list[dict[str, str]] = []

    def add(
        paragraph: str,
        paper: str,
        tested: str,
        verdict: str,
        evidence: str,
        claims: Sequence[tuple[str, str, str]] = (),
        short: str = "",
    ) -> None:
        rows.append(
            {
                "§5": paragraph,
                "the paper": paper,
                "tested here (better ≻ worse)": tested,
                "verdict": verdict,
                "evidence": evidence,
                "short": short or tested,
                "claims": list(claims),
            }
        )

    add(
        "Effectiveness",
        "“STELLA_LW obtains the highest HR@5 for all three models on both datasets.”",
        *_of_claim("hr5_stella_best", claim_runs),
        short="STELLA_LW best on HR@5",
    )
    add(
        "Effectiveness",
        "“The best nDCG@5 varies across methods” (SGS, STELLA_LW or bootstrapping, by setting).",
        "–",
        NOT_TESTABLE,
        f"a statement across six model–dataset settings, and we have one data set and {_count(n_models, 'model')} "
        f"with all four methods: there is nothing to vary",
    )
    for name, metric in (("ppi_order", "PPI"), ("gpi_order", "GPI")):
        add(
            "Preference consistency",
            f"“PPI and GPI exhibit the same method ordering … SGS produces the lowest PPI "
            f"and GPI throughout … STELLA_LW produces the highest” ({metric}).",
            *_of_claim(name, claim_runs),
            short=f"the ordering on {metric}",
        )
    persist = [r for r in _sweep_runs(sweep, SWEEP_METHODS)]
    verdict = judge_pairs([Pair(r, m, "bootstrapping", "zero_shot") for r in persist for m in ("ppi", "gpi")])
    ks = ", ".join(str(r.K) for r in persist)
    if verdict is None or len(persist) < 2:
        add(
            "Preference consistency",
            "“Figure 2 shows that this ordering also persists across K ∈ {15, 25, 50}.”",
            "–",
            NOT_TESTABLE,
            "the runs shown have no K sweep",
        )
    else:
        add(
            "Preference consistency",
            "“Figure 2 shows that this ordering also persists across K ∈ {15, 25, 50}.”",
            f"PPI and GPI: bootstrapping{BETTER}zero-shot at every K = {ks} (the only methods run at every K)",
            verdict["verdict"],
            SEP.join(_pair_text(p, True) for p in verdict["pairs"]),
            short="bootstrapping ≻ zero-shot at every K",
        )
    add(
        "Output consistency",
        "“LOC follows the same method ordering as PPI and GPI across all six model–dataset combinations.”",
        *_of_claim("loc_order", claim_runs),
        short="the ordering on LOC",
    )
    stella = main.metrics["methods"].get("stella", {}).get("overall", {}).get("loc")
    add(
        "Output consistency",
        "“STELLA_LW produces the lowest LOC, with all values below 0.13.”",
        "–",
        NOT_TESTABLE,
        f"an absolute level reached by 3–7 B models at K = 25, while {model_label(main.model)} has its own scale"
        + (f" (ours at K = {main.K}: {stella:.3f})" if stella is not None else f" (no STELLA_LW run at K = {main.K})"),
    )
    skews = [(r, exposure_skew(r, rows=exposure_rows.get(r.name))) for r in sweep]
    skews = [(r, s) for r, s in skews if s is not None]
    if skews:
        adjusted = holm([s["p"] for _, s in skews])
        states = [
            "unresolved" if q >= ALPHA else "resolved" if s["mean_diff"] > 0 else "against"
            for (_, s), q in zip(skews, adjusted)
        ]
        verdict = (
            "contradicted" if "against" in states else "reproduced" if set(states) == {"resolved"} else "unresolved"
        )
        add(
            "Marginal position exposure",
            "“Zero-shot reranking exhibits substantial positional skew, with early "
            "input positions receiving lower exposure than later positions.”",
            "zero-shot top-5 exposure: last third of input positions ≻ first third, at every K = "
            + ", ".join(str(r.K) for r, _ in skews),
            verdict,
            SEP.join(
                f"{MARKS[st]} K = {r.K}: Δ {signed(s['mean_diff'])} ({p_equals(q, 'Holm p')})"
                for (r, s), st, q in zip(skews, states, adjusted)
            ),
            short="zero-shot's early positions lose exposure",
        )
    add(
        "Marginal position exposure",
        "“Bootstrapping reduces this skew but does not eliminate it, while STELLA_LW "
        "and SGS produce flatter exposure curves.”",
        *_of_claim("exposure_flattened", claim_runs),
        short="the mitigations flatten exposure",
    )
    sgs = judge_pairs([Pair(main, m, "sgs", "zero_shot") for m in ("exposure_mad@5", "ppi", "gpi", "loc")])
    if sgs is not None:
        add(
            "Marginal position exposure",
            "“SGS improves both marginal exposure and all three consistency measures in the examined setting.”",
            f"SGS{BETTER}zero-shot on exposure MAD, PPI, GPI and LOC",
            sgs["verdict"],
            SEP.join(_pair_text(p, True).replace(f", K = {main.K}", "") for p in sgs["pairs"]),
            short="SGS improves exposure and consistency together",
        )
    passes = main.manifest.get("passes", {}).get("per_method", {})
    if passes:
        shown = "; ".join(
            f"{method_label(m)} {v['per_order_min']}–{v['per_order_max']}".replace(
                f"{v['per_order_min']}–{v['per_order_min']}", str(v["per_order_min"])
            )
            for m, v in passes.items()
        )
        add(
            "Efficiency",
            "“Zero-shot reranking requires one forward pass per candidate set, while bootstrapping "
            "aggregates three shuffled passes … SGS requires K sequential passes … STELLA_LW performs up to ten.”",
            "scorer passes per presented order, counted in the run",
            "reproduced (by construction)",
            f"K = {main.K}: {shown}",
            short="the passes per order",
        )
    add(
        "Datasets",
        "Every result “on both datasets” (MovieLens-32M and Amazon Books).",
        "–",
        NOT_TESTABLE,
        "Amazon Books is not embedded (the package reads it, and the paper-scale chapter runs it), and "
        "MovieLens-100K stands in for MovieLens-32M",
    )
    add(
        "Models",
        "Every result “for all three models” (Llama-3.2-3B, Mistral-7B, Qwen2.5-7B).",
        "–",
        NOT_TESTABLE,
        "3–7 B models need a GPU (the paper-scale chapter), and the runs here use "
        + " and ".join(dict.fromkeys(model_label(r.model) for r in claim_runs))
        + " on a CPU",
    )
    add(
        "List length",
        "The four methods at K = 50 (Figures 1 and 2).",
        "–",
        NOT_TESTABLE,
        "SGS needs K passes per presented order: about 45,000 passes at K = 50, days on two CPU cores",
    )
    return rows


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
    df = pd.DataFrame.from_records(records).drop(columns=["short", "claims"])
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
        f"{MARKS['unresolved']} unresolved (paired sign-flip test over queries, Holm-adjusted p < 0.05); "
        f"Δ = mean over queries of the first method's value minus the second's."
    )
    # class "claims": fixed column widths in the book's stylesheet, so the evidence column is not squeezed
    return with_caption(df, caption).set_table_attributes('class="claims"') if styled else df


def verdict_counts(rows: Sequence[Mapping[str, str]]) -> dict[str, int]:
    """How many rows of :func:`section5_rows` have each verdict (the first word of the first run's verdict)."""
    out: dict[str, int] = {}
    for row in rows:
        v = row["verdict"]
        key = NOT_TESTABLE if v.startswith(NOT_TESTABLE) else v.split(" ")[0].rstrip(";")
        out[key] = out.get(key, 0) + 1
    return out


def headline_sentence(main: Run, rows: Sequence[Mapping[str, str]]) -> str:
    """The results in one sentence, from the §5 rows: how many claims are reproduced, contradicted, unresolved and
    not testable, naming the claims that are not reproduced."""
    counts = verdict_counts(rows)
    testable = [r for r in rows if not r["verdict"].startswith(NOT_TESTABLE)]

    def names(word: str) -> str:
        return ", ".join(r["short"] for r in testable if r["verdict"].startswith(word))

    smoke = "a smoke run, " if main.scorer == "simulated" or smallest_p(main.n_queries) >= ALPHA else ""
    text = (
        f"On {model_label(main.model)} ({smoke}{main.n_queries} queries × M = {main.M} presented orders, "
        f"K = {main.K}) **{counts.get('reproduced', 0)} of the {len(testable)} claims** of the paper's §5 that "
        f"can be tested here are reproduced"
    )
    for word in ("contradicted", "unresolved"):
        if counts.get(word):
            text += f"; {counts[word]} {'is' if counts[word] == 1 else 'are'} {word} ({names(word)})"
    return text + f"; {counts.get(NOT_TESTABLE, 0)} cannot be tested with this data and these models."


def markdown_to_html(text: str) -> str:
    """A generated sentence (plain text with ``**bold**``) as one HTML paragraph, escaped, for a glue that another
    page pastes (a pasted Markdown object would show as its repr)."""
    import html
    import re

    return "<p>" + re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(text)) + "</p>"


def _exposure(run: Run, method: str) -> list[float]:
    return [float(x) for x in run.metrics["methods"][method]["overall"].get("exposure@5") or []]


def figure1_sentence(sweep: Sequence[Run], k: int = 5) -> str:
    """What Figure 1 shows: zero-shot's exposure at input position 0 and over the last third at each K, against the
    position-blind k/K, and which mitigation is flattest (exposure MAD) at the main K."""
    runs = [r for r in sweep if r.K > k and "zero_shot" in r.methods]
    if not runs:
        return "No run of the sweep has K > 5, so every candidate is in the top 5 and Figure 1 is flat by construction."
    parts, rising = [], []
    for r in runs:
        e = _exposure(r, "zero_shot")
        tail = float(np.mean([x for p, x in enumerate(e) if min(3 * p // r.K, 2) == 2]))
        rising.append(e[0] < tail)
        parts.append(
            f"K = {r.K}: {e[0]:.2f} at position 0, {tail:.2f} on average over the last third "
            f"(position-blind {k / r.K:.2f})"
        )
    verdict = (
        "as in the paper's Figure 1, early input positions receive lower exposure than later ones at every K"
        if all(rising)
        else "unlike the paper's Figure 1, early input positions do not receive lower "
        "exposure than later ones at every K"
    )
    lines = [
        f"Zero-shot's top-{k} exposure (the share of rows in which the candidate shown at a position reaches "
        f"the top {k}): " + "; ".join(parts) + f". So, {verdict}"
    ]
    full = max((r for r in runs if len(r.methods) > 2), key=lambda r: len(r.methods), default=None)
    if full is not None:
        mads = {m: full.metrics["methods"][m]["overall"].get("exposure_mad@5") for m in full.methods}
        mads = {m: v for m, v in mads.items() if v is not None}
        flat = sorted(mads, key=mads.get)
        lines.append(
            f"; at K = {full.K} the exposure MAD (mean distance from {k}/K, lower is flatter) orders the "
            f"methods " + BETTER.join(f"{method_label(m)} ({mads[m]:.3f})" for m in flat)
        )
    return "".join(lines) + "."


def figure2_sentence(sweep: Sequence[Run]) -> str:
    """What Figure 2 shows: PPI and GPI of zero-shot and bootstrapping at each K (which is lower, and how the
    values move with K)."""
    runs = sorted(_sweep_runs(sweep, SWEEP_METHODS), key=lambda r: r.K)
    if len(runs) < 2:
        return "Figure 2 needs runs at two or more list lengths."
    out = []
    for metric in ("ppi", "gpi"):
        vals = {m: [r.metrics["methods"][m]["overall"][metric] for r in runs] for m in SWEEP_METHODS}
        lower = sum(b < z for b, z in zip(vals["bootstrapping"], vals["zero_shot"]))
        trend = ", ".join(f"{z:.3f} → {b:.3f}" for z, b in zip(vals["zero_shot"], vals["bootstrapping"]))
        out.append(
            f"{METRIC_LABELS[metric]}: bootstrapping is below zero-shot at {lower} of {len(runs)} list "
            f"lengths (zero-shot → bootstrapping at K = {', '.join(str(r.K) for r in runs)}: {trend})"
        )
    return "; ".join(out) + ". Whether each step is resolved is in the table of claims (the row on K)."


def choice_sentence(choice: Run | None, span: Run | None = None, k: int = 5) -> str:
    """What the choice scorer's run shows: when its zero-shot PPI is near 1 and the candidate labelled [A] (shown
    first) reaches the top k in (nearly) every row, the ranking follows the labels, not the candidates."""
    if choice is None or "zero_shot" not in choice.methods:
        return "No choice-scorer run is shown here."
    ov = choice.metrics["methods"]["zero_shot"]["overall"]
    e = _exposure(choice, "zero_shot")
    first = e[0] if e else float("nan")
    text = (
        f"With the choice scorer ({model_label(choice.model)}, K = {choice.K}, {choice.n_queries} queries) "
        f"zero-shot has PPI {decimal(ov['ppi'])} and LOC {decimal(ov['loc'])}, and the candidate shown first, "
        f"labelled [A], reaches the top {k} in {first:.0%} of rows (top-{k} exposure at positions "
        f"0–{min(k, len(e)) - 1}: " + ", ".join(f"{x:.2f}" for x in e[:k]) + ")"
    )
    if ov["ppi"] > 0.9 and first > 0.95:
        text += (
            ": its ranking follows the labels [A], [B], …, not the candidates they carry (the same labels win "
            "in every presented order). The "
            "paper's stated extraction (log-probabilities of candidate markers) therefore cannot be tested "
            "with a model this small, and the reproduction rests on the span scorer"
        )
    if span is not None and "zero_shot" in span.methods:
        s = span.metrics["methods"]["zero_shot"]["overall"]
        text += f" (span scorer on the same queries: PPI {decimal(s['ppi'])}, LOC {decimal(s['loc'])})"
    return text + "."
