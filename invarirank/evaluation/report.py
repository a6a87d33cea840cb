"""Readable plain-text tables of a metrics dictionary (what ``invarirank evaluate`` prints): the metrics of each
method (:func:`format_table`), then the paired comparisons and the claims' verdicts (:func:`format_comparisons`)."""

from __future__ import annotations

from typing import Any

__all__ = ["format_table"]

#: the metrics the reference block shows, in this order
REFERENCE_METRICS = ("hr@5", "ndcg@5", "ppi", "gpi", "loc")
_REFERENCE_TITLES = {
    "first_stage": "first-stage order (the retriever's own ranking; consistency perfect by construction)",
    "random": "random order (exact expectation; PPI/GPI/LOC over seeded random draws)",
}


def _fmt(x: Any, digits: int = 4, sign: str = "") -> str:
    return "-" if x is None else f"{x:{sign}.{digits}f}"


def _fmt_p(p: float) -> str:
    return f"{p:.4f}" if p >= 1e-3 else f"{p:.1e}"


def _scalar_names(overall: dict) -> list[str]:
    names = [
        k
        for k, v in overall.items()
        if k != "ci" and not isinstance(v, list) and not k.endswith("_queries") and k not in ("queries", "rows")
    ]
    return names


def format_table(metrics: dict, digits: int = 4) -> str:
    """One block per method: each scalar metric with its 95% interval, then exposure by presented position.

    Example (abridged)::

        zero_shot: 500 queries, 10000 rows
          metric              value  95% CI
          hr@5               0.5560  [0.5120, 0.6000]
          ...
          exposure@5 by presented position (expected 0.2000):
            p 0-9    0.41 0.30 ...

    Stability: caller (a readable table of a metrics dictionary).
    """
    lines: list[str] = []
    for method, block in metrics.get("methods", {}).items():
        ov = block["overall"]
        ci = ov.get("ci", {})
        lines.append(
            f"{method}: {ov['queries']} queries, {ov['rows']} rows "
            f"(PPI on {ov.get('ppi_queries', '-')}, GPI/LOC on {ov.get('gpi_queries', '-')})"
        )
        names = _scalar_names(ov)
        width = max([len(n) for n in names] + [6])
        lines.append(f"  {'metric':<{width}}  {'value':>{digits + 3}}  95% CI")
        for name in names:
            interval = ci.get(name)
            ci_text = f"[{_fmt(interval[0], digits)}, {_fmt(interval[1], digits)}]" if interval else ""
            lines.append(f"  {name:<{width}}  {_fmt(ov[name], digits):>{digits + 3}}  {ci_text}".rstrip())
        if ov.get("gpi") is not None and ov.get("gpi_exact") is not None:
            lines.append(
                f"  (GPI's local search missed the exact Kemeny optimum on "
                f"{ov.get('gpi_suboptimal_queries')} of {ov.get('gpi_queries')} queries)"
            )
        elif ov.get("gpi") is not None:
            lines.append("  (gpi_exact: not computed — the exact search is off or some query's K is above its limit)")
        for key, values in ov.items():
            if key.startswith("exposure@") and isinstance(values, list):
                e = key.split("@", 1)[1]
                expected = ov.get(f"expected_exposure@{e}") or []
                distinct = {round(x, 4) for x in expected if x is not None}
                exp_text = f"expected {next(iter(distinct)):.4f}" if len(distinct) == 1 else "expected varies with K"
                lines.append(f"  {key} by presented position ({exp_text}):")
                for p0 in range(0, len(values), 10):
                    chunk = values[p0 : p0 + 10]
                    label = f"p {p0}-{p0 + len(chunk) - 1}"
                    lines.append(f"    {label:<8} " + " ".join(_fmt(v, 2) for v in chunk))
        lines.append("")
    refs = format_references(metrics, digits)
    if refs:
        lines.append(refs)
    return "\n".join(lines).rstrip() + "\n"


def format_references(metrics: dict, digits: int = 4) -> str:
    """The reference rows (``metrics["references"]``): each reference's HR@5, nDCG@5, PPI, GPI and LOC
    with 95% intervals, then every method minus the reference with its sign-flip p; ``""`` when there are none.

    Example (abridged)::

        reference: random order (exact expectation; PPI/GPI/LOC over seeded random draws), 40 queries
          hr@5     0.7214  [0.6571, 0.7857]
          method - reference:  hr@5               ppi
          zero_shot            +0.0396 (p 0.31)   -0.3555 (p 1.0e-04)
    """
    lines: list[str] = []
    for name, block in (metrics.get("references") or {}).items():
        ov = block.get("overall") or {}
        ci = ov.get("ci") or {}
        shown = [m for m in REFERENCE_METRICS if m in ov]
        lines.append(f"reference: {_REFERENCE_TITLES.get(name, name)}, {ov.get('queries', '-')} queries")
        for m in shown:
            interval = ci.get(m)
            ci_text = f"[{_fmt(interval[0], digits)}, {_fmt(interval[1], digits)}]" if interval else ""
            lines.append(f"  {m:<7}  {_fmt(ov[m], digits):>{digits + 3}}  {ci_text}".rstrip())
        comp = block.get("comparisons") or {}
        methods = list(dict.fromkeys(meth for m in shown for meth in comp.get(m, {})))
        if methods:
            wm = max(len(x) for x in methods + ["method - reference:"])
            cell = digits + 16
            lines.append(f"  {'method - reference:':<{wm}}  " + "".join(f"{m:<{cell}}" for m in shown).rstrip())
            for meth in methods:
                cells = []
                for m in shown:
                    rec = comp.get(m, {}).get(meth)
                    cells.append(
                        "-" if rec is None else f"{_fmt(rec['mean_diff'], digits, '+')} (p {_fmt_p(rec['p'])})"
                    )
                lines.append(f"  {meth:<{wm}}  " + "".join(f"{c:<{cell}}" for c in cells).rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + ("\n" if lines else "")


def format_comparisons(metrics: dict, digits: int = 4, claims: bool = False) -> str:
    """The ``comparisons`` (one line per metric and pair) of a metrics dictionary and, with ``claims``, the paper's
    claims judged from them by the one judge (a verdict line, then one line per pair); the empty string when it has
    no comparisons (one method, or comparisons off). ``claims`` is for a run of the paper's methods (``invarirank
    report``); ``invarirank evaluate`` leaves it off, since its input may be any reranker's observations.

    Example (abridged)::

        paired comparisons: mean A - B over shared queries, 95% paired bootstrap CI, two-sided sign-flip p (...),
          q80 = queries that would resolve the difference with 80% power at alpha 0.05 (normal approximation)
          metric  A          B               n   mean A-B  95% CI                   p      q80
          loc     zero_shot  bootstrapping  500   -0.1121  [-0.1302, -0.0950]  1.0e-04        -
        claims (Holm over each claim's pairs; a pair is resolved when its adjusted p < 0.05):
          loc_order: reproduced (loc: sgs > bootstrapping > zero_shot > stella)
            sgs vs bootstrapping  +0.0712  p 1.0e-04  Holm 3.0e-04  resolved, as claimed
    """
    from ._comparisons import ALPHA, EXACT_MAX_QUERIES

    comparisons = metrics.get("comparisons") or {}
    rows = [
        (metric, a, b, rec)
        for metric, by_a in comparisons.items()
        for a, by_b in by_a.items()
        for b, rec in by_b.items()
    ]
    if not rows:
        return ""
    flips = (metrics.get("settings") or {}).get("permutations")
    wm = max(len(r[0]) for r in rows + [("metric",)])
    wa = max(len(r[1]) for r in rows + [(0, "A")])
    wb = max(len(r[2]) for r in rows + [(0, 0, "B")])
    lines = [
        f"paired comparisons: mean A - B over shared queries, 95% paired bootstrap CI, two-sided sign-flip p "
        f"(exact for n <= {EXACT_MAX_QUERIES} queries, else {flips} seeded flips),",
        f"  q80 = queries that would resolve the difference with 80% power at alpha {ALPHA} (normal approximation)",
        f"  {'metric':<{wm}}  {'A':<{wa}}  {'B':<{wb}}  {'n':>5}  {'mean A-B':>{digits + 4}}  "
        f"{'95% CI':<{2 * digits + 10}}  {'p':>7}  {'q80':>7}",
    ]
    for metric, a, b, rec in rows:
        ci = rec.get("ci")
        ci_text = f"[{_fmt(ci[0], digits, '+')}, {_fmt(ci[1], digits, '+')}]" if ci else "-"
        q80 = rec.get("queries_80")
        lines.append(
            f"  {metric:<{wm}}  {a:<{wa}}  {b:<{wb}}  {rec['n']:>5}  "
            f"{_fmt(rec['mean_diff'], digits, '+'):>{digits + 4}}  {ci_text:<{2 * digits + 10}}  "
            f"{_fmt_p(rec['p']):>7}  {'-' if q80 is None else q80:>7}"
        )
    from ._claims import judge_claims

    judged = judge_claims(comparisons) if claims else {}  # the one judge, never a verdict stored in the file
    if judged:
        lines.append(f"claims (Holm over each claim's pairs; a pair is resolved when its adjusted p < {ALPHA}):")
        for name, c in judged.items():
            lines.append(f"  {name}: {c['verdict']} ({c['metric']}: {c['claim']})")
            for p in c["pairs"]:
                state = "resolved" if p["resolved"] else "unresolved"  # direction: as claimed / reversed / tie
                need = (
                    f"; ~{p['queries_80']} queries for 80% power (normal approximation)"
                    if not p["resolved"] and p["queries_80"]
                    else ""
                )
                lines.append(
                    f"    {p['better']} vs {p['worse']}  {_fmt(p['mean_diff'], digits, '+')}  "
                    f"p {_fmt_p(p['p'])}  Holm {_fmt_p(p['p_holm'])}  {state}, {p['direction']}{need}"
                )
    return "\n".join(lines) + "\n"
