"""The ``backend`` scorer option without vLLM (issue 38): its checks, and the ``vllm`` backend's bookkeeping —
which prompt each request sends and which log-probs make each score — driven by a stand-in worker that answers
from a full transformers forward. The span and choice scores through that bookkeeping must equal the ``hf``
backend's on the paper's three tokenizers (the merged label scheme of Llama 3 / Qwen 2.5 takes two requests per
pass), so the real vLLM tests (tests/llm/test_vllm_backend.py) measure vLLM's numerics, not our indexing."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.errors import InvariRankError
from invarirank.llm.factory import check_scorer_options

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.llm import _paper_models as paper_models  # noqa: E402
from invarirank.llm import _vllm_backend as vllm_backend  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm.models import load_model  # noqa: E402
from tests.support.ml100k import ml100k_queries  # noqa: E402


class ForwardWorker:
    """Answers the worker protocol's requests from one full forward per prompt (float32, no cache)."""

    def __init__(self, lm):
        self.lm = lm
        self.requests: list[tuple[str, int]] = []

    def _logp(self, ids):
        with torch.no_grad():
            logits = self.lm.model(torch.tensor([ids], device=self.lm.device)).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    def request(self, op, prompts, token_ids=None):
        self.requests.append((op, len(prompts)))
        out = []
        for n, ids in enumerate(prompts):
            logp = self._logp(ids)
            if op == "next":
                out.append([float(logp[-1, t]) for t in token_ids[n]])
            else:
                out.append([float(logp[t - 1, ids[t]]) for t in range(1, len(ids))])
        return {"logprobs": out, "cached": [0] * len(prompts)}


def test_backend_values_are_checked():
    check_scorer_options("span", {"backend": "vllm"})
    with pytest.raises(InvariRankError, match="'hf' or 'vllm'"):
        check_scorer_options("choice", {"backend": "gpu"})


def test_the_cpu_engine_runs_in_one_process_with_the_bound_cores_as_threads(monkeypatch):
    assert [vllm_backend.bound_cores(x) for x in ("0-3", "0,2,5", "0-1|2-3", "3")] == [4, 3, 2, 1]
    monkeypatch.setattr(vllm_backend.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert vllm_backend.bound_cores("auto") == vllm_backend.bound_cores("nobind") == 3
    env, config = vllm_backend._one_process({"VLLM_CPU_OMP_THREADS_BIND": "4-5"}, {"tensor_parallel_size": 1})
    assert (env["OMP_NUM_THREADS"], env["VLLM_ENABLE_V1_MULTIPROCESSING"]) == ("2", "0")
    assert config["distributed_executor_backend"] == "uni"
    given = {"VLLM_CPU_OMP_THREADS_BIND": "0", "VLLM_ENABLE_V1_MULTIPROCESSING": "1", "OMP_NUM_THREADS": "7"}
    env, config = vllm_backend._one_process(given, {"tensor_parallel_size": 1})
    assert env == given and "distributed_executor_backend" not in config  # the user's settings win


def test_missing_vllm_python_is_one_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("INVARIRANK_VLLM_PYTHON", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(InvariRankError, match="INVARIRANK_VLLM_PYTHON=.*expected an executable Python"):
        vllm_backend.vllm_python()


@pytest.mark.parametrize("name", list(paper_models.PAPER_MODELS))
def test_request_bookkeeping_matches_hf(name):
    lm = load_model(str(paper_models.build(name, quiet=True)), device="cpu")
    q = ml100k_queries(n=1, k=12, history=10, seed=1)[0]
    orders = [list(q.candidates), list(q.candidates)[::-1]]
    for cls in (SpanScorer, ChoiceScorer):
        hf = cls(lm, pass_cache=False)
        stand_in = cls(lm, pass_cache=False)
        stand_in.vllm = ForwardWorker(lm)  # the vllm code path, without vLLM
        want = hf.score_batch(q, orders)
        got = stand_in.score_batch(q, orders)
        for a, b in zip(want, got):
            assert np.max(np.abs(a.scores - b.scores)) < 1e-5, (name, cls.kind)
            assert b.tokens > 0
        op = "prompt" if cls is SpanScorer else "next"
        two_reads = cls is ChoiceScorer and len(stand_in.plan(q, orders[0]).needed) == 2
        assert stand_in.vllm.requests == [(op, len(orders) * (2 if two_reads else 1))]
    assert "backend" not in hf.key_identity()
