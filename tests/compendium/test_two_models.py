"""Two models in Table 1 (the paper-cpu grid once Qwen2.5-Coder-0.5B's span run joins SmolLM2-135M's at K = 25):
every claim is judged on each model's own runs, the headline counts each model's categories apart, Table 1 and the
comparison with the paper show both models with their own reference rows, Figure 1 gives the second model a row of
its own, and a paragraph says what the second model can and cannot say about the paper's models.

The second model is the ``simulated_run`` fixture deep-copied under another model and name (the same numbers, so
any difference between the two models' verdicts comes from a doctored comparison)."""

from __future__ import annotations

import copy
import re

import pytest

from invarirank import compendium as C
from invarirank.compendium import _section5 as S
from invarirank.compendium import _section5_page as P
from invarirank.evaluation._comparisons import comparison
from tests.support import ROOT

SECOND = "qwen2.5-coder-0.5b"


def _second(run, name="qwen-k6"):
    """``run`` as another model's run of the same grid (same numbers, another model id and run name)."""
    out = copy.deepcopy(run)
    out.model, out.name = SECOND, name
    return out


def _doctored(run, metric, better, worse, mean_diff, p):
    """``run`` with one comparison replaced (better − worse = ``mean_diff``, raw ``p``), both directions."""
    out = copy.deepcopy(run)
    comparison(out.metrics["comparisons"], metric, better, worse).update(mean_diff=mean_diff, p=p, queries_80=123)
    by = out.metrics["comparisons"][metric]
    if worse in by and better in by[worse]:
        by[worse][better].update(mean_diff=-mean_diff, p=p, queries_80=123)
    return out


def _of(row, model):
    return next(m for m in row["models"] if m["model"] == model)


def _rows(main, second, sweep=None):
    return S.section5_rows(main, sweep or [main], [main, second])


def test_each_model_is_judged_on_its_own_runs(simulated_run):
    """A comparison doctored on one model contradicts that model's claim alone: the other model's verdict on the same
    claim is what it is when judged by itself."""
    main, second = simulated_run, _second(simulated_run)
    alone = {r["short"]: r for r in S.section5_rows(main, [main])}
    doctored = _doctored(second, "hr@5", "stella", "zero_shot", -0.03, 0.5)
    rows = {r["short"]: r for r in _rows(main, doctored)}
    hr5 = rows["STELLA_LW best on HR@5"]
    assert _of(hr5, SECOND)["category"] == "contradicted"
    assert _of(hr5, main.model)["category"] == alone["STELLA_LW best on HR@5"]["category"] != "contradicted"
    assert hr5["category"] == _of(hr5, main.model)["category"]  # the row's own category is the main model's
    assert {run for run, _, _ in hr5["claims"]} == {main.name, doctored.name}
    # ... and the other way round: the main model doctored, the second model's row unaffected
    rows = {r["short"]: r for r in _rows(_doctored(main, "hr@5", "stella", "zero_shot", -0.03, 0.5), second)}
    hr5 = rows["STELLA_LW best on HR@5"]
    assert _of(hr5, main.model)["category"] == "contradicted" == hr5["category"]
    assert _of(hr5, SECOND)["category"] == alone["STELLA_LW best on HR@5"]["category"]
    for short, row in rows.items():  # every model's judgement on every row, in the table's categories
        assert [m["model"] for m in row["models"]] == [main.model, SECOND], short
        assert all(m["category"] in (*S.CATEGORIES, S.NOT_TESTABLE) for m in row["models"])


def test_a_second_model_without_a_k_sweep_cannot_test_the_claims_across_k(simulated_run):
    """The main model has a K sweep (a second run at another K); the second model was run at the main K only: the
    claim across K is tested on the first and not testable on the second, with the reason."""
    main, second = simulated_run, _second(simulated_run)
    wider = copy.deepcopy(simulated_run)
    wider.K, wider.name = main.K + 2, "sim-wider"
    rows = {r["short"]: r for r in S.section5_rows(main, [main, wider], [main, wider, second])}
    across = rows["the ordering persists across K"]
    assert _of(across, main.model)["category"] != S.NOT_TESTABLE
    ours = _of(across, SECOND)
    assert ours["category"] == S.NOT_TESTABLE
    assert ours["evidence"] == f"no K sweep of Qwen2.5-Coder-0.5B: it was run at K = {main.K} only"
    assert "Qwen2.5-Coder-0.5B: not testable here" in across["verdict"]
    # the exposure skew comes from each model's own zero-shot rows: the main model's at both K, the second's at one
    skew = rows["zero-shot's early positions lose exposure"]
    assert _of(skew, main.model)["evidence"].count("K = ") > _of(skew, SECOND)["evidence"].count("K = ")


def test_the_headline_counts_each_models_claims_apart(simulated_run):
    main = simulated_run
    second = _doctored(_second(main), "hr@5", "stella", "zero_shot", -0.03, 0.5)
    rows = _rows(main, second)
    counts = P.model_counts(rows)
    assert list(counts) == [main.model, SECOND]
    assert all(sum(c.values()) == len(rows) for c in counts.values())  # every row once per model
    assert counts[SECOND]["contradicted"] == counts[main.model]["contradicted"] + 1
    text = P.headline_sentence(main, rows)
    first, other = text.split(" On Qwen2.5-Coder-0.5B (")
    for part, c in ((first, counts[main.model]), (other, counts[SECOND])):
        testable = sum(c[k] for k in S.CATEGORIES)
        assert f"of the {testable} claims" in part and f"**{c['reproduced']} reproduced**" in part
        assert all(f"{c[k]} {k}" in part for k in S.CATEGORIES[1:])
        assert f"{c[S.NOT_TESTABLE]} cannot be tested" in part
    assert first.startswith(f"On {C.model_label(main.model)} (") and "judged on its own runs" in text
    # one model: the sentence the README quotes, unchanged
    one = S.section5_rows(main, [main])
    assert P.headline_sentence(main, one).endswith("cannot be tested with this data and these models.")


def test_the_claims_table_gives_each_models_verdict_under_its_name(simulated_run):
    main = simulated_run
    second = _doctored(_second(main), "hr@5", "stella", "zero_shot", -0.03, 0.5)
    styled = P.section5_table(main, [main], [main, second])
    assert list(styled.data.columns) == ["the paper", "tested here (better ≻ worse)", "verdict", "evidence"]
    html = styled.to_html()
    found = re.findall(r'data-run="([^"]+)" data-claim="([^"]+)" data-verdict="([^"]+)"', html)
    assert {(r, c) for r, c, _ in found} == {
        (run.name, name) for run in (main, second) for name in C.run_claims(run)
    }  # every model's verdict of every named claim, with its own run
    assert (second.name, "hr5_stella_best", "contradicted") in found
    assert "<strong>Qwen2.5-Coder-0.5B</strong>: contradicted" in html
    assert "Qwen2.5-Coder-0.5B" in styled.caption and "each model's own runs" in styled.caption


def test_table_1_shows_both_models_with_their_own_reference_rows(simulated_run):
    main, second = simulated_run, _second(simulated_run)
    second.n_queries = 3
    df = C.table1([main, second], styled=False)
    rows = list(df.index)
    for model in (main.model, SECOND):
        label = C.model_label(model)
        assert [m for mo, m in rows if mo == label] == [
            *(C.METHOD_LABELS[m] for m in main.methods),
            "random order (reference)",
        ]
    caption = C.table1([main, second]).caption
    assert f"Each model's rows are on its own queries (simulated: {main.n_queries}, Qwen2.5-Coder-0.5B: 3)" in caption


def test_beside_the_paper_each_model_has_a_row_and_each_paper_row_appears_once(simulated_run):
    paper = C.paper_table(ROOT / "book" / "data" / "paper_table1.csv")
    main, second = copy.deepcopy(simulated_run), _second(simulated_run)
    main.dataset = second.dataset = "ml-100k"
    main.model = "smollm2-135m"
    df = C.beside_paper([main, second], paper, styled=False)
    assert df.index.is_unique
    sources = list(df.loc["zero-shot"].index)
    assert sources == [
        "ours: SmolLM2-135M",
        "ours: Qwen2.5-Coder-0.5B",
        "paper: Llama-3B",
        "paper: Mistral-7B",
        "paper: Qwen-7B",
    ]


def test_the_sentence_under_table_1_says_whose_queries_each_model_has(simulated_run):
    main, second = copy.deepcopy(simulated_run), _second(simulated_run)
    main.model = "smollm2-135m"
    second.manifest["queries"]["ids"] = main.manifest["queries"]["ids"][:3]
    text = C.table_models_sentence([main, second], [main, second], main.K)
    assert text.startswith("Table 1 shows 2 models side by side (SmolLM2-135M, Qwen2.5-Coder-0.5B)")
    assert f"SmolLM2-135M: {main.n_queries}; Qwen2.5-Coder-0.5B: the first 3 of the same 5 users" in text
    assert "its own reference rows" in text


def test_figure_1_gives_the_second_model_its_own_row_under_the_same_k(simulated_run):
    main, second = simulated_run, _second(simulated_run)
    wider = copy.deepcopy(simulated_run)
    wider.K, wider.name = main.K + 2, "sim-wider"
    fig = C.figure_exposure([main, wider, second], n_bootstrap=20, seed=1)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    titles = [ax.get_title() for ax in shown]
    assert len(shown) == 3 and any(t.startswith("Qwen2.5-Coder-0.5B\nK = 6") for t in titles)
    at_k = [ax for ax in shown if "K = 6 " in ax.get_title()]
    assert len(at_k) == 2  # both models' lines at the main K, one panel each
    for ax in at_k:
        labels = {line.get_label() for line in ax.get_lines() if len(line.get_ydata())}
        assert {C.METHOD_LABELS[m] for m in main.methods} <= labels
    assert at_k[0].get_ylim() == at_k[1].get_ylim()  # one vertical scale per list length
    # the second model's panel sits under the first model's at the same K (same column)
    x = [ax.get_position().x0 for ax in at_k]
    assert x[0] == pytest.approx(x[1]) and at_k[0].get_position().y0 != at_k[1].get_position().y0


def test_the_second_model_paragraph_is_computed_from_its_runs(simulated_run):
    paper = C.paper_table(ROOT / "book" / "data" / "paper_table1.csv")
    main = simulated_run
    assert C.second_model_paragraph(S.section5_rows(main, [main]), paper) == ""  # one model: no paragraph
    second = _doctored(_second(main), "hr@5", "stella", "zero_shot", -0.03, 0.5)
    second.dataset = main.dataset = "ml-100k"
    text = C.second_model_paragraph(_rows(main, second), paper)
    assert text.startswith("**What Qwen2.5-Coder-0.5B can and cannot say about the paper's 3–7 B models.**")
    assert "of the family of the paper's Qwen-7B (tuned for code)" in text
    assert "differs on 1: STELLA_LW best on HR@5" in text and "Qwen2.5-Coder-0.5B: contradicted" in text
    assert "What it cannot say:" in text and "nothing about the paper's models' effectiveness" in text
