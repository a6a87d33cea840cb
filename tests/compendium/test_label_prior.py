"""The label prior against position bias (:mod:`invarirank.compendium._label_prior`): known answers on hand-made rows
of the fixed scheme (labels = positions) and of a label-swap audit (labels permuted), and one-line errors."""

from __future__ import annotations

import pytest

from invarirank.compendium._label_prior import label_prior, label_prior_table
from invarirank.errors import InvariRankError


def _row(inp, out, labels=None, method="zero_shot"):
    row = {"query_id": "q", "method": method, "input": list(inp), "output": list(out)}
    if labels is not None:
        row["labels"] = list(labels)
    return row


def test_fixed_scheme_label_and_position_are_the_same_counts():
    rows = [
        _row("xyz", "xyz"),  # first: position 0 (label A)
        _row("yzx", "yxz"),  # first: position 0
        _row("zxy", "yzx"),  # first: position 2 (label C)
        _row("xzy", "zxy"),  # first: position 1 (label B)
    ]
    p = label_prior(rows, exposure_k=2)["zero_shot"]
    assert (p.k, p.lists, p.swapped, p.exposure_k) == (3, 4, False, 2)
    assert p.first_by_position == [0.5, 0.25, 0.25]
    assert p.first_by_label == {"A": 0.5, "B": 0.25, "C": 0.25}
    # top 2: the rows put presented positions {0,1}, {0,2}, {2,0}, {1,0} there
    assert p.exposure_by_position == [1.0, 0.5, 0.5]
    assert p.exposure_by_label == {"A": 1.0, "B": 0.5, "C": 0.5}
    assert p.top_label == ("A", 0.5) and p.top_position == (0, 0.5)
    assert p.label_tv == pytest.approx(p.position_tv) == pytest.approx(0.5 * (1 / 6 + 1 / 12 + 1 / 12))
    table = label_prior_table(p)
    assert list(table["label"]) == ["A", "B", "C"] and list(table["first place by position"]) == [0.5, 0.25, 0.25]


def test_label_swap_separates_a_label_follower_from_a_position_follower():
    inputs = ["xyz", "yzx", "zxy"]
    labels = ["ABC", "CAB", "BCA"]  # label A at position 0, 1, 2 in turn

    def by_label(inp, labs):  # always ranks the candidate labelled A first, then B, then C
        return [inp[labs.index(x)] for x in "ABC"]

    rows = [_row(i, by_label(i, labs), labs, "letters") for i, labs in zip(inputs, labels)]
    rows += [_row(i, i, labs, "places") for i, labs in zip(inputs, labels)]  # always keeps the presented order
    got = label_prior(rows, exposure_k=1)
    letters, places = got["letters"], got["places"]
    assert letters.swapped and places.swapped
    assert letters.first_by_label == {"A": 1.0, "B": 0.0, "C": 0.0}
    assert letters.first_by_position == pytest.approx([1 / 3] * 3)
    assert letters.label_tv == pytest.approx(2 / 3) and letters.position_tv == pytest.approx(0.0)
    assert places.first_by_position == [1.0, 0.0, 0.0]
    assert places.first_by_label == pytest.approx({"A": 1 / 3, "B": 1 / 3, "C": 1 / 3})
    assert places.position_tv == pytest.approx(2 / 3) and places.label_tv == pytest.approx(0.0)
    assert letters.exposure_by_label == letters.first_by_label  # top 1 = first place


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([_row("xy", "xy", "A")], "field 'labels'"),
        ([_row("xy", "xy", "AA")], "field 'labels'"),
        ([_row("xy", "xz")], "permutation"),
        ([_row("xy", "xy"), _row("xyz", "xyz")], "K = 3, but"),
    ],
)
def test_bad_rows_are_one_line_errors(rows, message):
    with pytest.raises(InvariRankError, match=message):
        label_prior(rows)
    with pytest.raises(InvariRankError, match="exposure_k"):
        label_prior([_row("xy", "xy")], exposure_k=0)


def test_a_label_swap_audit_is_paired_with_its_committed_fixed_run(tmp_path):
    """A label-swap audit folder (written as ``invarirank audit`` writes it) beside the committed SmolLM2 choice run
    at K = 10: paired on the same users and presented orders, summarised, and told in words."""
    import json

    from invarirank import compendium
    from invarirank.compendium._label_prior import (
        label_prior_summary,
        label_swap_comparison,
        label_swap_pairs,
        label_swap_sentence,
    )
    from invarirank.evaluation import read_observations, write_observations
    from tests.support import ROOT

    runs = [r for r in compendium.collect_runs(ROOT / "results") if r.grid == "evidence" and r.scorer == "choice"]
    fixed_run = next(r for r in runs if r.K == 10 and r.model == "smollm2-135m")
    fixed = [r for r in read_observations(fixed_run.observations) if r["method"] == "zero_shot"][:10]
    # a letter follower: the candidate labelled A is ranked first wherever it is written
    swapped = []
    for n, row in enumerate(fixed):
        labels = list("ABCDEFGHIJ"[n:] + "ABCDEFGHIJ"[:n])
        first = row["input"][labels.index("A")]
        out = [first] + [x for x in row["output"] if x != first]
        swapped.append({**row, "output": out, "design": "label-swap", "labels": labels})
    folder = tmp_path / "evidence" / "swap"
    folder.mkdir(parents=True)
    write_observations(folder / "observations.jsonl", swapped)
    head = {
        "kind": "audit",
        "design": {"name": "label-swap"},
        "rerankers": [{"scorer": {"scorer": "choice", "model": fixed_run.model}}],
    }
    (folder / "manifest.json").write_text(json.dumps(head), encoding="utf-8")
    (pair,) = label_swap_pairs(tmp_path, runs)
    assert pair[0].endswith(f"{fixed_run.grid}/{fixed_run.name}") and len(pair[1]) == len(pair[2]) == 10
    table = label_swap_comparison(pair[1], pair[2])
    assert list(table["label most often first"]) == ["A", "A"] and list(table["its share"]) == [1.0, 1.0]
    assert table["TV from uniform, by label"].iloc[1] == pytest.approx(0.9)
    assert table["TV from uniform, by position"].iloc[1] == pytest.approx(0.0)  # A once at each position
    sentence = label_swap_sentence(pair[1], pair[2])
    assert "ranks by the label letter" in sentence
    # the fixed labels' favourite is named with its shares once letter and place are parted: A keeps first place
    # in every list (1.00), position 0 holds it once in 10 lists (0.10)
    assert "label A (always at position 0) is ranked first in 1.00" in sentence
    assert "label A in 1.00 and position 0 in 0.10" in sentence
    summary = label_prior_summary([fixed_run])
    assert summary["K"].tolist() == [10] and 0.0 <= summary["label A first"].iloc[0] <= 1.0
