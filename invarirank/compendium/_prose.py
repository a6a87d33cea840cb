"""Generated sentences for the book's text: does a run show the paper's method ordering, and which method is best
on what. Computed from ``metrics.json`` so that a sentence cannot drift from the numbers beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..evaluation._comparisons import ALPHA
from ..methods.registry import method as registered_method
from ..store import Run
from ._labels import (
    METHOD_LABELS,
    METRIC_LABELS,
    PAPER_LOC_ORDER,
    decimal,
    method_label,
    model_label,
    p_equals,
    run_setting,
    signed,
)
from ._method_orderings import ordering
from ._select import GridChoice
from ._tables import ci_of
from ._verdicts import smallest_p

#: the list length of the paper's Table 1, and those of its Figures 1 and 2
PAPER_TABLE1_K = 25
PAPER_SWEEP_KS = (15, 25, 50)


def paper_ordering_sentence(run: Run) -> str:
    """A computed sentence: does this run show the paper's ordering SGS ≻ bootstrapping ≻ zero-shot ≻
    STELLA_LW on LOC (and the same methods best first on PPI and GPI)? Also says which neighbouring
    differences are within the 95% intervals."""
    wanted = [m for m in PAPER_LOC_ORDER if m in run.methods]
    if len(wanted) < 2:
        return (
            f"In {run_setting(run)} fewer than two of the paper's methods were run, so the paper's "
            f"ordering cannot be checked."
        )
    parts, matches, overlaps = [], [], []
    for metric in ("loc", "ppi", "gpi"):
        got = [m for m in ordering(run, metric) if m in wanted]
        ok = got == wanted
        matches.append(ok)
        text = " ≻ ".join(METHOD_LABELS[m] for m in got)
        parts.append(f"{METRIC_LABELS[metric]}: {text} ({'as in the paper' if ok else 'not as in the paper'})")
        for a, b in zip(got, got[1:]):
            la, ha = ci_of(run, a, metric)
            lb, hb = ci_of(run, b, metric)
            if None not in (la, ha, lb, hb) and not (ha < lb or hb < la):
                overlaps.append(f"{METHOD_LABELS[a]}/{METHOD_LABELS[b]} on {METRIC_LABELS[metric]}")
    subset = (
        ""
        if len(wanted) == len(PAPER_LOC_ORDER)
        else f" (restricted to the methods run: {', '.join(METHOD_LABELS[m] for m in wanted)})"
    )
    if all(matches):
        head = f"Our run ({run_setting(run)}) shows the paper's ordering{subset} on all three consistency measures"
    elif any(matches):
        n = sum(matches)
        head = (
            f"Our run ({run_setting(run)}) shows the paper's ordering{subset} on {n} of the three consistency measures"
        )
    else:
        head = f"Our run ({run_setting(run)}) does not show the paper's ordering{subset} on any consistency measure"
    tail = (
        ""
        if not overlaps
        else f" Neighbouring methods whose 95% intervals overlap: {'; '.join(overlaps)}. These are observed "
        f"orderings; which steps are resolved is decided by the paired comparisons (the verdicts)."
    )
    return f"{head}. " + "; ".join(parts) + "." + tail


def summary_sentence(run: Run) -> str:
    """Which method is best on HR@5, on LOC and on exposure in a run, as observed (a computed sentence for the
    text); a method best on several is named once."""
    best = {
        "the highest HR@5": ordering(run, "hr@5")[0],
        "the most consistent outputs (LOC)": ordering(run, "loc")[0],
        "the flattest exposure": ordering(run, "exposure_mad@5")[0],
    }
    by_method: dict[str, list[str]] = {}
    for what, method in best.items():
        by_method.setdefault(method, []).append(what)

    def listing(items: Sequence[str]) -> str:
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    parts = [f"{method_label(m)} has {listing(whats)}" for m, whats in by_method.items()]
    return (
        f"In our run ({run_setting(run)}), as observed (whether each difference is resolved is in the claims' "
        f"table): {'; '.join(parts)}."
    )


def shown_grid_sentence(
    shown: str,
    choices: Sequence[GridChoice],
    fallback: str,
    missing: Mapping[str, Sequence[str]],
    progress: Mapping[str, Mapping[str, tuple[int, int | None]]] | None = None,
) -> str:
    """Which grid sets the results page's Table 1 and figures, and why (the switch of
    :func:`invarirank.compendium._select.grid_to_show`): the grid shown, then each grid passed over with its missing
    runs; ``progress`` (grid → missing run → (queries committed in shards, queries of the run)) says how far each
    missing run is."""
    progress = progress or {}

    def runs_of(choice: GridChoice) -> str:
        done = progress.get(choice.name, {})
        return ", ".join(
            f"{name} ({done[name][0]} of {done[name][1]} queries committed in shards)"
            if done.get(name, (0, 0))[0]
            else name
            for name in missing.get(choice.name, [])
        )

    chosen = next((c for c in choices if c.name == shown and c.name not in missing), None)
    if chosen is not None:
        head = (
            f"Table 1 and Figures 1–2 come from the {shown} grid ({chosen.file}): its main run and K sweep "
            f"({', '.join(chosen.needed)}) are complete under results/{shown}/."
        )
    else:
        head = f"Table 1 and Figures 1–2 come from the {fallback} grid."
    waiting, itself = [], []
    for choice in choices:
        if choice is chosen:
            break
        if not choice.needed:
            continue
        if choice.name == shown:  # the grid executed is itself a preferred one, not yet complete
            itself.append(
                f"Its main run and K sweep are not all complete under results/{shown}/ (missing: "
                f"{runs_of(choice)}); the page shows its finished runs."
            )
            continue
        waiting.append(
            f"The {choice.name} grid's main run and K sweep ({choice.file}) are not all complete under "
            f"results/{choice.name}/ (missing: {runs_of(choice)})."
        )
    if waiting:
        waiting.append(
            "The page switches to it once they are."
            if len(waiting) == 1
            else "The page switches to the first of these grids whose runs are all complete."
        )
    return " ".join([head, *itself, *waiting])


def _v(value: float | None) -> str:
    """A metric value in a sentence: three decimals, or "undefined" (e.g. PPI of a run whose pairs are all seen in
    one cell)."""
    return "undefined" if value is None else decimal(value)


def reference_sentence(run: Run) -> str:
    """A computed paragraph on the reference rows of ``run``: how its queries were selected and what that does to
    the first stage's HR@5, what a random order gives at this K and M, and each method's HR@5 and PPI against
    both (paired sign-flip p over queries). Empty when the run's ``metrics.json`` has no references."""
    refs = run.metrics.get("references") or {}
    if not refs:
        return ""
    cfg = run.manifest.get("config") or {}
    sample_k = cfg.get("sample_k") or run.K
    parts = []
    fs, rnd = refs.get("first_stage"), refs.get("random")
    if fs:
        hr = fs["overall"]["hr@5"]
        why = (
            f"the queries were sampled among those whose first stage holds a relevant candidate in its top "
            f"{sample_k}, so every query has one in the first stage's top 5 and its own order scores HR@5 = 1 "
            f"by construction"
            if sample_k <= 5
            else f"the queries were sampled among those whose first stage holds a relevant candidate in its top "
            f"{sample_k}"
        )
        parts.append(
            f"The first stage's own order of the same candidates scores HR@5 = {_v(hr)} and nDCG@5 = "
            f"{_v(fs['overall'].get('ndcg@5'))} ({why}); its consistency is perfect by construction (PPI = "
            f"GPI = 0, LOC = 1), since its output never depends on the presented order."
        )
        mad = fs["overall"].get("exposure_mad@5")
        if mad is not None:
            parts.append(
                f"For the same reason its true exposure MAD is 0: the {_v(mad)} it reads is what noise alone "
                f"gives at these queries and orders, the floor against which the methods' exposure MAD is "
                f"read."
            )
    if rnd:
        o = rnd["overall"]
        parts.append(
            f"A uniformly random order scores HR@5 = {_v(o.get('hr@5'))} and nDCG@5 = "
            f"{_v(o.get('ndcg@5'))} (exact expectations), and at K = {run.K}, M = {run.M} it gives PPI = "
            f"{_v(o.get('ppi'))} and LOC = {_v(o.get('loc'))} (exact expectations) and GPI = {_v(o.get('gpi'))} "
            f"(estimated from seeded draws): the scale on which the methods' consistency is read."
        )
    lines = []
    verdicts: dict[str, list[str]] = {}  # "above the random order" → methods, ... (p < 0.05, uncorrected)
    for method in run.methods:
        bits = []
        for name, block in (("the first-stage order", fs), ("the random order", rnd)):
            rec = ((block or {}).get("comparisons") or {}).get("hr@5", {}).get(method)
            if rec:
                bits.append(f"{signed(rec['mean_diff'])} against {name} ({p_equals(rec['p'])})")
                if rec["p"] < ALPHA:
                    verdicts.setdefault(f"{'above' if rec['mean_diff'] > 0 else 'below'} {name}", []).append(
                        method_label(method)
                    )
        if bits:
            lines.append(f"{method_label(method)} {', '.join(bits)}")
    if lines:
        parts.append("HR@5, method minus reference: " + "; ".join(lines) + ".")
        if smallest_p(run.n_queries) < ALPHA:  # a smoke run can resolve nothing: its page says so already
            parts.append(_effectiveness_sentence(verdicts, run.n_queries))
    return " ".join(parts)


def _effectiveness_sentence(verdicts: Mapping[str, list[str]], n_queries: int) -> str:
    """What the HR@5 comparisons with the reference rows say, in words: which methods are resolved above or below
    which reference (paired sign-flip p < 0.05, no correction), or that none is."""
    if not verdicts:
        return (
            f"So at these {n_queries} queries no method's HR@5 is distinguishable (paired p < {ALPHA}) from the "
            f"first stage's own order or from a random order: on effectiveness this reranker neither clearly "
            f"improves on the first stage nor clearly beats chance, and the consistency measures, not HR@5, are "
            f"what this run can speak to."
        )
    said = "; ".join(f"{where}: {', '.join(methods)}" for where, methods in verdicts.items())
    return (
        f"Resolved at these {n_queries} queries (paired p < {ALPHA}, no correction): {said}; every other "
        f"method–reference pair is not distinguishable on HR@5."
    )


def _ks(ks: Sequence[int]) -> str:
    """``[15, 25, 50]`` → ``"15, 25 and 50"``."""
    text = [str(k) for k in ks]
    return text[0] if len(text) == 1 else f"{', '.join(text[:-1])} and {text[-1]}"


def list_length_bullets(main: Run, sweep: Sequence[Run]) -> str:
    """Two Markdown bullets on the list lengths shown, against the paper's (:data:`PAPER_TABLE1_K`,
    :data:`PAPER_SWEEP_KS`): the main run's K and methods (Table 1), then the K sweep of Figures 1 and 2 (``sweep``:
    the main run's setting at every K) and which methods it has beside the main K."""
    n = len(main.methods)
    methods = "all four methods" if n == 4 else f"{n} of the four methods"
    if main.K == PAPER_TABLE1_K:
        head = f"- **Table 1 at the paper's list length, K = {main.K}**, with {methods}."
    else:
        head = (
            f"- **Table 1 at a {'shorter' if main.K < PAPER_TABLE1_K else 'longer'} list length, K = "
            f"{main.K}**, with {methods} (the paper's is K = {PAPER_TABLE1_K}): SGS needs K passes per "
            f"presented order and STELLA_LW up to ten plus its calibration."
        )
    ks = sorted({r.K for r in sweep} | {main.K})
    paper = _ks(PAPER_SWEEP_KS)
    if len(ks) == 1:
        return f"{head}\n- **No sweep over K**: Figures 1 and 2 have the one list length (the paper's: {paper})."
    others = sorted({m for r in sweep if r.K != main.K for m in r.methods}, key=list(METHOD_LABELS).index)
    same = "the paper's list lengths" if tuple(ks) == PAPER_SWEEP_KS else f"the paper's are {paper}"
    counts = [registered_method(m).passes_text.replace("-", "–") for m in others]
    passes = "1 pass" if counts == ["1"] else f"{_ks(counts)} passes"
    cheap = (
        f"only {' and '.join(method_label(m) for m in others)} ({passes} per presented order) at the other list lengths"
        if set(others) < set(main.methods)
        else "the same methods at every list length"
    )
    return (
        f"{head}\n- **Figures 1 and 2 at K = {_ks(ks)}** ({same}): {cheap}, on the same users (queries "
        f"are sampled once among those kept at the smallest K)."
    )


def _query_ids(run: Run) -> list[str]:
    return list((run.manifest.get("queries") or {}).get("ids") or [])


def _query_sets(runs: Sequence[Run]) -> str:
    """Each run's queries in words, the first run's as the reference: ``SmolLM2-135M: 40; Qwen2.5-Coder-0.5B: the
    first 20 of the same 40 users`` (from the query ids of the manifests; a count alone when they are not a
    prefix of the first run's)."""
    first = _query_ids(runs[0])
    parts = [f"{model_label(runs[0].model)}: {runs[0].n_queries}"]
    for run in runs[1:]:
        ids = _query_ids(run)
        if ids and first and ids == first:
            text = f"the same {len(ids)} users"
        elif ids and first and ids == first[: len(ids)]:
            text = f"the first {len(ids)} of the same {len(first)} users"
        else:
            text = str(run.n_queries)
        parts.append(f"{model_label(run.model)}: {text}")
    return "; ".join(parts)


def table_models_sentence(table_runs: Sequence[Run], runs: Sequence[Run], K: int) -> str:
    """Which models Table 1 shows at list length ``K`` (``table_runs``: the grid shown), and, when it shows one, where
    a second model was run with all four methods (``runs``: every finished run; the one of another grid with the most
    queries, then the largest K), so that a reader of a one-model Table 1 knows where the other model's verdicts
    are (the results page's *Other grids*)."""
    shown = [r for r in table_runs if r.K == K]
    models = list(dict.fromkeys(model_label(r.model) for r in shown))
    if len(models) > 1:
        return (
            f"Table 1 shows {len(models)} models side by side ({', '.join(models)}), each with its own queries "
            f"({_query_sets(shown)}) and its own reference rows (the first stage's order and a random order of its "
            f"candidates) under its methods."
        )
    grids = {r.grid for r in shown}
    elsewhere = sorted(
        (
            r
            for r in runs
            if r.grid not in grids and model_label(r.model) not in models and set(PAPER_LOC_ORDER) <= set(r.methods)
        ),
        key=lambda r: (-r.n_queries, -r.K, r.name),
    )
    head = f"Table 1 shows one model, {models[0]}." if models else "Table 1 has no run at this list length."
    if not elsewhere:
        return head
    other = elsewhere[0]
    return (
        f"{head} A second model, {model_label(other.model)}, was run with all four methods in the {other.grid} "
        f"grid only, at K = {other.K} on {other.n_queries} queries: its Table 1 and verdicts are under "
        f"*Other grids* below."
    )
