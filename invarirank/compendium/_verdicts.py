"""The paper's claims on a run, resolved or not: verdicts, their sentences, and the marks of Table 1.

Every verdict is judged here from a run's ``metrics.json`` ``comparisons`` by the one judge,
:func:`invarirank.evaluation._claims.judge_pairs` (through :func:`~invarirank.evaluation._claims.judge_claims`); a
``claims`` key that older files carry is not read, and a schema-1 file has no comparisons, so no verdict (never a
guessed one). The rules: a pair (expected better, expected worse) is **resolved** when its Holm-adjusted paired
sign-flip p < 0.05 over the claim's pairs; a claim is **reproduced** when every pair is resolved in the paper's
direction, **contradicted** when some pair's observed difference goes the other way (resolved or not), else
**unresolved**. Differences are "expected better minus expected worse", in the metric's units.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..evaluation._claims import judge_claims
from ..evaluation._comparisons import ALPHA, EXACT_MAX_QUERIES, PERMUTATIONS
from ..store import Run
from ._labels import METHODS, method_label, metric_label, model_label, p_equals, signed

#: digits as superscripts, for a power written in prose ("2/2⁵")
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")

#: Table 1's mark of a claimed pair, by its state (see :func:`pair_state`)
MARKS = {"resolved": "●", "against": "✗", "unresolved": "○"}


def run_claims(run: Run) -> dict[str, dict]:
    """The run's verdicts, ``{claim name: verdict dict}`` (shape: :func:`invarirank.evaluation._claims.judge_claim`),
    in the order of :data:`~invarirank.evaluation._claims.PAPER_CLAIMS`, judged from its ``comparisons``; ``{}`` for
    a schema-1 file or a run without the methods of any claim."""
    comparisons = run.metrics.get("comparisons")
    return judge_claims(comparisons) if comparisons else {}


def _labelled(text: str) -> str:
    """A claim's text with display names for the methods (``sgs > zero_shot`` → ``SGS > zero-shot``)."""
    return re.sub(r"[A-Za-z_]+", lambda m: method_label(m.group(0)) if m.group(0) in METHODS else m.group(0), text)


def claim_label(verdict: Mapping[str, Any]) -> str:
    """The claim in words, in the book's one ordering notation ``better ≻ worse`` (on the metric named), built from
    its pairs: an ordering ``LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW``, a best method
    ``HR@5: STELLA_LW ≻ zero-shot, bootstrapping, SGS``, methods against one ``exposure MAD: bootstrapping, SGS,
    STELLA_LW ≻ zero-shot``."""
    pairs = [(p["better"], p["worse"]) for p in verdict.get("pairs") or []]
    name = method_label
    if not pairs:
        return f"{metric_label(verdict['metric'])}: {_labelled(verdict['claim'])}"
    if all(a[1] == b[0] for a, b in zip(pairs, pairs[1:])):
        text = " ≻ ".join(name(m) for m in [pairs[0][0]] + [w for _, w in pairs])
    elif len({b for b, _ in pairs}) == 1:
        text = f"{name(pairs[0][0])} ≻ {', '.join(name(w) for _, w in pairs)}"
    elif len({w for _, w in pairs}) == 1:
        text = f"{', '.join(name(b) for b, _ in pairs)} ≻ {name(pairs[0][1])}"
    else:
        text = "; ".join(f"{name(b)} ≻ {name(w)}" for b, w in pairs)
    return f"{metric_label(verdict['metric'])}: {text}"


def pair_state(pair: Mapping[str, Any]) -> str:
    """``resolved`` (in the paper's direction), ``against`` (resolved the other way) or ``unresolved``."""
    if not pair["resolved"]:
        return "unresolved"
    return "resolved" if pair["direction"] == "as claimed" else "against"


def claim_marks(run: Run) -> dict[tuple[str, str], list[str]]:
    """``{(method, metric): ["● vs bootstrapping", ...]}``: for each claimed pair, a mark on the row of the method
    the paper finds better, naming the method it should beat (:data:`MARKS`), and "other way" when an unresolved
    pair's observed difference has the wrong sign."""
    out: dict[tuple[str, str], list[str]] = {}
    for verdict in run_claims(run).values():
        for pair in verdict["pairs"]:
            other = ", other way" if pair["direction"] == "reversed" and not pair["resolved"] else ""
            out.setdefault((pair["better"], verdict["metric"]), []).append(
                f"{MARKS[pair_state(pair)]} vs {method_label(pair['worse'])}{other}"
            )
    return out


def smallest_p(n: int, permutations: int | None = PERMUTATIONS) -> float:
    """The smallest p-value the paired sign-flip test can give with ``n`` queries: 2 / 2^n when it enumerates every
    sign vector (n <= 16: the identity and its negation always count), else 1 / (1 + permutations)."""
    if n <= EXACT_MAX_QUERIES:
        return 2.0 / 2**n
    return 1.0 / (1 + int(permutations or PERMUTATIONS))


def resolution_sentence(run: Run) -> str:
    """Why the run can or cannot resolve the claims' pairs, from its number of paired queries: with n queries the
    smallest exact two-sided sign-flip p is 2/2^n (0.0625 at n = 5), and Holm multiplies the smallest p of a claim
    of m pairs by m."""
    claims = run_claims(run)
    if not claims:
        if not run.metrics.get("comparisons"):
            return (
                f"{model_label(run.model)}, K = {run.K}: no verdicts (the run's metrics.json holds no paired "
                f"comparisons)."
            )
        return (
            f"{model_label(run.model)}, K = {run.K}: this run alone judges none of the paper's method claims "
            f"(it has {', '.join(method_label(m) for m in run.methods)}; each claim compares methods it lacks), "
            f"so its Table 1 has no marks; the claims' table below judges what this grid's runs together allow."
        )
    n = min(p["n"] for v in claims.values() for p in v["pairs"])
    flips = (run.metrics.get("settings") or {}).get("permutations") or PERMUTATIONS
    floor = smallest_p(n, flips)
    pairs = max(len(v["pairs"]) for v in claims.values())
    head = f"With n = {n} queries"
    if n <= EXACT_MAX_QUERIES:
        how = f"the smallest exact two-sided sign-flip p-value is 2/2{str(n).translate(SUPERSCRIPT)} = {floor:.4g}"
    else:
        how = f"the smallest sign-flip p-value with {flips:,} random sign vectors is 1/{flips + 1:,} = {floor:.2g}"
    if floor >= ALPHA:
        return (
            f"{head}, {how}, not below {ALPHA} even before Holm's correction: no pair of methods can be resolved "
            f"in this run, whatever the differences. A pair needs at least {fewest_queries(1)} queries, a claim of "
            f"{pairs} pairs at least {fewest_queries(pairs)} queries under Holm's correction; the queries that "
            f"would resolve each observed difference at 80% power (normal approximation) are in the run's "
            f"metrics.json (queries_80 of each claimed pair)."
        )
    if floor * pairs >= ALPHA:
        return (
            f"{head}, {how}; times {pairs} (Holm's correction over a claim's {pairs} pairs) it is not below "
            f"{ALPHA}, so a claim of {pairs} pairs cannot be resolved; it needs at least {fewest_queries(pairs)} "
            f"queries."
        )
    return (
        f"{head}, {how}: small enough for every pair to be resolved after Holm's correction, so an unresolved "
        f"pair means a difference too small (or too variable) for this many queries, not too few queries to "
        f"ever decide."
    )


def fewest_queries(pairs: int, alpha: float = ALPHA) -> int:
    """The fewest queries with which the exact sign-flip test can resolve a pair of a claim of ``pairs`` pairs under
    Holm's correction: the smallest n with pairs · 2/2^n < alpha (6 for one pair, 7 for three)."""
    n = 1
    while pairs * smallest_p(n) >= alpha:
        n += 1
    return n


def queries_needed(pair: Mapping[str, Any], pairs: int) -> int | None:
    """The queries that would resolve an unresolved pair with 80% power: its ``queries_80`` (normal approximation
    from the observed mean and spread), raised to :func:`fewest_queries` of its claim (which the approximation
    does not know); ``None`` when there is no estimate (a zero difference) or the observed difference has the wrong
    sign (more queries would resolve the opposite of the claim, not the claim)."""
    q = pair.get("queries_80")
    if not q or pair.get("direction", "as claimed") != "as claimed":  # no power for a difference of the wrong sign
        return None
    return max(int(q), fewest_queries(pairs))


def verdict_sentence(verdict: Mapping[str, Any]) -> str:
    """One claim's verdict in words, e.g. ``LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW — unresolved: 1 of 3
    pairs resolved in the paper's direction (SGS vs bootstrapping); unresolved: ... (Holm p = 0.190; about 120
    queries for 80% power).``"""
    return f"{claim_label(verdict)} — {verdict['verdict']}: {_pair_summary(verdict)}"


def _pair_summary(verdict: Mapping[str, Any]) -> str:
    """The pairs of a verdict by state, in words (the part of :func:`verdict_sentence` after the verdict)."""
    pairs = verdict["pairs"]
    by_state: dict[str, list[Mapping[str, Any]]] = {"resolved": [], "against": [], "unresolved": []}
    for p in pairs:
        by_state[pair_state(p)].append(p)

    def names(p: Mapping[str, Any]) -> str:
        return f"{method_label(p['better'])} vs {method_label(p['worse'])}"

    parts = [
        f"{len(by_state['resolved'])} of {len(pairs)} pairs resolved in the paper's direction"
        + (f" ({', '.join(names(p) for p in by_state['resolved'])})" if by_state["resolved"] else "")
    ]
    if by_state["against"]:
        parts.append(
            "resolved against the paper: "
            + ", ".join(
                f"{names(p)} (difference {signed(p['mean_diff'])}, {p_equals(p['p_holm'], 'Holm p')})"
                for p in by_state["against"]
            )
        )
    if by_state["unresolved"]:

        def need(p: Mapping[str, Any]) -> str:
            q = queries_needed(p, len(pairs))
            return f"; about {q:,} queries for 80% power" if q else ""

        parts.append(
            "unresolved: "
            + ", ".join(
                f"{names(p)} ({'the other way, ' if p['direction'] == 'reversed' else ''}"
                f"{p_equals(p['p_holm'], 'Holm p')}{need(p)})"
                for p in by_state["unresolved"]
            )
        )
    return "; ".join(parts) + "."


def verdicts_html(runs: Sequence[Run]) -> str:
    """For each run with verdicts, a heading line (model, K, queries) and one list item per claim, carrying
    ``data-claim`` and ``data-verdict`` attributes; a final note says how the query counts were estimated."""
    import html

    blocks = []
    for run in runs:
        claims = run_claims(run)
        if not claims:
            continue
        items = "".join(
            f'<li data-run="{html.escape(run.name)}" data-claim="{html.escape(name)}" '
            f'data-verdict="{html.escape(v["verdict"])}">{html.escape(claim_label(v))} — '
            f"<strong>{html.escape(v['verdict'])}</strong>: {html.escape(_pair_summary(v))} "
            f"<small>(The paper: {html.escape(v['source'])}.)</small></li>"
            for name, v in claims.items()
        )
        blocks.append(
            f"<p><strong>{html.escape(model_label(run.model))}</strong>, {html.escape(run.scorer)} scorer, "
            f"K = {run.K}, M = {run.M}, {run.n_queries} queries. "
            f"{html.escape(resolution_sentence(run))}</p><ul>{items}</ul>"
        )
    if not blocks:
        return "<p>No run shown here holds the paired comparisons of the claims' methods.</p>"
    return "".join(blocks) + (
        "<p>Resolved: paired sign-flip p-value, Holm-adjusted over the claim's pairs, below 0.05. Queries for 80% "
        "power: from the observed mean difference and its spread over queries, by the normal approximation, and never "
        "fewer than the exact test needs to resolve a pair of the claim at all.</p>"
    )
