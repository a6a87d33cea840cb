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

Each model is judged on its own runs (:func:`model_claims`): the main run and its K sweep, and for a second model
with all four methods at the main K its run there and its own K sweep (a claim across K is not testable for a
model run at one K). A row carries every model's judgement (``models``); its ``category`` is the main model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..evaluation._claims import judge_pairs
from ..evaluation._position_effects import exposure_skew
from ..methods.registry import SWEEP_METHODS
from ..store import Run
from ._labels import method_label, metric_label, model_label, p_equals, signed
from ._section5_parts import BETTER as BETTER
from ._section5_parts import CATEGORIES as CATEGORIES
from ._section5_parts import NOT_TESTABLE as NOT_TESTABLE
from ._section5_parts import SEP as SEP
from ._section5_parts import Pair as Pair
from ._section5_parts import category, count_words, judge, model_runs, one_row, pair_text, untested, verdict_text
from ._section5_parts import pair_records as pair_records
from ._select import sweep_runs
from ._verdicts import MARKS, claim_label, pair_state, run_claims

#: a judged pair in words (kept under its older name for the pages and tests that read it)
_pair_text = pair_text


def _sweep_runs(sweep: Sequence[Run], methods: Sequence[str]) -> list[Run]:
    return [r for r in sweep if all(m in r.methods for m in methods)]


def _of_claim(name: str, run: Run) -> dict[str, Any]:
    """A model's judgement of a named paper claim on its run at the main K (:func:`run_claims`)."""
    v = run_claims(run).get(name)
    if v is None:
        return untested("the runs shown lack one of the claim's methods")
    return {
        "tested": claim_label(v),
        "verdict": verdict_text(v),
        "evidence": SEP.join(pair_text(p) for p in v["pairs"]),
        "category": category([v]),
        "note": "",
        "claims": [(run.name, name, v["verdict"])],
    }


def _contrast(main: Run) -> str:
    """Where STELLA_LW stands on HR@5 and PPI among the run's methods, against the paper's central contrast
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


def _hr5(run: Run) -> dict[str, Any]:
    hr5 = _of_claim("hr5_stella_best", run)
    contrast = _contrast(run)
    if hr5["category"] == "contradicted" and contrast:
        hr5["evidence"] += SEP + contrast
        hr5["note"] = (
            "our STELLA_LW has the lowest HR@5, so the paper's contrast of the most effective and least "
            "consistent method is not seen"
            if "the lowest" in contrast
            else "our STELLA_LW is not the most effective"
        )
    return hr5


def _persists(run: Run, sweep: Sequence[Run], several: bool) -> dict[str, Any]:
    """PPI and GPI: bootstrapping ≻ zero-shot at every K of the model's own sweep (the methods run at every K)."""
    persist = _sweep_runs(sweep, SWEEP_METHODS)
    judged = judge([Pair(r, m, "bootstrapping", "zero_shot") for r in persist for m in ("ppi", "gpi")])
    if judged is None or len(persist) < 2:
        ks = ", ".join(str(k) for k in sorted({r.K for r in sweep} | {run.K}))
        return untested(
            f"no K sweep of {model_label(run.model)}: it was run at K = {ks} only"
            if several
            else "the runs shown have no K sweep"
        )
    everywhere = [m for m in run.methods if all(m in r.methods for r in persist)]
    missing = [method_label(m) for m in run.methods if m not in everywhere]
    part = (
        f"Not tested: the rest of the ordering ({', '.join(missing)}) at every K, since "
        f"{'they were' if len(missing) > 1 else 'it was'} run at K = {run.K} only."
        if missing
        else ""
    )
    return {
        "tested": f"PPI and GPI: bootstrapping{BETTER}zero-shot at every K = {', '.join(str(r.K) for r in persist)} "
        f"(the only methods run at every K)",
        "verdict": verdict_text(judged) + (" on the part tested" if part and judged["verdict"] == "reproduced" else ""),
        "evidence": SEP.join(
            pair_text(p, f" ({metric_label(p['metric'])}, K = {p['pair'].run.K})") for p in judged["pairs"]
        )
        + (SEP + part if part else ""),
        "category": category([judged], in_part=bool(part)),
        "note": "only bootstrapping ≻ zero-shot is tested at every K" if part else "",
        "claims": [],
    }


def _skew(sweep: Sequence[Run], exposure_rows: Mapping[str, list[dict]]) -> dict[str, Any] | None:
    """Zero-shot's top-5 exposure, last third of the input positions against the first, at every K of the model's
    sweep (``None``: no zero-shot run with K > 5)."""
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
    if skew is None:
        return None
    return {
        "tested": "zero-shot top-5 exposure: last third of input positions ≻ first third, at every K = "
        + ", ".join(str(p["K"]) for p in skew["pairs"]),
        "verdict": verdict_text(skew),
        "evidence": SEP.join(
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
        "category": category([skew]),
        "note": "",
        "claims": [],
    }


def _flattened(run: Run) -> dict[str, Any]:
    flat = _of_claim("exposure_flattened", run)
    if flat["category"] == "reproduced":
        flat["category"] = "tested in part"
        flat["verdict"] += " on the part tested"
        flat["evidence"] += SEP + (
            "Not tested: that bootstrapping does not eliminate the skew, and that STELLA_LW and SGS are flatter than "
            "bootstrapping (each mitigation is tested against zero-shot only)."
        )
        flat["note"] = "each mitigation against zero-shot only; “does not eliminate it” untested"
    return flat


def _sgs(run: Run) -> dict[str, Any] | None:
    sgs = judge([Pair(run, m, "sgs", "zero_shot") for m in ("exposure_mad@5", "ppi", "gpi", "loc")])
    if sgs is None:
        return None
    return {
        "tested": f"SGS{BETTER}zero-shot on exposure MAD, PPI, GPI and LOC",
        "verdict": verdict_text(sgs),
        "evidence": SEP.join(pair_text(p, f" ({metric_label(p['metric'])})") for p in sgs["pairs"]),
        "category": category([sgs]),
        "note": "",
        "claims": [],
    }


def _passes(run: Run) -> dict[str, Any] | None:
    passes = run.manifest.get("passes", {}).get("per_method", {})
    if not passes:
        return None
    shown = "; ".join(
        f"{method_label(m)} {v['per_order_min']}–{v['per_order_max']}".replace(
            f"{v['per_order_min']}–{v['per_order_min']}", str(v["per_order_min"])
        )
        for m, v in passes.items()
    )
    return {
        "tested": "scorer passes per presented order, counted in the run",
        "verdict": "by construction (counted in the run, not a finding)",
        "evidence": f"K = {run.K}: {shown}",
        "category": "reproduced by construction",
        "note": "",
        "claims": [],
    }


#: why a model cannot test a claim that another model of the table tests (the claims a model may lack entirely)
_ABSENT = {
    "skew": "no zero-shot run of this model with K > 5",
    "sgs": "its run lacks one of the claim's methods",
    "passes": "its run's manifest does not count the passes",
}


def model_claims(
    run: Run, sweep: Sequence[Run], exposure_rows: Mapping[str, list[dict]], several: bool = False
) -> dict[str, dict[str, Any] | None]:
    """One model's judgement of every claim it can be judged on (:mod:`._section5_parts`), on its own runs: ``run``
    (its run at the main K) and ``sweep`` (its runs at every K, ``run`` among them). ``None``: a claim this model has
    no data for at all (no zero-shot exposure, no SGS, no counted passes). ``several``: the table shows more than
    one model (a reason then names the model)."""
    return {
        "hr5": _hr5(run),
        "ppi": _of_claim("ppi_order", run),
        "gpi": _of_claim("gpi_order", run),
        "persists": _persists(run, sweep, several),
        "loc": _of_claim("loc_order", run),
        "skew": _skew(sweep, exposure_rows),
        "flat": _flattened(run),
        "sgs": _sgs(run),
        "passes": _passes(run),
    }


def section5_rows(
    main: Run,
    sweep: Sequence[Run],
    table_runs: Sequence[Run] = (),
    exposure_rows: Mapping[str, list[dict]] | None = None,
) -> list[dict[str, Any]]:
    """The rows of :func:`~invarirank.compendium._section5_page.section5_table`: one per claim of the paper's §5, in
    the paper's order, each with the paper's wording, the claim as tested here, the verdict, its evidence (or why
    it cannot be tested), its headline ``category`` (:data:`CATEGORIES`, or not testable; the main model's), ``key``
    (the claim's key in :func:`model_claims`; empty for a claim no model can test) and ``models``: each model's own
    judgement (:mod:`._section5_parts`). ``sweep``: the main run's K sweep. ``table_runs``: the runs of the grid
    shown with the main run's scorer; another model with all four methods at the main K is judged on its own runs
    (its K sweep: :func:`~invarirank.compendium._select.sweep_runs` of ``table_runs``). ``exposure_rows``:
    observation rows by run name (read from the run's file when missing)."""
    exposure_rows = exposure_rows or {}
    mains = model_runs(main, table_runs)
    several = len(mains) > 1
    judged = [(r, model_claims(r, sweep if r is main else sweep_runs(table_runs, r), exposure_rows, several))
              for r in mains]  # fmt: skip
    rows: list[dict[str, Any]] = []

    def put(paragraph: str, paper: str, short: str, fields: Mapping[str, Any], key: str = "") -> None:
        rows.append(
            {
                "key": key,
                "§5": paragraph,
                "the paper": paper,
                "tested here (better ≻ worse)": fields["tested"],
                "verdict": fields["verdict"],
                "evidence": fields["evidence"],
                "short": short or fields["tested"],
                "category": fields["category"],
                "note": fields.get("note", ""),
                "claims": list(fields.get("claims", [])),
                "models": fields["models"],
            }
        )

    def add(paragraph: str, paper: str, short: str, key: str) -> None:
        per = [(r, j[key]) for r, j in judged]
        if all(j is None for _, j in per):
            return
        put(paragraph, paper, short, one_row([(r, untested(_ABSENT[key]) if j is None else j) for r, j in per]), key)

    def untestable(paragraph: str, paper: str, why: str) -> None:
        put(paragraph, paper, "", one_row([(r, untested(why)) for r in mains], shared=True))

    add(
        "Effectiveness",
        "“STELLA_LW obtains the highest HR@5 for all three models on both datasets.”",
        "STELLA_LW best on HR@5",
        "hr5",
    )
    untestable(
        "Effectiveness",
        "“The best nDCG@5 varies across methods” (SGS, STELLA_LW or bootstrapping, by setting).",
        f"a statement across six model–dataset settings, and we have one data set and "
        f"{count_words(len(mains), 'model')} with all four methods: there is nothing to vary",
    )
    for key, metric in (("ppi", "PPI"), ("gpi", "GPI")):
        add(
            "Preference consistency",
            f"“PPI and GPI exhibit the same method ordering … SGS produces the lowest PPI "
            f"and GPI throughout … STELLA_LW produces the highest” ({metric}).",
            f"the ordering on {metric}",
            key,
        )
    add(
        "Preference consistency",
        "“Figure 2 shows that this ordering also persists across K ∈ {15, 25, 50}.”",
        "the ordering persists across K",
        "persists",
    )
    add(
        "Output consistency",
        "“LOC follows the same method ordering as PPI and GPI across all six model–dataset combinations.”",
        "the ordering on LOC",
        "loc",
    )
    loc = {r.model: r.metrics["methods"].get("stella", {}).get("overall", {}).get("loc") for r in mains}
    ours = (
        (f" (ours at K = {main.K}: {loc[main.model]:.3f})" if loc[main.model] is not None else "")
        if not several
        else f" (ours at K = {main.K}: "
        + ", ".join(f"{model_label(m)} {v:.3f}" for m, v in loc.items() if v is not None)
        + ")"
    )
    untestable(
        "Output consistency",
        "“STELLA_LW produces the lowest LOC, with all values below 0.13.”",
        "an absolute level reached by 3–7 B models at K = 25, while "
        + " and ".join(model_label(r.model) for r in mains)
        + f" {'have their' if several else 'has its'} own scale"
        + (ours if any(v is not None for v in loc.values()) else f" (no STELLA_LW run at K = {main.K})"),
    )
    add(
        "Marginal position exposure",
        "“Zero-shot reranking exhibits substantial positional skew, with early "
        "input positions receiving lower exposure than later positions.”",
        "zero-shot's early positions lose exposure",
        "skew",
    )
    add(
        "Marginal position exposure",
        "“Bootstrapping reduces this skew but does not eliminate it, while STELLA_LW "
        "and SGS produce flatter exposure curves.”",
        "the mitigations flatten exposure",
        "flat",
    )
    add(
        "Marginal position exposure",
        "“SGS improves both marginal exposure and all three consistency measures in the examined setting.”",
        "SGS improves exposure and consistency together",
        "sgs",
    )
    add(
        "Efficiency",
        "“Zero-shot reranking requires one forward pass per candidate set, while bootstrapping "
        "aggregates three shuffled passes … SGS requires K sequential passes … STELLA_LW performs up to ten.”",
        "the passes per order",
        "passes",
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
        + " and ".join(dict.fromkeys(model_label(r.model) for r in mains))
        + " on a CPU",
    )
    untestable(
        "List length",
        "The four methods at K = 50 (Figures 1 and 2).",
        "SGS needs K passes per presented order: about 45,000 passes at K = 50, days on two CPU cores",
    )
    return rows
