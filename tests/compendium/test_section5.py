"""Every claim of the paper's §5 on our runs (invarirank.compendium.section5): verdicts equal the evaluation's own,
combined claims take Holm's correction over all their pairs, the exposure skew is the per-query tail-minus-head
difference, the headline counts the rows, and the sentences read the numbers they quote from the runs."""

from __future__ import annotations

import re

import pytest

from invarirank import compendium as C
from invarirank.compendium import section5 as S
from invarirank.evaluation.claims import holm
from invarirank.evaluation.comparisons import comparison, sign_flip_p
from tests.support import ROOT

EVIDENCE = ROOT / "results" / "evidence"


def test_every_paragraph_of_section5_has_a_row(simulated_run):
    rows = S.section5_rows(simulated_run, [simulated_run])
    paragraphs = {r["§5"] for r in rows}
    assert paragraphs == {
        "Effectiveness",
        "Preference consistency",
        "Output consistency",
        "Marginal position exposure",
        "Efficiency",
        "Datasets",
        "Models",
        "List length",
    }
    verdicts = {r["verdict"] for r in rows}
    assert S.NOT_TESTABLE in verdicts
    for row in rows:  # an untestable claim says why; a tested one shows its evidence
        assert row["evidence"] and row["the paper"]


def test_claim_rows_carry_the_evaluations_verdicts(simulated_run):
    rows = {r["tested here (better ≻ worse)"]: r for r in S.section5_rows(simulated_run, [simulated_run])}
    for verdict in C.run_claims(simulated_run).values():
        row = rows[C.verdicts.claim_label(verdict)]
        assert row["verdict"] == verdict["verdict"]
        assert row["evidence"].count(C.verdicts.MARKS["resolved"]) + row["evidence"].count(
            C.verdicts.MARKS["unresolved"]
        ) + row["evidence"].count(C.verdicts.MARKS["against"]) == len(verdict["pairs"])


def test_the_ordering_notation_is_better_before_worse(simulated_run):
    labels = [C.verdicts.claim_label(v) for v in C.run_claims(simulated_run).values()]
    assert "LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW" in labels
    assert "PPI: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW" in labels  # lower is better: the same order
    assert "HR@5: STELLA_LW ≻ zero-shot, bootstrapping, SGS" in labels
    assert "exposure MAD: bootstrapping, SGS, STELLA_LW ≻ zero-shot" in labels
    assert all("<" not in text and " > " not in text for text in labels)


def test_combined_claims_take_holm_over_all_their_pairs(simulated_run):
    pairs = [S.Pair(simulated_run, m, "sgs", "zero_shot") for m in ("exposure_mad@5", "ppi", "gpi", "loc")]
    judged = S.judge_pairs(pairs)
    raw = [comparison(simulated_run.metrics["comparisons"], p.metric, p.better, p.worse)["p"] for p in pairs]
    assert [p["p_holm"] for p in judged["pairs"]] == pytest.approx(holm(raw))
    # five queries: the smallest exact p is 2/2^5 = 0.0625, so nothing can be resolved
    assert judged["verdict"] == "unresolved" and {p["state"] for p in judged["pairs"]} == {"unresolved"}
    assert S.judge_pairs([S.Pair(simulated_run, "ppi", "sgs", "no_such_method")]) is None


def test_exposure_skew_is_the_per_query_tail_minus_head_share():
    # K = 6: head = positions 0-1, tail = positions 4-5; the output puts the presented tail first
    def row(q, t, order):
        return {
            "query_id": q,
            "method": "zero_shot",
            "permutation": t,
            "input": list(order),
            "output": list(reversed(order)),
            "relevant": ["a"],
        }

    rows = [row(q, t, o) for q in ("q1", "q2", "q3") for t, o in enumerate(["abcdef", "fedcba"])]

    class FakeRun:
        K, methods, observations = 6, ["zero_shot"], None

    skew = S.exposure_skew(FakeRun(), k=2, rows=rows)
    assert skew["mean_diff"] == pytest.approx(1.0) and skew["n"] == 3
    assert skew["p"] == pytest.approx(sign_flip_p([1.0, 1.0, 1.0])[0])
    FakeRun.K = 2
    assert S.exposure_skew(FakeRun(), k=2, rows=rows) is None  # every candidate in the top k


def test_headline_counts_the_rows(simulated_run):
    rows = S.section5_rows(simulated_run, [simulated_run])
    counts = S.verdict_counts(rows)
    text = S.headline_sentence(simulated_run, rows)
    testable = len(rows) - counts[S.NOT_TESTABLE]
    assert f"**{counts.get('reproduced', 0)} of the {testable} claims**" in text
    assert f"{counts[S.NOT_TESTABLE]} cannot be tested" in text
    assert "a smoke run" in text  # five queries resolve nothing


@pytest.mark.skipif(not (EVIDENCE / "smollm2-span-k10" / "metrics.json").is_file(), reason="no evidence runs")
def test_sentences_quote_the_committed_runs():
    runs = C.collect_runs(ROOT / "results", grids=["evidence"])
    main = next(r for r in runs if r.name == "smollm2-span-k10")
    sweep = C.sweep_runs(runs, main)
    f1 = S.figure1_sentence(sweep)
    for r in sweep:
        if r.K > 5:
            e0 = r.metrics["methods"]["zero_shot"]["overall"]["exposure@5"][0]
            assert f"K = {r.K}: {e0:.2f} at position 0" in f1
    f2 = S.figure2_sentence(sweep)
    z = main.metrics["methods"]["zero_shot"]["overall"]["ppi"]
    b = main.metrics["methods"]["bootstrapping"]["overall"]["ppi"]
    assert f"{z:.3f} → {b:.3f}" in f2
    choice = next((r for r in runs if r.scorer == "choice"), None)
    if choice is not None:
        text = S.choice_sentence(choice, main)
        assert f"PPI {choice.metrics['methods']['zero_shot']['overall']['ppi']:.3f}" in text
        follows = choice.metrics["methods"]["zero_shot"]["overall"]["ppi"] > 0.9
        assert ("follows the labels" in text) == (
            follows and choice.metrics["methods"]["zero_shot"]["overall"]["exposure@5"][0] > 0.95
        )


def test_table_puts_one_pair_per_line(simulated_run):
    styled = S.section5_table(simulated_run, [simulated_run])
    html = styled.to_html()
    assert "<br>" in html and "not testable here" in html
    assert list(styled.data.columns) == ["the paper", "tested here (better ≻ worse)", "verdict", "evidence"]


def test_markdown_to_html_escapes_and_keeps_bold():
    assert (
        S.markdown_to_html("**8 of 9** claims <of> the paper's")
        == "<p><strong>8 of 9</strong> claims &lt;of&gt; the paper&#x27;s</p>"
    )


def test_the_absolute_loc_claim_names_our_k_and_value(simulated_run):
    """The paper's "all values below 0.13" is a level of 3–7 B models at K = 25: the row says so and quotes our
    STELLA_LW LOC with the K it was measured at (the paper's own K once Table 1 is at K = 25)."""
    row = next(r for r in S.section5_rows(simulated_run, [simulated_run]) if "below 0.13" in r["the paper"])
    loc = simulated_run.metrics["methods"]["stella"]["overall"]["loc"]
    assert row["verdict"] == S.NOT_TESTABLE
    assert row["evidence"].endswith(f"has its own scale (ours at K = {simulated_run.K}: {loc:.3f})")


def test_the_claims_table_carries_the_class_that_fixes_its_column_widths(simulated_run):
    """The evidence column was squeezed to a few words a line by the quotations beside it: the table carries the
    class ``claims`` that the book's stylesheet gives fixed column widths, five of them."""
    html = S.section5_table(simulated_run, [simulated_run]).to_html()
    assert 'class="claims"' in html
    css = (ROOT / "book" / "_static" / "invarirank.css").read_text(encoding="utf-8")
    widths = [float(w) for w in re.findall(r"table\.claims th:nth-child\(\d\) \{ width: (\d+)%; \}", css)]
    assert len(widths) == 5 and sum(widths) == 100
