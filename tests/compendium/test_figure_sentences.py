"""The sentences under the figures (invarirank.compendium._figure_sentences) quote the numbers of the committed runs,
and the first-position diagnostic says what the observations show."""

from __future__ import annotations

import pytest

from invarirank import compendium as C
from invarirank.compendium import _figure_sentences as F
from invarirank.evaluation import read_observations
from invarirank.evaluation._position_effects import first_position_effect
from tests.support import ROOT

EVIDENCE = ROOT / "results" / "evidence"


@pytest.mark.skipif(not (EVIDENCE / "smollm2-span-k10" / "metrics.json").is_file(), reason="no evidence runs")
def test_sentences_quote_the_committed_runs():
    runs = C.collect_runs(ROOT / "results", grids=["evidence"])
    main = next(r for r in runs if r.name == "smollm2-span-k10")
    sweep = C.sweep_runs(runs, main)
    f1 = F.figure1_sentence(sweep)
    for r in sweep:
        if r.K > 5:
            e0 = r.metrics["methods"]["zero_shot"]["overall"]["exposure@5"][0]
            assert f"K = {r.K}: {e0:.2f} at position 0" in f1
    f2 = F.figure2_sentence(sweep)
    z = main.metrics["methods"]["zero_shot"]["overall"]["ppi"]
    b = main.metrics["methods"]["bootstrapping"]["overall"]["ppi"]
    assert f"{z:.3f} → {b:.3f}" in f2
    choice = next((r for r in runs if r.scorer == "choice"), None)
    if choice is not None:
        text = F.choice_sentence(choice, main)
        assert f"PPI {choice.metrics['methods']['zero_shot']['overall']['ppi']:.3f}" in text
        follows = choice.metrics["methods"]["zero_shot"]["overall"]["ppi"] > 0.9
        assert ("follows the labels" in text) == (
            follows and choice.metrics["methods"]["zero_shot"]["overall"]["exposure@5"][0] > 0.95
        )


PAPER_CPU = ROOT / "results" / "paper-cpu"


@pytest.mark.skipif(not (PAPER_CPU / "qwen25-span-k25" / "metrics.json").is_file(), reason="no Qwen2.5 span run")
def test_a_model_run_at_one_list_length_is_not_said_to_hold_at_every_k():
    runs = C.collect_runs(ROOT / "results", grids=["paper-cpu"])
    qwen = next(r for r in runs if r.name == "qwen25-span-k25")
    own = C.sweep_runs([r for r in runs if r.scorer == "span"], qwen)
    assert [r.K for r in own] == [25]
    text = F.figure1_sentence(own)
    assert "ones at K = 25; there the exposure MAD" in text and "every K" not in text
    smol = next(r for r in runs if r.name == "smollm2-span-k25")
    assert "ones at every K" in F.figure1_sentence(C.sweep_runs(runs, smol))  # three list lengths


@pytest.mark.skipif(not (EVIDENCE / "smollm2-choice-k10" / "metrics.json").is_file(), reason="no evidence runs")
def test_the_first_position_sentence_quotes_the_diagnostic():
    runs = C.collect_runs(ROOT / "results", grids=["evidence"])
    span = next(r for r in runs if r.name == "smollm2-span-k10")
    choice = next(r for r in runs if r.name == "smollm2-choice-k10")
    span_rows, choice_rows = read_observations(span.observations), read_observations(choice.observations)
    text = F.first_position_sentence((span, span_rows), (choice, choice_rows))
    d, c = first_position_effect(span_rows, "zero_shot"), first_position_effect(choice_rows, "zero_shot")
    assert f"{abs(d['shift'][0]):.2f} {'lower' if d['shift'][0] < 0 else 'higher'}" in text
    assert f"{d['exposure_first']:.1%}" in text and f"{c['exposure_first']:.0%} of rows" in text
    # the sentence's reading follows the numbers: a step at the first slot only when it dwarfs the rest
    assert ("a step at the first slot alone" in text) == (
        abs(d["shift"][0]) > F.STEP * max(map(abs, d["rest"])) and d["p_first"] < 0.05
    )


def test_markdown_to_html_escapes_and_keeps_bold():
    assert (
        F.markdown_to_html("**8 of 9** claims <of> the paper's")
        == "<p><strong>8 of 9</strong> claims &lt;of&gt; the paper&#x27;s</p>"
    )
