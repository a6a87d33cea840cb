"""The scorers on the real embedded models: SmolLM2-135M (Llama architecture, ChatML template) and Gemma 3 270M
(base model, no chat template, sliding-window layers with a 512-position window).

Kept minimal (a handful of passes per model); the fp32 folders are converted once and cached
(``python -m invarirank.llm.models prepare``), so a warm run loads each model in seconds.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._prompts import render_item  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import reference_logits, toy_query  # noqa: E402
from invarirank.llm.models import load_model  # noqa: E402
from invarirank.types import rank_by_scores  # noqa: E402

pytestmark = pytest.mark.slow
TOL = 1e-4


@pytest.fixture(scope="module")
def smollm2():
    return load_model("smollm2-135m", device="cpu")


@pytest.fixture(scope="module")
def gemma3():
    return load_model("gemma3-270m", device="cpu")


def _check_span(lm, query, orders):
    # reference: a full forward per order without prefix reuse (the all-logits naive path is checked on the tiny
    # models; on Gemma's 262k vocabulary it would cost more than the rest of this file)
    fast = SpanScorer(lm, pass_cache="memory")
    naive = SpanScorer(lm, prefix_reuse=False, pass_cache=False)
    assert fast.scored_texts(query, query.candidates) == [render_item(it) for it in query.candidates]
    for order in orders:
        a, b = fast.score(query, order), naive.score(query, order)
        assert np.abs(a.scores - b.scores).max() <= TOL, (a.scores, b.scores)
        assert rank_by_scores(a.scores) == rank_by_scores(b.scores), (a.scores, b.scores)  # the same ranking
    assert fast.stats["prefix_passes"] == 1 and fast.stats["tokens_computed"] < naive.stats["tokens_computed"]
    return fast


def _check_choice(lm, query, order):
    sc = ChoiceScorer(lm, pass_cache=False)
    assert sc.max_k >= 26
    res = sc.score(query, order)
    ref = torch.log_softmax(reference_logits(sc, sc.prompt_ids(query, order), last_only=True)[-1], dim=-1)
    assert np.abs(res.scores - ref[sc.label_ids[: len(order)]].numpy()).max() <= TOL
    return sc


def test_smollm2_span_and_choice(smollm2):
    q = toy_query(k=5, history=10, seed=11)
    c = list(q.candidates)
    _check_span(smollm2, q, [c, c[::-1]])
    sc = _check_choice(smollm2, q, c)
    assert sc.use_chat_template and "<|im_start|>assistant\n[" in sc.explain(q, c)["text"]


def test_gemma3_sliding_window_span_and_choice(gemma3):
    window = gemma3.model.config.sliding_window
    q = toy_query(k=5, history=25, seed=12)
    c = list(q.candidates)
    fast = _check_span(gemma3, q, [c, c[::-1]])
    prefix = len(fast.plan(q, c).prefix)
    assert prefix > window, (prefix, window)  # the reused prefix extends past the sliding window
    sc = _check_choice(gemma3, q, c[::-1])
    assert not sc.use_chat_template
    assert sc.explain(q, c)["text"].startswith("User: ") and sc.explain(q, c)["text"].endswith("Assistant: [")
    assert sc.prompt_ids(q, c)[0] == gemma3.tokenizer.bos_token_id
