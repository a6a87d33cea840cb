"""Prompt rendering (PROTOCOL §3) and the torch-free parts of invarirank.llm."""

from __future__ import annotations

import subprocess
import sys

import pytest

from invarirank.errors import InvariRankError
from invarirank.llm import make_scorer
from invarirank.llm._prompts import (
    TEMPLATE_VERSION,
    ChoiceTemplate,
    SpanTemplate,
    choice_message,
    format_rating,
    render_history_line,
    render_item,
    span_segments,
    span_text,
)
from invarirank.types import HistoryEntry, Item

TOY = Item("1", "Toy Story", 1995, ("Animation", "Children's", "Comedy"))
NOYEAR = Item("2", "Some Book", None, ("Books", "Fiction"))
BARE = Item("3", "Untitled", None, ())


def test_item_and_history_lines():
    assert render_item(TOY) == "Toy Story (1995), genres: Animation, Children's, Comedy"
    assert render_item(NOYEAR) == "Some Book, genres: Books, Fiction"
    assert render_item(BARE) == "Untitled"
    assert render_item(Item("4", "Year As Float", 1995.0, ())) == "Year As Float (1995)"  # type: ignore[arg-type]
    assert (
        render_history_line(HistoryEntry(TOY, 4.0))
        == "title: Toy Story (1995), rating: 4, genres: Animation, Children's, Comedy"
    )
    assert render_history_line(HistoryEntry(NOYEAR, 3.5)) == "title: Some Book, rating: 3.5, genres: Books, Fiction"
    assert render_item(Item("5", "Two\nLines", 2000, ("A\nB",))) == "Two Lines (2000), genres: A B"
    # every line break becomes a space (U+2028, NEL, \r\n as two), edges are stripped
    assert render_item(Item("6", " A\u2028B\r\nC\t ", None, ("x\x85y", " \n "))) == "A B  C, genres: x y"


@pytest.mark.parametrize("rating,text", [(4.0, "4"), (5, "5"), (3.5, "3.5"), (4.25, "4.25"), (0.0, "0")])
def test_rating_format(rating, text):
    assert format_rating(rating) == text


def test_span_prompt_layout_is_exact():
    history = (HistoryEntry(TOY, 5.0), HistoryEntry(NOYEAR, 2.0))
    text = span_text(history, [NOYEAR, TOY])
    assert text == (
        "[SPAN]\n"
        "Given the user's interaction history, rank the candidate items according to the user's preferences.\n"
        "\n"
        "User history:\n"
        "title: Toy Story (1995), rating: 5, genres: Animation, Children's, Comedy\n"
        "title: Some Book, rating: 2, genres: Books, Fiction\n"
        "[/SPAN]\n"
        "\n"
        "[ITEM]\nSome Book, genres: Books, Fiction\n[/ITEM]\n\n"
        "[ITEM]\nToy Story (1995), genres: Animation, Children's, Comedy\n[/ITEM]\n\n"
    )
    seg = span_segments(history, [NOYEAR, TOY])
    assert seg.text == text
    assert [b for _, b, _ in seg.items] == [render_item(NOYEAR), render_item(TOY)]
    # the prefix does not depend on the order
    assert span_segments(history, [TOY, NOYEAR]).prefix == seg.prefix


def test_choice_message_and_versions():
    msg = choice_message((HistoryEntry(TOY, 4.0),), [TOY, NOYEAR], ["A", "B"])
    assert msg.candidates == (
        "[A] Toy Story (1995), genres: Animation, Children's, Comedy\n",
        "[B] Some Book, genres: Books, Fiction\n",
    )
    assert msg.text.endswith(
        "Candidates:\n"
        + "".join(msg.candidates)
        + "\nWhich candidate will the user prefer most? Answer with its label only."
    )
    assert SpanTemplate().to_json()["template_version"] == TEMPLATE_VERSION
    assert ChoiceTemplate().label_alphabet()[:3] == ("A", "B", "C")


def test_package_import_does_not_load_torch():
    code = (
        "import sys, invarirank.llm, invarirank.llm.factory, invarirank.llm._prompts, "
        "invarirank.llm._persistent_cache; "
        "s = invarirank.llm.make_scorer('simulated', seed=1); "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_factory_errors_without_a_model():
    with pytest.raises(InvariRankError, match="scorer kind 'nope'"):
        make_scorer("nope")
    with pytest.raises(InvariRankError, match="unknown option"):
        make_scorer("simulated", bogus=1)
    sim = make_scorer("simulated", "some-name", seed=3, bias_shape="recency")
    assert sim.identity()["bias_shape"] == "recency"


def test_benchmark_workload_mimics_the_methods_pass_patterns():
    from benchmarks.scoring import K, build_query, workload

    q = build_query()
    assert len(q.history) == 20 and len(q.candidates) == K
    assert not {it.item_id for it in q.candidates} & {h.item.item_id for h in q.history}
    passes = workload(q, 2)
    per = {}
    for method, t, idx in passes:
        per.setdefault((method, t), []).append(idx)
    for t in range(2):
        assert len(per[("zero_shot", t)]) == 1 and len(per[("bootstrapping", t)]) == 3
        assert len(per[("stella", t)]) == 10
        assert [len(x) for x in per[("sgs", t)]] == list(range(K, 0, -1))
        first = per[("zero_shot", t)][0]
        assert per[("bootstrapping", t)][0] == first == per[("sgs", t)][0] == per[("stella", t)][0]
        assert per[("bootstrapping", t)][1:] == per[("stella", t)][1:3]  # shared shuffles, as the methods share
        assert sorted(first) == list(range(K))
    assert workload(q, 2) == passes  # seeded


def test_a_history_entry_without_a_rating_omits_it_and_rated_lines_are_unchanged():
    unrated = HistoryEntry(TOY)  # implicit feedback: no rating to invent
    assert unrated.rating is None
    assert render_history_line(unrated) == "title: Toy Story (1995), genres: Animation, Children's, Comedy"
    assert render_history_line(HistoryEntry(TOY, 4.0)) == (
        "title: Toy Story (1995), rating: 4, genres: Animation, Children's, Comedy"
    )
    mixed = span_text([unrated, HistoryEntry(NOYEAR, 2.0)], [TOY])
    assert "title: Toy Story (1995), genres:" in mixed and "title: Some Book, rating: 2, genres:" in mixed
    message = choice_message([unrated], [TOY], ["A"]).text
    assert "rating" not in message
