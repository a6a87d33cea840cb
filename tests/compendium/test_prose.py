"""The compendium's computed sentences and captions read as prose: a method best on several metrics is named once,
a reference metric that is undefined does not break the run page, numbers in captions are in order, a simulated run
is described as one, and the §5 table's reasons name the models actually shown and survive the table's line breaks."""

from __future__ import annotations

import copy

from invarirank import compendium as C
from invarirank.compendium import _labels as labels
from invarirank.compendium import _section5 as section5
from tests.support import ROOT


def _best_everywhere(run: C.Run, method: str) -> C.Run:
    r = copy.deepcopy(run)
    for m in r.methods:
        ov = r.metrics["methods"][m]["overall"]
        good = m == method
        ov["hr@5"], ov["loc"], ov["exposure_mad@5"] = (0.9, 0.9, 0.01) if good else (0.5, 0.5, 0.2)
    return r


def test_summary_sentence_names_a_method_best_on_everything_once(simulated_run):
    text = C.summary_sentence(_best_everywhere(simulated_run, "sgs"))
    assert text.count("SGS") == 1, text
    assert "SGS has the highest HR@5, the most consistent outputs (LOC) and the flattest exposure" in text
    assert "as observed" in text
    mixed = copy.deepcopy(_best_everywhere(simulated_run, "sgs"))
    mixed.metrics["methods"]["stella"]["overall"]["exposure_mad@5"] = 0.001
    text = C.summary_sentence(mixed)
    assert "SGS has the highest HR@5 and the most consistent outputs (LOC)" in text
    assert "STELLA_LW has the flattest exposure" in text


def test_reference_sentence_survives_an_undefined_reference_metric(simulated_run):
    run = copy.deepcopy(simulated_run)
    refs = run.metrics.get("references")
    assert refs and refs.get("random"), "the fixture run has reference rows"
    refs["random"]["overall"]["ppi"] = None  # e.g. one query whose pairs all sit in one cell
    text = C.reference_sentence(run)
    assert "PPI = undefined" in text and "GPI = " in text
    assert "-0." not in text  # method-minus-reference differences use a true minus sign


def test_captions_list_list_lengths_in_order(simulated_run):
    runs = []
    for k in (10, 5, 25, 15):
        r = copy.deepcopy(simulated_run)
        r.K = k
        runs.append(r)
    assert "K = 5, 10, 15, 25;" in labels.setting_caption(runs)


def test_a_simulated_run_is_described_as_simulated(simulated_run):
    text = labels.run_setting(simulated_run)
    assert text.startswith("the simulated scorer on synthetic candidate sets, K = 6, M = 4, 5 queries"), text
    assert "simulated on synthetic" not in labels.run_setting(simulated_run)


def test_section5_reasons_name_the_models_shown_and_keep_whole_sentences(simulated_run):
    rows = {r["the paper"]: r for r in section5.section5_rows(simulated_run, [simulated_run])}
    loc = next(r for p, r in rows.items() if "below 0.13" in p)
    assert section5.SEP not in loc["evidence"], loc["evidence"]  # SEP becomes a line break in the table
    assert C.model_label(simulated_run.model) in loc["evidence"] and "K = 6" in loc["evidence"]
    models = next(r for p, r in rows.items() if p.startswith("Every result “for all three models”"))
    assert "270 M" not in models["evidence"] and C.model_label(simulated_run.model) in models["evidence"]
    ndcg = next(r for p, r in rows.items() if "best nDCG@5" in p)
    assert "one model with all four methods" in ndcg["evidence"], ndcg["evidence"]


def test_a_smoke_runs_resolution_sentence_points_to_what_its_pages_show(simulated_run):
    text = C.resolution_sentence(simulated_run)  # run pages and "Other grids" show no pairwise table
    assert "no pair of methods can be resolved" in text and "pairwise table" not in text
    assert "queries_80" in text


def test_cost_table_counts_whole_passes_as_whole_numbers(simulated_run):
    from invarirank.compendium._setup_tables import _per_order

    assert [_per_order(v) for v in (1.0, 3.0, 10.0, 9.45, 9.5)] == ["1", "3", "10", "9.45", "9.5"]
    html = C.cost_table([simulated_run]).to_html()
    assert ">1<" in html and ">3<" in html and "1.00" not in html


def test_pairwise_table_states_a_constant_query_count_once(simulated_run):
    table = C.pairwise_table(simulated_run)
    assert "n" not in table.data.columns
    assert "every pair paired over the same 5 queries" in table.caption


def test_scale_table_says_what_each_scorer_is_for():
    from invarirank.compendium._setup_tables import _scorers

    assert _scorers({"choice", "span"}) == "span (Table 1 and the figures), choice (the scorer comparison)"
    assert _scorers({"span"}) == "span" and _scorers({"simulated"}) == "simulated"


def test_a_simulated_runs_figure_title_reads_as_prose(simulated_run):
    import matplotlib

    matplotlib.use("Agg")
    fig = C.figure_exposure([simulated_run])
    title = fig._suptitle.get_text()
    assert title == "Top-5 exposure by input position: simulated scorer on synthetic candidate sets", title


def test_pairwise_table_lists_the_claims_in_the_section5_tables_order(simulated_run):
    from invarirank.compendium._claim_tables import SECTION5_ORDER

    claims = list(dict.fromkeys(C.pairwise_table(simulated_run, styled=False).index.get_level_values("claim")))
    assert [c.split(":")[0] for c in claims] == ["HR@5", "PPI", "GPI", "LOC", "exposure MAD"], claims
    assert set(SECTION5_ORDER) == set(C.run_claims(simulated_run))  # the names are the run's claims


def test_table_cells_use_a_true_minus_and_no_negative_zero():
    assert C.format_ci(-0.012, -0.046, -0.0001) == "−0.012 [−0.046, 0.000]"
    assert C.format_ci(0.5, 0.4, 0.6) == "0.500 [0.400, 0.600]"


def test_sentences_write_no_negative_zero(simulated_run):
    """A random order's expected LOC is zero up to the draws' noise (−0.00003 at K = 50 in the paper-cpu run): the
    sentence says ``LOC = 0.000``, and a difference that rounds to zero is ``+0.000``."""
    run = copy.deepcopy(simulated_run)
    random_row = run.metrics["references"]["random"]["overall"]
    random_row["loc"], random_row["gpi"] = -0.00003, -0.2
    text = C.reference_sentence(run)
    assert "LOC = 0.000 " in text and "−0.000" not in text and "-0.000" not in text, text
    assert "GPI = −0.200" in text, text  # a true minus sign, as in the tables
    assert labels.decimal(-0.0004) == "0.000" and labels.decimal(-0.0006) == "−0.001"
    assert labels.signed(-0.0004) == "+0.000" and labels.signed(-0.0006) == "−0.001"
    assert labels.signed(0.034) == "+0.034"


def test_the_reference_sentence_reads_the_first_stage_orders_exposure_mad_as_the_noise_floor():
    """The first stage's order ignores the presented order, so its true exposure MAD is 0 and what it reads is noise:
    the committed K = 50 run's sentence gives that value as the floor (and a run without it says nothing)."""
    from invarirank.store import load_run

    run = load_run(ROOT / "results" / "paper-cpu" / "smollm2-span-k50")
    mad = run.metrics["references"]["first_stage"]["overall"]["exposure_mad@5"]
    assert 0 < mad < 0.02
    text = C.reference_sentence(run)
    assert f"its true exposure MAD is 0: the {labels.decimal(mad)} it reads is what noise alone gives" in text, text
    run = copy.deepcopy(run)
    run.metrics["references"]["first_stage"]["overall"]["exposure_mad@5"] = None
    assert "noise alone" not in C.reference_sentence(run)


def test_a_one_model_table_1_says_where_the_second_model_was_run(simulated_run):
    """Table 1 of the paper-cpu grid has SmolLM2 alone; Gemma 3 ran all four methods in the evidence grid only: the
    sentence under Table 1 names that grid, its K and queries, and never promises a run that no grid holds."""
    main = copy.deepcopy(simulated_run)
    main.grid, main.model, main.K = "paper-cpu", "smollm2-135m", 25
    gemma = copy.deepcopy(simulated_run)
    gemma.grid, gemma.model, gemma.K, gemma.n_queries = "evidence", "gemma3-270m", 10, 20
    text = C.table_models_sentence([main], [main, gemma], 25)
    assert text == (
        "Table 1 shows one model, SmolLM2-135M. A second model, Gemma-3-270M, was run with all four "
        "methods in the evidence grid only, at K = 10 on 20 queries: its Table 1 and verdicts are under "
        "*Other grids* below."
    ), text
    gemma.methods = ["zero_shot", "bootstrapping"]  # not a Table 1 of its own
    assert C.table_models_sentence([main], [main, gemma], 25) == "Table 1 shows one model, SmolLM2-135M."
    gemma.grid, gemma.K = "paper-cpu", 25  # both models in the grid shown
    assert C.table_models_sentence([main, gemma], [main, gemma], 25).startswith(
        "Table 1 shows 2 models side by side (SmolLM2-135M, Gemma-3-270M)"
    )


def test_the_reference_sentence_says_in_words_what_the_hr5_comparisons_resolve():
    """The committed K = 25 run (Table 1): no method's HR@5 is resolved against either reference at 40 queries, and
    the page says so; the evidence run at K = 10 (queries sampled at K = 5, so the first stage's HR@5 is 1) has every
    method resolved below the first-stage order; a doctored p moves a method into the resolved list."""
    from invarirank.store import load_run

    k25 = load_run(ROOT / "results" / "paper-cpu" / "smollm2-span-k25")
    text = C.reference_sentence(k25)
    assert "no method's HR@5 is distinguishable (paired p < 0.05)" in text and "neither clearly improves" in text
    k10 = load_run(ROOT / "results" / "evidence" / "smollm2-span-k10")
    assert (
        "Resolved at these 40 queries (paired p < 0.05, no correction): below the first-stage order: zero-shot, "
        "bootstrapping, STELLA_LW, SGS;"
    ) in C.reference_sentence(k10)
    doctored = copy.deepcopy(k25)
    rec = doctored.metrics["references"]["random"]["comparisons"]["hr@5"]["sgs"]
    rec["p"], rec["mean_diff"] = 0.01, 0.094
    assert (
        "Resolved at these 40 queries (paired p < 0.05, no correction): above the random order: SGS;"
        in C.reference_sentence(doctored)
    )


def test_a_smoke_runs_reference_sentence_draws_no_conclusion(simulated_run):
    """Five queries cannot resolve a pair (smallest exact p 0.0625): no sentence on what HR@5 resolves."""
    assert simulated_run.n_queries < 6
    text = C.reference_sentence(simulated_run)
    assert "HR@5, method minus reference" in text
    assert "distinguishable" not in text and "Resolved at these" not in text
