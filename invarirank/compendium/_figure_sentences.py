"""The sentences that say what Figure 1, Figure 2, the choice scorer and the first input position show, computed from
the runs (their ``metrics.json`` and observations) when the book is built; nothing is typed but the wording.

Positions are 0-based input (presented) positions; exposure is top-5 exposure E_5(p), the share of rows whose
candidate shown at p reaches the output top 5 (:mod:`invarirank.evaluation._positional_exposure`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..evaluation._position_effects import first_position_effect
from ..methods.registry import BASELINE_METHOD, SWEEP_METHODS
from ..store import Run
from ._labels import METRIC_LABELS, decimal, method_label, model_label, p_equals, signed

#: a first-slot shift this many times the largest shift at any other position reads as a step at the first slot
STEP = 3

#: the one ordering notation of the book: "A ≻ B" = A is better than B on the metric named
BETTER = " ≻ "


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
    runs = [r for r in sweep if r.K > k and BASELINE_METHOD in r.methods]
    if not runs:
        return "No run of the sweep has K > 5, so every candidate is in the top 5 and Figure 1 is flat by construction."
    parts, rising = [], []
    for r in runs:
        e = _exposure(r, BASELINE_METHOD)
        tail = float(np.mean([x for p, x in enumerate(e) if min(3 * p // r.K, 2) == 2]))
        rising.append(e[0] < tail)
        parts.append(
            f"K = {r.K}: {e[0]:.2f} at position 0, {tail:.2f} on average over the last third "
            f"(position-blind {k / r.K:.2f})"
        )
    where = "at every K" if len(runs) > 1 else f"at K = {runs[0].K}"  # one list length: no claim across K
    verdict = (
        f"as in the paper's Figure 1, early input positions receive lower exposure than later ones {where}"
        if all(rising)
        else f"unlike the paper's Figure 1, early input positions do not receive lower exposure than later ones {where}"
    )
    lines = [
        f"Zero-shot's top-{k} exposure (the share of rows in which the candidate shown at a position reaches "
        f"the top {k}): " + "; ".join(parts) + f". So, {verdict}"
    ]
    full = max((r for r in runs if len(r.methods) > 2), key=lambda r: len(r.methods), default=None)
    if full is not None:
        mads = {m: full.metrics["methods"][m]["overall"].get("exposure_mad@5") for m in full.methods}
        mads = {m: v for m, v in mads.items() if v is not None}
        flat = sorted(mads, key=lambda m: mads[m])
        at = "there" if len(runs) == 1 else f"at K = {full.K}"
        lines.append(
            f"; {at} the exposure MAD (mean distance from {k}/K, lower is flatter) orders the "
            f"methods " + BETTER.join(f"{method_label(m)} ({mads[m]:.3f})" for m in flat)
        )
    return "".join(lines) + "."


def figure2_sentence(sweep: Sequence[Run]) -> str:
    """What Figure 2 shows: PPI and GPI of zero-shot and bootstrapping at each K (which is lower, and how the
    values move with K)."""
    runs = sorted([r for r in sweep if all(m in r.methods for m in SWEEP_METHODS)], key=lambda r: r.K)
    if len(runs) < 2:
        return "Figure 2 needs runs at two or more list lengths."
    out = []
    for metric in ("ppi", "gpi"):
        vals = {m: [r.metrics["methods"][m]["overall"][metric] for r in runs] for m in SWEEP_METHODS}
        base, mitigation = SWEEP_METHODS  # zero-shot and bootstrapping, the paper's sweep
        lower = sum(b < z for b, z in zip(vals[mitigation], vals[base]))
        trend = ", ".join(f"{z:.3f} → {b:.3f}" for z, b in zip(vals[base], vals[mitigation]))
        out.append(
            f"{METRIC_LABELS[metric]}: bootstrapping is below zero-shot at {lower} of {len(runs)} list "
            f"lengths (zero-shot → bootstrapping at K = {', '.join(str(r.K) for r in runs)}: {trend})"
        )
    return "; ".join(out) + ". Whether each step is resolved is in the table of claims (the row on K)."


def choice_sentence(choice: Run | None, span: Run | None = None, k: int = 5) -> str:
    """What the choice scorer's run shows: when its zero-shot PPI is near 1 and the candidate labelled [A] (shown
    first) reaches the top k in (nearly) every row, the ranking follows the labels, not the candidates."""
    if choice is None or BASELINE_METHOD not in choice.methods:
        return "No choice-scorer run is shown here."
    ov = choice.metrics["methods"][BASELINE_METHOD]["overall"]
    e = _exposure(choice, BASELINE_METHOD)
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
    if span is not None and BASELINE_METHOD in span.methods:
        s = span.metrics["methods"][BASELINE_METHOD]["overall"]
        text += f" (span scorer on the same queries: PPI {decimal(s['ppi'])}, LOC {decimal(s['loc'])})"
    return text + "."


def first_position_sentence(
    span: tuple[Run, Sequence[Mapping[str, Any]]], choice: tuple[Run, Sequence[Mapping[str, Any]]] | None = None
) -> str:
    """Why zero-shot's exposure at input position 0 is (near) zero: the span scorer's score shift of the same
    candidate when written first (:func:`invarirank.evaluation._position_effects.first_position_effect`), whether the
    early-position skew survives without position 0, and the choice scorer's position 0 beside it. ``span`` and
    ``choice``: a run and its observation rows."""
    run, rows = span
    d = first_position_effect(rows, BASELINE_METHOD)
    if d is None:
        return f"The run at K = {run.K} has no scores in its observations: the first position cannot be diagnosed."
    lo, hi = d["rest"]
    text = (
        f"At K = {run.K} ({model_label(run.model)}, {run.scorer} scorer, {d['n_queries']} queries), the candidate "
        f"shown first reaches the top 5 in {d['exposure_first']:.1%} of zero-shot's rows (mean output rank "
        f"{d['rank_first']:.1f}, 0-based, of {d['K']}). The same candidate for the same user scores "
        f"{abs(d['shift'][0]):.2f} {'lower' if d['shift'][0] < 0 else 'higher'} (mean log-probability per token) "
        f"when written first than when written elsewhere, against {signed(lo, 2)} to {signed(hi, 2)} at every other "
        f"position (first minus second slot, per query: {signed(d['first_minus_second'], 2)}, "
        f"{p_equals(d['p_first'])})"
    )
    if abs(d["shift"][0]) > STEP * max(abs(lo), abs(hi)) and d["p_first"] < 0.05:
        text += (
            ": a step at the first slot alone, not a trend across positions. That is what the first slot does to "
            "the span scorer (its candidate follows the prompt's header, not another candidate): a prompt artefact "
            "rather than a graded preference for later positions."
        )
    else:
        text += ": no step at the first slot that stands out from the other positions, so no first-slot artefact."
    skew, rest = d["skew"], d["skew_without_first"]
    if skew and rest:
        holds = rest["mean_diff"] > 0 and rest["p"] < 0.05
        text += (
            f" Without position 0 the first third still gets "
            f"{'less' if rest['mean_diff'] > 0 else 'no less'} exposure than the last (tail − head "
            f"{signed(rest['mean_diff'])}, {p_equals(rest['p'])}, against {signed(skew['mean_diff'])} with it), so "
            + (
                "the early-position deficit does not rest on position 0 alone, though position 0 makes it larger."
                if holds
                else "the early-position deficit rests on position 0: the claim's verdict is the first slot's."
            )
        )
    if choice is not None:
        c = first_position_effect(choice[1], BASELINE_METHOD)
        if c is not None:
            text += (
                f" The choice scorer, whose candidates are labels [A], [B], … with no such header effect, does the "
                f"opposite at its position 0 (K = {choice[0].K}): the first candidate reaches the top 5 in "
                f"{c['exposure_first']:.0%} of rows, its score {signed(c['shift'][0], 2)} above the same candidate "
                f"elsewhere."
            )
    return text
