"""The paper's claims about its methods, kept as data in one place, and their verdicts on a run's comparisons.

A claim is a set of pairs (expected better, expected worse) on one metric. An ordering claim (methods best first)
has the adjacent pairs; "X is best" has X against each other method; "below zero-shot" has each method against
zero-shot. A claim is judged from the paired comparisons of :mod:`._comparisons` (never typed by hand):

- the claim's raw p-values get **Holm's correction** over the claim's own pairs (step-down:
  p_(i) sorted ascending, adjusted p_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)), m = number of pairs);
- a pair is **resolved** when its adjusted p < ``ALPHA`` (0.05); its direction is "as claimed" when the expected
  better method is better on the run (mean difference better - worse > 0 when higher is better, < 0 when lower is
  better), "reversed" when it is the other way, "tie" when the difference is 0;
- the claim is **reproduced** when every pair is resolved as claimed, **contradicted** when some pair's observed
  difference goes the other way (resolved or not; ``resolved_against`` tells which), otherwise **unresolved**;
- each unresolved pair in the claimed direction carries ``queries_80``, the queries that would resolve its observed
  difference at 80 % power (normal approximation at alpha = 0.05, unadjusted: see
  :func:`._comparisons.queries_for_power`); a pair of the wrong sign has none.

:func:`judge_pairs` is the one judge (the book and ``invarirank report`` call it); :func:`invarirank.evaluate`
compares methods but judges no claim, since its input may be any reranker's observations.

Method names are the package's: ``zero_shot``, ``bootstrapping``, ``sgs``, ``stella`` (STELLA_LW).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ._comparisons import ALPHA, comparison


class Claim(NamedTuple):
    """``pairs``: (expected better, expected worse) method names; ``higher_is_better`` fixes what "better" means
    on ``metric``; ``text`` is the claim in the metric's own terms (">" and "<" compare the metric's values)."""

    name: str
    metric: str
    pairs: tuple[tuple[str, str], ...]
    higher_is_better: bool
    text: str
    source: str

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for pair in self.pairs for m in pair))


def _rel(higher_is_better: bool) -> str:
    return " > " if higher_is_better else " < "


def ordering_claim(name: str, metric: str, best_first: Sequence[str], higher_is_better: bool, source: str) -> Claim:
    """``best_first[0]`` better than ``best_first[1]`` better than ...: the adjacent pairs."""
    pairs = tuple(zip(best_first[:-1], best_first[1:]))
    return Claim(name, metric, pairs, higher_is_better, _rel(higher_is_better).join(best_first), source)


def best_claim(name: str, metric: str, best: str, others: Sequence[str], higher_is_better: bool, source: str) -> Claim:
    """``best`` better than each of ``others``."""
    return Claim(
        name,
        metric,
        tuple((best, o) for o in others),
        higher_is_better,
        f"{best}{_rel(higher_is_better)}{', '.join(others)}",
        source,
    )


def below_claim(name: str, metric: str, methods: Sequence[str], reference: str, source: str) -> Claim:
    """Each of ``methods`` has a lower ``metric`` than ``reference`` (lower is better)."""
    return Claim(
        name, metric, tuple((m, reference) for m in methods), False, f"{', '.join(methods)} < {reference}", source
    )


_CONSISTENCY_ORDER = ("sgs", "bootstrapping", "zero_shot", "stella")  # best first; the paper's claims too
PAPER_CLAIMS: tuple[Claim, ...] = (
    ordering_claim(
        "loc_order",
        "loc",
        _CONSISTENCY_ORDER,
        True,
        "§5 Results, 'Output consistency' (all six model-dataset cells, K = 25)",
    ),
    ordering_claim(
        "ppi_order",
        "ppi",
        _CONSISTENCY_ORDER,
        False,
        "§5 Results, 'Preference consistency' (same ordering for PPI and GPI throughout)",
    ),
    ordering_claim(
        "gpi_order",
        "gpi",
        _CONSISTENCY_ORDER,
        False,
        "§5 Results, 'Preference consistency' (same ordering for PPI and GPI throughout)",
    ),
    best_claim(
        "hr5_stella_best",
        "hr@5",
        "stella",
        ("zero_shot", "bootstrapping", "sgs"),
        True,
        "§5 Results, 'Effectiveness' (STELLA_LW obtains the highest HR@5 for all three models)",
    ),
    below_claim(
        "exposure_flattened",
        "exposure_mad@5",
        ("bootstrapping", "sgs", "stella"),
        "zero_shot",
        "§5 Results, 'Marginal position exposure' (Figure 1: the mitigations flatten top-5 exposure)",
    ),
)


def paper_claim(name: str) -> Claim:
    """The claim of :data:`PAPER_CLAIMS` called ``name`` (an ordering claim's ``methods`` are its order, best
    first); an unknown name raises ``KeyError``."""
    for claim in PAPER_CLAIMS:
        if claim.name == name:
            return claim
    raise KeyError(name)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order (ties keep their input order)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def judge_pairs(pairs: Sequence[Mapping[str, Any]], alpha: float = ALPHA) -> dict | None:
    """The one judge of a claim of the paper: every verdict of the package and the book comes from here.

    ``pairs``: one record per claimed pair, ``{"better", "worse", "metric", "higher_is_better", "mean_diff",
    "p", "n"}`` (``mean_diff`` = better minus worse in the metric's units, ``p`` the raw two-sided paired p), with
    optional ``ci`` and ``queries_80`` and any other keys (kept as they are). A claim may span several metrics or
    runs: Holm's correction is taken over all of its pairs. Returns ``{"verdict", "resolved_against", "pairs"}``,
    each pair with ``p_holm``, ``direction`` ("as claimed" | "reversed" | "tie"), ``resolved`` and ``queries_80``
    (kept only for an unresolved pair whose observed difference goes the paper's way: a power figure for a
    difference of the wrong sign would plan for the opposite claim). ``None`` for no pairs.

    Verdicts: **reproduced** when every pair is resolved as claimed; **contradicted** when some pair's observed
    difference goes the other way, resolved or not (``resolved_against`` says whether one such pair is resolved:
    a reversal that the queries cannot resolve is still not the paper's finding, and the book says which);
    **unresolved** otherwise (every difference in the paper's direction or tied, some not resolved).
    """
    if not pairs:
        return None
    adjusted = holm([float(p["p"]) for p in pairs])
    out = []
    for rec, p_holm in zip(pairs, adjusted):
        d = float(rec["mean_diff"])
        gain = d if rec["higher_is_better"] else -d
        direction = "as claimed" if gain > 0 else "reversed" if gain < 0 else "tie"
        resolved = p_holm < alpha
        out.append(
            {
                **rec,
                "p_holm": p_holm,
                "direction": direction,
                "resolved": resolved,
                "queries_80": rec.get("queries_80") if not resolved and direction == "as claimed" else None,
            }
        )
    reversed_ = [p for p in out if p["direction"] == "reversed"]
    if reversed_:
        verdict = "contradicted"
    elif all(p["resolved"] and p["direction"] == "as claimed" for p in out):
        verdict = "reproduced"
    else:
        verdict = "unresolved"
    return {"verdict": verdict, "resolved_against": any(p["resolved"] for p in reversed_), "pairs": out}


def judge_claim(claim: Claim, comparisons: Mapping[str, Any], alpha: float = ALPHA) -> dict | None:
    """The verdict of ``claim`` on a run's comparisons by :func:`judge_pairs` (``None`` when some pair of it was not
    compared: a method or the metric is missing from the run)::

        {"metric": ..., "higher_is_better": ..., "claim": TEXT, "source": ..., "verdict": "reproduced",
         "resolved_against": bool,
         "pairs": [{"better": A, "worse": B, "mean_diff": mean(A - B), "ci": [...], "n": ..., "p": raw,
                    "p_holm": ..., "direction": "as claimed" | "reversed" | "tie", "resolved": bool,
                    "queries_80": int | None}, ...]}
    """
    found = [comparison(comparisons, claim.metric, better, worse) for better, worse in claim.pairs]
    if not found or any(r is None for r in found):
        return None
    records = [
        {
            "better": better,
            "worse": worse,
            "mean_diff": rec["mean_diff"],
            "ci": rec["ci"],
            "n": rec["n"],
            "p": rec["p"],
            "queries_80": rec["queries_80"],
            "metric": claim.metric,
            "higher_is_better": claim.higher_is_better,
        }
        for (better, worse), rec in zip(claim.pairs, found)
        if rec is not None
    ]
    judged = judge_pairs(records, alpha)
    assert judged is not None  # records is not empty
    return {
        "metric": claim.metric,
        "higher_is_better": claim.higher_is_better,
        "claim": claim.text,
        "source": claim.source,
        **judged,
    }


def judge_claims(
    comparisons: Mapping[str, Any], claims: Sequence[Claim] = PAPER_CLAIMS, alpha: float = ALPHA
) -> dict[str, dict]:
    """``{claim name: judge_claim(...)}`` for the claims whose pairs were all compared, in the order of ``claims``."""
    out = {}
    for claim in claims:
        verdict = judge_claim(claim, comparisons, alpha)
        if verdict is not None:
            out[claim.name] = verdict
    return out
