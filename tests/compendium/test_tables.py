"""The compendium's tables, orderings and sentences: captions state the setting, the paper's values sit beside
ours, orderings and the paper-ordering sentence are computed correctly, costs come from the manifest."""

from __future__ import annotations

import copy

import numpy as np

from invarirank import compendium as C
from tests.support import ROOT


def _with_values(run: C.Run, metric: str, values: dict[str, float]) -> C.Run:
    r = copy.deepcopy(run)
    for method, v in values.items():
        r.metrics["methods"][method]["overall"][metric] = v
        r.metrics["methods"][method]["overall"]["ci"][metric] = [v - 0.001, v + 0.001]
    return r


def test_load_run_reads_the_setting(simulated_run):
    assert (simulated_run.K, simulated_run.M, simulated_run.n_queries, simulated_run.scorer) == (6, 4, 5, "simulated")
    assert simulated_run.methods == ["zero_shot", "bootstrapping", "stella", "sgs"]


def test_tables_state_model_dataset_k_m_and_queries(simulated_run):
    paper = C.paper_table(ROOT / "book" / "data" / "paper_table1.csv")
    run = simulated_run
    for styler in (
        C.table1([run]),
        C.run_table(run),
        C.beside_paper([run], paper),
        C.orderings(run),
        C.ordering_agreement(run),
    ):
        caption = styler.caption
        assert "K = 6" in caption and "M = 4" in caption and "5 queries" in caption.replace("queries = 5", "5 queries")
        assert "simulated" in caption
        assert "<table" in styler.to_html()


def test_beside_paper_shows_every_paper_model_for_the_nearest_dataset(simulated_run):
    paper = C.paper_table(ROOT / "book" / "data" / "paper_table1.csv")
    r = copy.deepcopy(simulated_run)
    r.dataset = "ml-100k"
    df = C.beside_paper([r], paper, styled=False)
    sources = set(df.index.get_level_values("source"))
    assert sources == {"ours", "paper: Llama-3B", "paper: Mistral-7B", "paper: Qwen-7B"}
    assert df.loc[("zero-shot", "paper: Llama-3B"), "LOC"] == "0.6358"
    r.model = "meta-llama/Llama-3.2-3B-Instruct"  # the same model as the paper: only that one beside
    df = C.beside_paper([r], paper, styled=False)
    assert set(df.index.get_level_values("source")) == {"ours", "paper: Llama-3B"}


def test_paper_ordering_sentence(simulated_run):
    good = _with_values(simulated_run, "loc", {"sgs": 0.8, "bootstrapping": 0.7, "zero_shot": 0.6, "stella": 0.1})
    good = _with_values(good, "ppi", {"sgs": 0.2, "bootstrapping": 0.3, "zero_shot": 0.4, "stella": 0.8})
    good = _with_values(good, "gpi", {"sgs": 0.05, "bootstrapping": 0.08, "zero_shot": 0.1, "stella": 0.3})
    text = C.paper_ordering_sentence(good)
    assert "shows the paper's ordering on all three consistency measures" in text
    assert "SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW" in text and "overlap" not in text
    bad = _with_values(good, "gpi", {"sgs": 0.3, "bootstrapping": 0.08, "zero_shot": 0.1, "stella": 0.05})
    assert "on 2 of the three consistency measures" in C.paper_ordering_sentence(bad)
    worse = _with_values(bad, "loc", {"sgs": 0.1, "bootstrapping": 0.7, "zero_shot": 0.6, "stella": 0.8})
    worse = _with_values(worse, "ppi", {"sgs": 0.9, "bootstrapping": 0.3, "zero_shot": 0.4, "stella": 0.1})
    assert "does not show the paper's ordering" in C.paper_ordering_sentence(worse)


def test_overlapping_intervals_are_named(simulated_run):
    r = _with_values(simulated_run, "loc", {"sgs": 0.8, "bootstrapping": 0.7, "zero_shot": 0.6, "stella": 0.1})
    r.metrics["methods"]["sgs"]["overall"]["ci"]["loc"] = [0.5, 0.9]
    assert "SGS/bootstrapping on LOC" in C.paper_ordering_sentence(r)


def test_ordering_agreement_is_kendall_tau(simulated_run):
    r = _with_values(simulated_run, "loc", {"sgs": 0.8, "bootstrapping": 0.7, "zero_shot": 0.6, "stella": 0.1})
    r = _with_values(r, "ppi", {"sgs": 0.2, "bootstrapping": 0.3, "zero_shot": 0.4, "stella": 0.8})
    r = _with_values(r, "hr@5", {"sgs": 0.1, "bootstrapping": 0.2, "zero_shot": 0.3, "stella": 0.4})
    mat = C.ordering_agreement(r, styled=False)
    assert mat.loc["PPI", "LOC"] == 1.0 and mat.loc["LOC", "HR@5"] == -1.0
    assert np.allclose(np.diag(mat.values.astype(float)), 1.0)


def test_cost_table_reads_the_manifest(simulated_run):
    df = C.cost_table([simulated_run], styled=False)  # one run: only the method is left in the index
    per = simulated_run.manifest["passes"]["per_method"]
    for method in simulated_run.methods:
        row = df.loc[C.METHOD_LABELS[method]]
        assert row["passes (requested)"] == per[method]["passes"]
    assert df.loc["zero-shot", "passes per order"] == 1.0
    assert df.loc["STELLA_LW", "calibration passes"] == sum(
        v["passes"] for v in simulated_run.manifest["passes"]["calibration"].values()
    )


def test_scorer_comparison_needs_a_pair(simulated_run):
    assert C.scorer_comparison([simulated_run]) is None
    span = copy.deepcopy(simulated_run)
    span.scorer = "span"
    choice = copy.deepcopy(simulated_run)
    choice.scorer = "choice"
    df = C.scorer_comparison([span, choice], styled=False)
    assert set(df.index.get_level_values("scorer")) == {"span", "choice"}


def test_the_scorer_pair_comes_from_the_first_grid_that_has_one(simulated_run):
    """The results page's span-vs-choice section: the grid shown when it has a pair, else the next one that does
    (the paper-cpu grid has no choice run; the evidence grid has one)."""
    span, choice, alone = (copy.deepcopy(simulated_run) for _ in range(3))
    span.scorer, choice.scorer, alone.scorer = "span", "choice", "span"
    span.grid = choice.grid = "evidence"
    alone.grid = "paper-cpu"
    runs = [alone, span, choice]
    assert C.scorer_pair_grid(runs, ["paper-cpu", "evidence"]) == "evidence"
    assert C.scorer_pair_grid(runs, ["paper-cpu"]) is None
    assert C.choice_and_span([span, choice], k=span.K) == (choice, span)
    assert C.choice_and_span([alone]) == (None, None)
    choice.K += 1  # not on the same K: no pair
    assert C.scorer_pair_grid(runs, ["paper-cpu", "evidence"]) is None


def test_list_length_bullets_say_where_the_grid_shown_departs_from_the_paper(simulated_run):
    """Table 1 at the paper's K = 25 or not, and Figures 1-2 at the paper's 15, 25 and 50 or not: the results
    page's "what was scaled down" follows the grid it shows (it once said "shorter than K = 25" whatever it was)."""
    main, k15, k50 = (copy.deepcopy(simulated_run) for _ in range(3))
    main.K, k15.K, k50.K = 25, 15, 50
    k15.methods = k50.methods = ["zero_shot", "bootstrapping"]
    text = C.list_length_bullets(main, [main, k15, k50])
    assert "Table 1 at the paper's list length, K = 25**, with all four methods." in text
    assert (
        "Figures 1 and 2 at K = 15, 25 and 50** (the paper's list lengths): only zero-shot and "
        "bootstrapping (1 and 3 passes per presented order)" in text
    )
    main.K = 10
    text = C.list_length_bullets(main, [main, k15])
    assert "Table 1 at a shorter list length, K = 10**" in text and "(the paper's is K = 25)" in text
    assert "at K = 10 and 15** (the paper's are 15, 25 and 50)" in text
    assert "No sweep over K" in C.list_length_bullets(main, [main])


def test_scale_table_and_run_table_read_the_run(simulated_run):
    scale = C.scale_table([simulated_run], styled=False)
    assert scale.loc["list lengths K", "this book"] == "6" and scale.loc["presented orders M", "this book"] == "4"
    table = C.run_table(simulated_run, styled=False)
    # a synthetic candidates set has no first stage: only the random order's reference row
    assert list(table.index) == ["zero-shot", "bootstrapping", "STELLA_LW", "SGS", "random order (reference)"]
    ov = simulated_run.metrics["methods"]["sgs"]["overall"]
    assert table.loc["SGS", "PPI"] == C.format_ci(ov["ppi"], *ov["ci"]["ppi"])
    ref = simulated_run.metrics["references"]["random"]["overall"]
    assert table.loc["random order (reference)", "PPI"] == C.format_ci(ref["ppi"], *ref["ci"]["ppi"])


def test_metric_labels_and_directions_are_one_list():
    from invarirank.compendium import _labels as labels

    assert set(labels.METRIC_LABELS) == set(labels.HIGHER_IS_BETTER) == set(labels.METRICS)
    assert all(m in labels.METRICS for m in (*labels.RUN_METRICS, *labels.TABLE1_METRICS, *labels.ORDERING_METRICS))
    from invarirank.methods.registry import METHOD_LABELS

    assert labels.METHOD_LABELS is METHOD_LABELS


def test_a_run_table_with_the_exposure_mad_says_why_its_interval_can_exclude_the_value():
    """The caveat describes something real: in the committed K = 50 run, bootstrapping's exposure MAD lies above its
    own basic interval (the value is biased upward, the interval corrects for it; the percentile interval of the same
    replicates, [2v - high, 2v - low], lay wholly above it); the caption says so, and only where that column is
    shown."""
    from invarirank.store import load_run

    run = load_run(ROOT / "results" / "paper-cpu" / "smollm2-span-k50")
    ov = run.metrics["methods"]["bootstrapping"]["overall"]
    low, high = ov["ci"]["exposure_mad@5"]
    assert 0 < low < high < ov["exposure_mad@5"]
    caption = C.run_table(run).caption
    assert caption.endswith(C._tables.EXPOSURE_INTERVAL_NOTE) and "can lie below it" in caption
    assert "exposure MAD" not in C.run_table(run, metrics=("hr@5", "ppi", "loc")).caption


def test_orderings_never_write_a_tie_as_a_win(simulated_run):
    """A run page read "bootstrapping (0.450) ≻ SGS (0.450)" and "zero-shot (-0.012)": a tie is "=", a difference
    beyond the decimals shown "≈", a minus sign is a true minus, and a metric no method has gets no row."""
    run = copy.deepcopy(simulated_run)
    ov = {m: run.metrics["methods"][m]["overall"] for m in run.methods}
    ov["zero_shot"]["loc"], ov["bootstrapping"]["loc"], ov["stella"]["loc"], ov["sgs"]["loc"] = (
        0.45,
        0.45,
        0.4501,
        -0.012,
    )
    for m in run.methods:
        ov[m]["exposure_mad@5"] = None
    df = C.orderings(run, styled=False)
    assert (
        df.loc["LOC", "ordering (best first)"]
        == "STELLA_LW (0.450) ≈ zero-shot (0.450) = bootstrapping (0.450) ≻ SGS (−0.012)"
    )
    assert "exposure MAD" not in df.index and len(df) > 0
