"""The choice scorer writes the labels it is given (a :class:`~invarirank.types.LabelledOrder`: the audit's
``label-swap`` design) on tiny randomly initialised models: the default path is the same computation bit for bit,
a given label is written before its candidate and its own log-probability is read (checked against a plain forward),
the pass caches key on the labels, and labels the scheme cannot read are one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.errors import InvariRankError  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._testing import reference_logits, tiny_model, toy_query, train_tokenizer  # noqa: E402
from invarirank.methods import QueryPassCache  # noqa: E402
from invarirank.types import LabelledOrder  # noqa: E402

TOL = 1e-4


@pytest.fixture(scope="module")
def lm():
    return tiny_model("qwen2", train_tokenizer("bytelevel"), seed=7)


@pytest.fixture(scope="module")
def query():
    return toy_query(k=6, history=8, seed=5)


def test_own_labels_given_are_the_default_computation_bit_for_bit(lm, query):
    sc = ChoiceScorer(lm, pass_cache=False)
    c = list(query.candidates)
    plain, given = sc.plan(query, c), sc.plan(query, LabelledOrder(c, "ABCDEF"))
    assert plain.text == given.text and plain.full_ids == given.full_ids
    assert plain.extra["reads"] == given.extra["reads"] and plain.extra["label_ids"] == sc.label_ids[:6]
    assert np.array_equal(sc.score(query, c).scores, sc.score(query, LabelledOrder(c, "ABCDEF")).scores)


def test_the_given_labels_are_written_and_read(lm, query):
    sc = ChoiceScorer(lm, pass_cache=False)
    c = list(query.candidates)
    labels = "DAFBEC"
    order = LabelledOrder(c, labels)
    ex = sc.explain(query, order)
    assert ex["labels"] == list(labels)
    starts = [ex["text"].index(f"[{lab}]") for lab in labels]
    assert starts == sorted(starts)  # label i is written before presented candidate i, in presented order
    alphabet = sc.template.label_alphabet()
    wanted = [sc.label_ids[alphabet.index(lab)] for lab in labels]
    assert ex["label_ids"] == wanted
    res = sc.score(query, order)
    ref = torch.log_softmax(reference_logits(sc, sc.prompt_ids(query, order))[-1], dim=-1)[wanted]
    assert np.abs(res.scores - ref.numpy()).max() <= TOL
    # the scores follow the labels: the same prompt read with the default labels' ids gives other numbers
    default_read = torch.log_softmax(reference_logits(sc, sc.prompt_ids(query, order))[-1], dim=-1)[sc.label_ids[:6]]
    assert not np.allclose(res.scores, default_read.numpy())


def test_pass_caches_key_on_the_labels(lm, query):
    sc = ChoiceScorer(lm, pass_cache="memory")
    c = list(query.candidates)
    first = sc.score(query, c)
    swapped = sc.score(query, LabelledOrder(c, "BADCFE"))
    assert not swapped.cached and not np.array_equal(first.scores, swapped.scores)
    assert sc.score(query, LabelledOrder(c, "BADCFE")).cached
    cache = QueryPassCache(sc)
    a, b = cache.score_requests([(query, c), (query, LabelledOrder(c, "BADCFE"))])
    assert np.array_equal(a.scores, first.scores) and np.array_equal(b.scores, swapped.scores)


@pytest.mark.parametrize(
    ("labels", "message"), [("ABCDE", "distinct"), ("ABCDEA", "distinct"), ("ABCDE1", "label '1' is not one of")]
)
def test_labels_the_scheme_cannot_read_are_errors(lm, query, labels, message):
    sc = ChoiceScorer(lm, pass_cache=False)
    c = list(query.candidates)
    with pytest.raises(InvariRankError, match=f"query u1: the choice scorer got labels .*{message}"):
        sc.score(query, LabelledOrder(c, labels))
