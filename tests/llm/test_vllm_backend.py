"""The ``vllm`` scorer backend against the default ``hf`` one (issue 38), on vLLM's CPU build in its own venv
(``make vllm-venv``): real ML-100K prompts at K = 10 and 25, SmolLM2's float32 folder and the paper's three
tokenizers around tiny random models (the merged label scheme of Llama 3 / Qwen 2.5, Mistral's answer lead). Every score
within :data:`invarirank.llm._vllm_backend.TOLERANCE` of the ``hf`` score and every ranking identical; the backend in
the pass-cache key for ``vllm`` and absent for ``hf``.

Marked ``vllm`` (and ``slow``): without the vLLM venv they skip, saying so; under ``INVARIRANK_REQUIRE_ALL=1``
(``make test``) they fail with the reason instead. One engine per model, shared by its span and choice scorers.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from invarirank.types import rank_by_scores
from tests.support.ml100k import ml100k_queries
from tests.support.vllm import vllm_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.llm import _paper_models as paper_models  # noqa: E402
from invarirank.llm import _vllm_backend as vllm_backend  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402

MODELS = ["smollm2-135m", *paper_models.PAPER_MODELS]
KS = (10, 25)
#: presented orders per query: the given one, its reverse and a seeded shuffle (one query per K: the machine that
#: runs `make test` may be a busy 2-core one, where every pass costs seconds)
N_SHUFFLES = 1


@pytest.fixture(scope="module", autouse=True)
def _engines():
    vllm_or_skip()
    yield
    vllm_backend.close_all()


#: vLLM's CPU attention kernels take head sizes of 32 and more; the paper folders' tiny models have 8
HEAD_DIM = 32


def _folder(name: str, tmp_path_factory) -> str:
    """SmolLM2's folder as it is; a paper folder's tokenizer files around random weights of the same architecture
    with ``HEAD_DIM``-wide heads (2 layers, width 64), since vLLM's CPU build cannot run the 8-wide heads."""
    if name == "smollm2-135m":
        return name
    import transformers as tf

    src = paper_models.build(name, quiet=True)
    dst = tmp_path_factory.mktemp(name)
    for f in src.iterdir():  # the tokenizer and template files; not the weights, their config or their hashes
        if f.name not in ("model.safetensors", "config.json", "invarirank-model.json"):
            shutil.copy(f, dst / f.name)
    config = tf.AutoConfig.from_pretrained(src)
    config.hidden_size, config.intermediate_size = 2 * HEAD_DIM, 4 * HEAD_DIM
    config.num_attention_heads, config.num_key_value_heads, config.head_dim = 2, 1, HEAD_DIM
    config.initializer_range = 0.2  # spread scores: rankings are compared, near-ties would test nothing
    torch.manual_seed(0)
    tf.AutoModelForCausalLM.from_config(config).save_pretrained(dst)
    return str(dst)


def _orders(query, seed: int):
    rng = np.random.default_rng(seed)
    base = list(query.candidates)
    return [base, base[::-1]] + [[base[i] for i in rng.permutation(len(base))] for _ in range(N_SHUFFLES)]


def _compare(kind: str, model: str, folder: str) -> float:
    """max |Δ| between the backends over every pass; asserts the tolerance and identical rankings."""
    cls = SpanScorer if kind == "span" else ChoiceScorer
    hf = cls(folder, device="cpu", pass_cache=False)
    vl = cls(folder, device="cpu", pass_cache=False, backend="vllm")
    worst = 0.0
    for k in KS:
        for q in ml100k_queries(n=1, k=k, history=20, seed=k):
            orders = _orders(q, k)
            a = hf.score_batch(q, orders)
            b = vl.score_batch(q, orders)
            for order, ra, rb in zip(orders, a, b):
                assert ra.scores.shape == rb.scores.shape == (k,)
                delta = float(np.max(np.abs(ra.scores.astype(np.float64) - rb.scores.astype(np.float64))))
                worst = max(worst, delta)
                assert delta <= vllm_backend.TOLERANCE, f"{kind} {model} K={k} query {q.query_id}: |Δ| = {delta:.2e}"
                ids = [it.item_id for it in order]
                assert [ids[i] for i in rank_by_scores(ra.scores)] == [ids[i] for i in rank_by_scores(rb.scores)], (
                    f"{kind} {model} K={k} query {q.query_id}: rankings differ (max |Δ| {delta:.2e})"
                )
    print(f"\nvllm-vs-hf {kind} {model}: max |Δ| = {worst:.3e} over K = {KS}", flush=True)
    return worst


@pytest.mark.parametrize("model", MODELS)
def test_both_scorers_match_hf(model, tmp_path_factory):
    folder = _folder(model, tmp_path_factory)
    for kind in ("choice", "span"):
        _compare(kind, model, folder)


def test_backend_enters_the_key_only_for_vllm():
    hf = ChoiceScorer("smollm2-135m", device="cpu", pass_cache=False)
    vl = ChoiceScorer("smollm2-135m", device="cpu", pass_cache=False, backend="vllm")
    assert "backend" not in hf.key_identity() and "backend" not in hf.identity()
    got = vl.key_identity()["backend"]
    assert got["name"] == "vllm" and got["version"] and got["device_type"] == "cpu"
    rest = {k: v for k, v in vl.key_identity().items() if k != "backend"}
    assert rest == hf.key_identity()
