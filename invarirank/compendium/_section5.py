"""Every claim of the paper's §5 (Results) on our runs, judged: one row per claim (the table of them and the
headline that counts them: :mod:`invarirank.compendium._section5_page`).

Notation: ``A ≻ B`` reads "A is better than B" on the metric named (higher HR@k, nDCG@k and LOC; lower PPI, GPI
and exposure deviation). Every claim is judged by the one judge, :func:`invarirank.evaluation._claims.judge_pairs`:
paired sign-flip p-values over queries, Holm-adjusted over the claim's pairs (claims that combine several metrics
or list lengths take Holm over all of them); a pair is resolved when its adjusted p < 0.05. Each row falls in one
of the headline's categories (:data:`CATEGORIES`): **reproduced** (every pair resolved in the paper's direction),
**reproduced by construction** (true of the code, not a finding), **tested in part** (reproduced on what we could
test, and the row says what was not), **unresolved** (every difference in the paper's direction, some not
resolved), **contradicted** (some observed difference in the opposite direction, resolved or not: the row says
which), or not testable here (with the reason). Every value comes from the runs' ``metrics.json`` and, for the
exposure skew, their observations; nothing is typed here but the paper's own wording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..evaluation._claims import judge_pairs
from ..evaluation._comparisons import comparison
from ..evaluation._position_effects import exposure_skew
from ..methods.registry import SWEEP_METHODS
from ..store import Run
from ._labels import HIGHER_IS_BETTER, method_label, metric_label, model_label, p_equals, signed
from ._verdicts import MARKS, claim_label, pair_state, run_claims

#: the one ordering notation of the book: "A ≻ B" = A is better than B on the metric named
BETTER = " ≻ "

NOT_TESTABLE = "not testable here"
#: the headline's categories of a testable claim, in the order it names them
CATEGORIES = ("reproduced", "reproduced by construction", "tested in part", "unresolved", "contradicted")
#: between the pieces of evidence of one claim (one pair per line in the table)
SEP = "; "


class Pair(NamedTuple):
    """One claimed pair: on ``metric`` (of ``run``), ``better`` should beat ``worse``."""

    run: Run
    metric: str
    better: str
    worse: str


def pair_records(pairs: Sequence[Pair]) -> list[dict] | None:
    """The records of claimed ``pairs`` (possibly over several metrics and runs) for the one judge,
    :func:`invarirank.evaluation._claims.judge_pairs`, each keeping its :class:`Pair` under ``"pair"``; ``None``
    when some pair was not compared in its run."""
    records = []
    for pair in pairs:
        rec = comparison(pair.run.metrics.get("comparisons") or {}, pair.metric, pair.better, pair.worse)
        if rec is None:
            return None
        records.append(
            {
                "pair": pair,
                "better": pair.better,
                "worse": pair.worse,
                "metric": pair.metric,
                "higher_is_better": HIGHER_IS_BETTER.get(pair.metric, True),
                **{key: rec[key] for key in ("mean_diff", "n", "p", "queries_80") if key in rec},
            }
        )
    return records or None


def _judge(pairs: Sequence[Pair]) -> dict | None:
    records = pair_records(pairs)
    return judge_pairs(records) if records else None


def _count(n: int, noun: str) -> str:
    """``one model``, ``two models``, ``12 models``: small counts in words, as the sentences around them."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"{words.get(n, str(n))} {noun}{'' if n == 1 else 's'}"


def _sweep_runs(sweep: Sequence[Run], methods: Sequence[str]) -> list[Run]:
    return [r for r in sweep if all(m in r.methods for m in methods)]


def _pair_text(p: Mapping[str, Any], where: str = "") -> str:
    """One judged pair: its mark, ``better ≻ worse``, Δ (better − worse) and Holm p; a difference of the wrong sign
    that is not resolved says so in words (its mark alone, ○, would read as merely undecided)."""
    other = ", the other way" if p["direction"] == "reversed" and not p["resolved"] else ""
    return (
        f"{MARKS[pair_state(p)]} {method_label(p['better'])}{BETTER}{method_label(p['worse'])}{where} "
        f"(Δ {signed(p['mean_diff'])}{other}, {p_equals(p['p_holm'], 'Holm p')})"
    )


def _category(judged: Sequence[Mapping[str, Any]], in_part: bool = False) -> str:
    """The headline category of a claim judged once per run (the worst of them): contradicted, unresolved, else
    reproduced, or tested in part when only part of the claim could be tested."""
    verdicts = {j["verdict"] for j in judged}
    if "contradicted" in verdicts:
        return "contradicted"
    if "unresolved" in verdicts:
        return "unresolved"
    return "tested in part" if in_part else "reproduced"


def _verdict_text(j: Mapping[str, Any]) -> str:
    """A verdict in words: a contradiction says whether it is resolved."""
    if j["verdict"] != "contradicted":
        return j["verdict"]
    if j["resolved_against"]:
        return "contradicted (resolved against the paper)"
    return "contradicted (observed the other way, not resolved)"


def _of_claim(name: str, runs: Sequence[Run]) -> dict[str, Any]:
    """The row fields of a named paper claim on each of ``runs`` that has it: ``tested``, ``verdict``, ``evidence``,
    ``category`` and ``claims`` ([(run, claim name, verdict)], for the table's data attributes)."""
    tested, verdicts, evidence, judged, found = "", [], [], [], []
    for run in runs:
        v = run_claims(run).get(name)
        if v is None:
            continue
        tested = claim_label(v)
        who = f"{model_label(run.model)}, {run.n_queries} queries" if len(runs) > 1 else ""
        verdicts.append(_verdict_text(v) + (f" ({who})" if who else ""))
        evidence.append((f"{who}: " if who else "") + SEP.join(_pair_text(p) for p in v["pairs"]))
        judged.append(v)
        found.append((run.name, name, v["verdict"]))
    if not verdicts:
        return {"tested": tested or "–", "verdict": NOT_TESTABLE, "evidence": "the runs shown lack one of the "
                "claim's methods", "category": NOT_TESTABLE, "claims": []}  # fmt: skip
    return {
        "tested": tested,
        "verdict": "; ".join(verdicts),
        "evidence": SEP.join(evidence),
        "category": _category(judged),
        "claims": found,
    }


def _contrast(main: Run) -> str:
    """Where STELLA_LW stands on HR@5 and PPI among the main run's methods, against the paper's central contrast
    (STELLA_LW the most effective and the least consistent)."""
    ov = {m: main.metrics["methods"][m]["overall"] for m in main.methods}
    if "stella" not in ov or len(ov) < 2:
        return ""
    hr = {m: v["hr@5"] for m, v in ov.items()}
    others = [hr[m] for m in hr if m != "stella"]
    rank = "the lowest" if hr["stella"] < min(others) else "not the highest" if hr["stella"] < max(others) else ""
    if not rank:
        return ""
    worst_ppi = max(ov, key=lambda m: ov[m]["ppi"]) == "stella"
    return (
        f"Our STELLA_LW has {rank} HR@5 of the {len(hr)} methods ({hr['stella']:.3f}; the others "
        f"{min(others):.3f}–{max(others):.3f}). The paper's central contrast — STELLA_LW the most effective method "
        f"and the least consistent — is therefore not seen here"
        + (": ours is the least consistent (highest PPI) without being the most effective" if worst_ppi else "")
        + "."
    )


def section5_rows(
    main: Run,
    sweep: Sequence[Run],
    table_runs: Sequence[Run] = (),
    exposure_rows: Mapping[str, list[dict]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of :func:`~invarirank.compendium._section5_page.section5_table`: one per claim of the paper's §5, in
    the paper's order, each with the paper's wording, the claim as tested here, the verdict, its evidence (or why
    it cannot be tested) and its headline ``category`` (:data:`CATEGORIES`, or not testable). ``table_runs``: the
    runs at the main run's K with all four methods (a second model joins the verdicts). ``exposure_rows``: each sweep
    run's observation rows (read from its file when missing)."""
    exposure_rows = exposure_rows or {}
    claim_runs = [r for r in (table_runs or [main]) if r.K == main.K and run_claims(r)] or [main]
    n_models = len({r.model for r in claim_runs})
    rows: list[dict[str, Any]] = []

    def add(paragraph: str, paper: str, short: str = "", **fields: Any) -> None:
        category = fields.get("category") or (NOT_TESTABLE if fields["verdict"] == NOT_TESTABLE else "")
        rows.append(
            {
                "§5": paragraph,
                "the paper": paper,
                "tested here (better ≻ worse)": fields["tested"],
                "verdict": fields["verdict"],
                "evidence": fields["evidence"],
                "short": short or fields["tested"],
                "category": category,
                "note": fields.get("note", ""),
                "claims": list(fields.get("claims", [])),
            }
        )

    def untestable(paragraph: str, paper: str, why: str) -> None:
        add(paragraph, paper, tested="–", verdict=NOT_TESTABLE, evidence=why)

    hr5 = _of_claim("hr5_stella_best", claim_runs)
    if hr5["category"] == "contradicted" and _contrast(main):
        hr5["evidence"] += SEP + _contrast(main)
        lowest = "lowest" if "the lowest" in _contrast(main) else "not the highest"
        hr5["note"] = (
            f"our STELLA_LW has the {lowest} HR@5, so the paper's contrast of the most effective and least "
            f"consistent method is not seen"
            if lowest == "lowest"
            else "our STELLA_LW is not the most effective"
        )
    add(
        "Effectiveness",
        "“STELLA_LW obtains the highest HR@5 for all three models on both datasets.”",
        short="STELLA_LW best on HR@5",
        **hr5,
    )
    untestable(
        "Effectiveness",
        "“The best nDCG@5 varies across methods” (SGS, STELLA_LW or bootstrapping, by setting).",
        f"a statement across six model–dataset settings, and we have one data set and {_count(n_models, 'model')} "
        f"with all four methods: there is nothing to vary",
    )
    for name, metric in (("ppi_order", "PPI"), ("gpi_order", "GPI")):
        add(
            "Preference consistency",
            f"“PPI and GPI exhibit the same method ordering … SGS produces the lowest PPI "
            f"and GPI throughout … STELLA_LW produces the highest” ({metric}).",
            short=f"the ordering on {metric}",
            **_of_claim(name, claim_runs),
        )
    persist = _sweep_runs(sweep, SWEEP_METHODS)
    judged = _judge([Pair(r, m, "bootstrapping", "zero_shot") for r in persist for m in ("ppi", "gpi")])
    ks = ", ".join(str(r.K) for r in persist)
    persists = "“Figure 2 shows that this ordering also persists across K ∈ {15, 25, 50}.”"
    if judged is None or len(persist) < 2:
        untestable("Preference consistency", persists, "the runs shown have no K sweep")
    else:
        everywhere = [m for m in main.methods if all(m in r.methods for r in persist)]
        missing = [method_label(m) for m in main.methods if m not in everywhere]
        part = (
            f"Not tested: the rest of the ordering ({', '.join(missing)}) at every K, since "
            f"{'they were' if len(missing) > 1 else 'it was'} run at K = {main.K} only."
            if missing
            else ""
        )
        add(
            "Preference consistency",
            persists,
            short="the ordering persists across K",
            tested=f"PPI and GPI: bootstrapping{BETTER}zero-shot at every K = {ks} (the only methods run at every K)",
            verdict=_verdict_text(judged)
            + (" on the part tested" if part and judged["verdict"] == "reproduced" else ""),
            evidence=SEP.join(
                _pair_text(p, f" ({metric_label(p['metric'])}, K = {p['pair'].run.K})") for p in judged["pairs"]
            )
            + (SEP + part if part else ""),
            category=_category([judged], in_part=bool(part)),
            note="only bootstrapping ≻ zero-shot is tested at every K" if part else "",
        )
    add(
        "Output consistency",
        "“LOC follows the same method ordering as PPI and GPI across all six model–dataset combinations.”",
        short="the ordering on LOC",
        **_of_claim("loc_order", claim_runs),
    )
    stella = main.metrics["methods"].get("stella", {}).get("overall", {}).get("loc")
    untestable(
        "Output consistency",
        "“STELLA_LW produces the lowest LOC, with all values below 0.13.”",
        f"an absolute level reached by 3–7 B models at K = 25, while {model_label(main.model)} has its own scale"
        + (f" (ours at K = {main.K}: {stella:.3f})" if stella is not None else f" (no STELLA_LW run at K = {main.K})"),
    )
    skews = []
    for r in sweep:
        rows_r = exposure_rows.get(r.name)
        if rows_r is None and "zero_shot" in r.methods and r.K > 5:
            from ..evaluation import read_observations

            rows_r = read_observations(r.observations)
        s = exposure_skew(rows_r or [], "zero_shot", 5)
        if s is not None:
            rest = exposure_skew(rows_r or [], "zero_shot", 5, skip_first=True)
            skews.append({"better": "last third", "worse": "first third", "metric": "exposure@5",
                          "higher_is_better": True, "K": r.K, "rest": rest, **s})  # fmt: skip
    skew = judge_pairs(skews) if skews else None
    if skew is not None:
        add(
            "Marginal position exposure",
            "“Zero-shot reranking exhibits substantial positional skew, with early "
            "input positions receiving lower exposure than later positions.”",
            short="zero-shot's early positions lose exposure",
            tested="zero-shot top-5 exposure: last third of input positions ≻ first third, at every K = "
            + ", ".join(str(p["K"]) for p in skew["pairs"]),
            verdict=_verdict_text(skew),
            evidence=SEP.join(
                f"{MARKS[pair_state(p)]} K = {p['K']}: Δ {signed(p['mean_diff'])} ({p_equals(p['p_holm'], 'Holm p')})"
                for p in skew["pairs"]
            )
            + SEP
            + "without input position 0 (the span prompt's first slot, diagnosed under Figure 1), unadjusted: "
            + ", ".join(
                f"K = {p['K']}: Δ {signed(p['rest']['mean_diff'])} ({p_equals(p['rest']['p'])})"
                for p in skew["pairs"]
                if p.get("rest")
            ),
            category=_category([skew]),
        )
    flat = _of_claim("exposure_flattened", claim_runs)
    if flat["category"] == "reproduced":
        flat["category"] = "tested in part"
        flat["verdict"] += " on the part tested"
        flat["evidence"] += SEP + (
            "Not tested: that bootstrapping does not eliminate the skew, and that STELLA_LW and SGS are flatter than "
            "bootstrapping (each mitigation is tested against zero-shot only)."
        )
        flat["note"] = "each mitigation against zero-shot only; “does not eliminate it” untested"
    add(
        "Marginal position exposure",
        "“Bootstrapping reduces this skew but does not eliminate it, while STELLA_LW "
        "and SGS produce flatter exposure curves.”",
        short="the mitigations flatten exposure",
        **flat,
    )
    sgs = _judge([Pair(main, m, "sgs", "zero_shot") for m in ("exposure_mad@5", "ppi", "gpi", "loc")])
    if sgs is not None:
        add(
            "Marginal position exposure",
            "“SGS improves both marginal exposure and all three consistency measures in the examined setting.”",
            short="SGS improves exposure and consistency together",
            tested=f"SGS{BETTER}zero-shot on exposure MAD, PPI, GPI and LOC",
            verdict=_verdict_text(sgs),
            evidence=SEP.join(_pair_text(p, f" ({metric_label(p['metric'])})") for p in sgs["pairs"]),
            category=_category([sgs]),
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
            short="the passes per order",
            tested="scorer passes per presented order, counted in the run",
            verdict="by construction (counted in the run, not a finding)",
            evidence=f"K = {main.K}: {shown}",
            category="reproduced by construction",
        )
    untestable(
        "Datasets",
        "Every result “on both datasets” (MovieLens-32M and Amazon Books).",
        "Amazon Books is not embedded (the package reads it, and the paper-scale chapter runs it), and "
        "MovieLens-100K stands in for MovieLens-32M",
    )
    untestable(
        "Models",
        "Every result “for all three models” (Llama-3.2-3B, Mistral-7B, Qwen2.5-7B).",
        "3–7 B models need a GPU (the paper-scale chapter), and the runs here use "
        + " and ".join(dict.fromkeys(model_label(r.model) for r in claim_runs))
        + " on a CPU",
    )
    untestable(
        "List length",
        "The four methods at K = 50 (Figures 1 and 2).",
        "SGS needs K passes per presented order: about 45,000 passes at K = 50, days on two CPU cores",
    )
    return rows
