"""Every claim of the paper's §5 on our runs (invarirank.compendium._section5): verdicts come from the one judge,
combined claims take Holm's correction over all their pairs, every row falls in one headline category, the headline
counts them, and a contradiction (resolved or not) is said in words without a power figure."""

from __future__ import annotations

import re

import pytest

from invarirank import compendium as C
from invarirank.compendium import _section5 as S
from invarirank.compendium import _section5_page as P
from invarirank.evaluation._claims import holm, judge_pairs
from invarirank.evaluation._comparisons import comparison
from tests.support import ROOT

PAPER_CPU = ROOT / "results" / "paper-cpu"


def _paper_cpu_main():
    """The committed paper-cpu runs and the one that sets Table 1 there: the grid file's main run, as the results
    page takes it (a second model's or scorer's run at the same K never does)."""
    from invarirank.grid import load_grid, main_run

    runs = C.collect_runs(ROOT / "results", grids=["paper-cpu"])
    name = main_run(load_grid(ROOT / "configs" / "grid-paper-cpu.yaml")).run_name
    return runs, C.main_run(runs, name)


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
        row = rows[C._verdicts.claim_label(verdict)]
        assert row["verdict"].startswith(verdict["verdict"])
        assert row["category"] in S.CATEGORIES
        assert row["evidence"].count(C._verdicts.MARKS["resolved"]) + row["evidence"].count(
            C._verdicts.MARKS["unresolved"]
        ) + row["evidence"].count(C._verdicts.MARKS["against"]) == len(verdict["pairs"])


def test_the_ordering_notation_is_better_before_worse(simulated_run):
    labels = [C._verdicts.claim_label(v) for v in C.run_claims(simulated_run).values()]
    assert "LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW" in labels
    assert "PPI: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW" in labels  # lower is better: the same order
    assert "HR@5: STELLA_LW ≻ zero-shot, bootstrapping, SGS" in labels
    assert "exposure MAD: bootstrapping, SGS, STELLA_LW ≻ zero-shot" in labels
    assert all("<" not in text and " > " not in text for text in labels)


def test_combined_claims_take_holm_over_all_their_pairs(simulated_run):
    pairs = [S.Pair(simulated_run, m, "sgs", "zero_shot") for m in ("exposure_mad@5", "ppi", "gpi", "loc")]
    judged = judge_pairs(S.pair_records(pairs))
    raw = [comparison(simulated_run.metrics["comparisons"], p.metric, p.better, p.worse)["p"] for p in pairs]
    assert [p["p_holm"] for p in judged["pairs"]] == pytest.approx(holm(raw))
    # five queries: the smallest exact p is 2/2^5 = 0.0625, so nothing can be resolved
    assert not any(p["resolved"] for p in judged["pairs"]) and judged["verdict"] != "reproduced"
    assert S.pair_records([S.Pair(simulated_run, "ppi", "sgs", "no_such_method")]) is None


def test_headline_counts_the_rows_in_five_categories(simulated_run):
    rows = S.section5_rows(simulated_run, [simulated_run])
    counts = P.verdict_counts(rows)
    assert set(counts) == {*S.CATEGORIES, S.NOT_TESTABLE} and sum(counts.values()) == len(rows)
    text = P.headline_sentence(simulated_run, rows)
    testable = len(rows) - counts[S.NOT_TESTABLE]
    assert f"of the {testable} claims" in text and f"**{counts['reproduced']} reproduced**" in text
    for category in S.CATEGORIES[1:]:
        assert f"{counts[category]} {category}" in text
    assert f"{counts[S.NOT_TESTABLE]} cannot be tested" in text
    assert "a smoke run that can resolve no pair" in text  # five queries resolve nothing
    assert counts["reproduced"] == 0  # ...so nothing is reproduced but by construction


def _doctored(run, metric, better, worse, mean_diff, p):
    """``run`` with one comparison replaced (A − B = ``mean_diff``, raw ``p``)."""
    import copy

    out = copy.deepcopy(run)
    rec = comparison(out.metrics["comparisons"], metric, better, worse)
    rec.update(mean_diff=mean_diff, p=p, queries_80=123)
    if better not in out.metrics["comparisons"][metric] or worse not in out.metrics["comparisons"][metric][better]:
        out.metrics["comparisons"][metric][worse][better].update(mean_diff=-mean_diff, p=p, queries_80=123)
    return out


def test_a_difference_of_the_wrong_sign_contradicts_with_no_power_figure(simulated_run):
    """STELLA_LW below zero-shot on HR@5, unresolved: the claim is contradicted (not resolved), the row says "the
    other way", and no pair of the wrong sign carries a number of queries for 80% power."""
    run = _doctored(simulated_run, "hr@5", "stella", "zero_shot", -0.03, 0.5)
    verdict = C.run_claims(run)["hr5_stella_best"]
    assert verdict["verdict"] == "contradicted" and not verdict["resolved_against"]
    wrong = [p for p in verdict["pairs"] if p["direction"] == "reversed"]
    assert wrong and all(p["queries_80"] is None and C._verdicts.queries_needed(p, 3) is None for p in wrong)
    row = next(r for r in S.section5_rows(run, [run]) if r["short"] == "STELLA_LW best on HR@5")
    assert row["category"] == "contradicted" and "not resolved" in row["verdict"]
    assert "the other way" in row["evidence"]
    assert "80% power" not in C._verdicts.verdict_sentence(verdict).split("unresolved:")[-1].split(";")[0] or all(
        p["direction"] != "reversed" for p in verdict["pairs"] if not p["resolved"]
    )


@pytest.mark.skipif(not (PAPER_CPU / "smollm2-span-k25" / "metrics.json").is_file(), reason="no paper-cpu runs")
def test_the_committed_paper_cpu_headline_is_honest():
    """On the committed paper-cpu grid at K = 25: the two claims tested only in part are counted apart, the
    passes per order are reproduced by construction, and STELLA_LW's HR@5, the lowest of the four methods, makes
    its claim contradicted, with the paper's contrast named as not seen."""
    runs, main = _paper_cpu_main()
    sweep = C.sweep_runs(runs, main)
    rows = S.section5_rows(main, sweep, [main])
    by = {r["short"]: r for r in rows}
    assert by["the passes per order"]["category"] == "reproduced by construction"
    assert by["the mitigations flatten exposure"]["category"] in ("tested in part", "unresolved", "contradicted")
    assert "zero-shot only" in by["the mitigations flatten exposure"]["evidence"]
    if len([r for r in sweep if "sgs" in r.methods]) < len(sweep):  # SGS not run at every K
        assert by["the ordering persists across K"]["category"] != "reproduced"
    hr = {m: v["overall"]["hr@5"] for m, v in main.metrics["methods"].items()}
    stella = by["STELLA_LW best on HR@5"]
    assert (stella["category"] == "contradicted") == any(hr["stella"] < v for m, v in hr.items() if m != "stella")
    if hr["stella"] == min(hr.values()):
        assert "the lowest HR@5" in stella["evidence"] and "not seen" in stella["evidence"]
        assert "lowest HR@5" in P.headline_sentence(main, rows)
    counts = P.verdict_counts(rows)
    text = P.headline_sentence(main, rows)
    assert (
        all(f"{counts[c]} {c}" in text for c in S.CATEGORIES[1:]) and f"**{counts['reproduced']} reproduced**" in text
    )


def test_table_puts_one_pair_per_line(simulated_run):
    styled = P.section5_table(simulated_run, [simulated_run])
    html = styled.to_html()
    assert "<br>" in html and "not testable here" in html
    assert list(styled.data.columns) == ["the paper", "tested here (better ≻ worse)", "verdict", "evidence"]


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
    html = P.section5_table(simulated_run, [simulated_run]).to_html()
    assert 'class="claims"' in html
    css = (ROOT / "book" / "_static" / "invarirank.css").read_text(encoding="utf-8")
    widths = [float(w) for w in re.findall(r"table\.claims th:nth-child\(\d\) \{ width: (\d+)%; \}", css)]
    assert len(widths) == 5 and sum(widths) == 100


@pytest.mark.skipif(not (PAPER_CPU / "smollm2-span-k25" / "metrics.json").is_file(), reason="no paper-cpu runs")
def test_the_readme_states_the_headline_counts_of_the_committed_runs():
    """The README's paragraph is typed (GitHub shows it unbuilt): it must hold the counts the book computes, for
    every model of Table 1 (the results page's rows: the main model, then each other model of the grid with the main
    run's scorer), each model's counts after its name and before the next model's."""
    runs, main = _paper_cpu_main()
    same = [r for r in runs if r.scorer == main.scorer]
    table_runs = [r for r in same if r.model == main.model] + [r for r in same if r.model != main.model]
    counts = P.model_counts(S.section5_rows(main, C.sweep_runs(runs, main), table_runs))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = " ".join(readme.split("**Found**", 1)[1].split("##", 1)[0].split())
    labels = [C.model_label(model) for model in counts]
    starts = [paragraph.find(label) for label in labels]
    assert all(s >= 0 for s in starts) and starts == sorted(starts), (labels, paragraph)
    for (model, own), start, end in zip(counts.items(), starts, [*starts[1:], len(paragraph)]):
        text = paragraph[start:end]
        testable = sum(own[c] for c in S.CATEGORIES)
        assert f"of {testable} testable claims," in text and f"**{own['reproduced']} reproduced**" in text, model
        for category in S.CATEGORIES[1:]:
            assert f"{own[category]} {category}" in text, (model, category)
        assert f"{own[S.NOT_TESTABLE]} cannot be tested" in text, model
