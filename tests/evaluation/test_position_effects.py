"""Position effects from observations (invarirank.evaluation._position_effects): the exposure skew is the per-query
tail-minus-head share, and the first-position diagnostic finds a first-slot step where one was planted."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.evaluation._comparisons import sign_flip_p
from invarirank.evaluation._position_effects import exposure_skew, first_position_effect


def _row(q, t, order, output=None, scores=None):
    return {
        "query_id": q,
        "method": "zero_shot",
        "permutation": t,
        "input": list(order),
        "output": list(output if output is not None else reversed(order)),
        "relevant": ["a"],
        **({"scores": scores} if scores is not None else {}),
    }


def test_exposure_skew_is_the_per_query_tail_minus_head_share():
    # K = 6: head = positions 0-1, tail = positions 4-5; the output puts the presented tail first
    rows = [_row(q, t, o) for q in ("q1", "q2", "q3") for t, o in enumerate(["abcdef", "fedcba"])]
    skew = exposure_skew(rows, "zero_shot", k=2)
    assert skew["mean_diff"] == pytest.approx(1.0) and skew["n"] == 3
    assert skew["p"] == pytest.approx(sign_flip_p([1.0, 1.0, 1.0])[0])
    assert exposure_skew(rows, "zero_shot", k=6) is None  # every candidate in the top k
    assert exposure_skew(rows, method="sgs", k=2) is None


def test_skipping_the_first_position_removes_a_skew_that_only_the_first_slot_made():
    """A ranker that sends the first candidate to the bottom and orders the rest at random: with position 0 the head
    third loses exposure; without it the head and tail thirds get the same exposure on average."""
    rng = np.random.default_rng(1)
    rows = []
    for q in range(8):
        for t in range(200):
            order = list(rng.permutation(list("abcdefghi")))
            rest = list(rng.permutation(order[1:]))
            rows.append(_row(f"q{q}", t, order, output=rest + [order[0]]))
    assert exposure_skew(rows, "zero_shot", k=3)["mean_diff"] > 0.1
    assert abs(exposure_skew(rows, "zero_shot", k=3, skip_first=True)["mean_diff"]) < 0.03


def test_a_planted_first_slot_penalty_is_found_and_a_flat_scorer_shows_none():
    rng = np.random.default_rng(0)
    items = list("abcdefgh")
    value = {c: float(i) for i, c in enumerate(items)}

    def rows(penalty):
        out = []
        for q in range(6):
            for t in range(8):
                order = list(rng.permutation(items))
                scores = [value[c] - (penalty if p == 0 else 0.0) + rng.normal(0, 0.01) for p, c in enumerate(order)]
                output = [c for _, c in sorted(zip(scores, order), key=lambda x: -x[0])]
                out.append(_row(f"q{q}", t, order, output=output, scores=scores))
        return out

    planted = first_position_effect(rows(2.0), "zero_shot", k=3)
    assert planted["shift"][0] == pytest.approx(-2.0 * 8 / 7, abs=0.3)  # minus the penalty, diluted elsewhere
    assert max(map(abs, planted["rest"])) < 0.5 and planted["first_minus_second"] < -1.5
    assert planted["p_first"] < 0.05
    flat = first_position_effect(rows(0.0), "zero_shot", k=3)
    assert abs(flat["shift"][0]) < 0.1 and abs(flat["first_minus_second"]) < 0.1
    assert (
        first_position_effect([{**r, "scores": []} for r in rows(0.0)], "zero_shot") is None
    )  # no scores, no diagnosis
