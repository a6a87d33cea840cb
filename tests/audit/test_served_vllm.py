"""The served reranker against a real OpenAI-compatible server: vLLM's CPU build serving SmolLM2-135M (float32) on
127.0.0.1. ``invarirank audit --server`` end to end in both modes; the log-prob mode's label scores equal the
project's choice scorer on the same prompt; a server stopped mid-audit and restarted completes with the rows of an
uninterrupted audit (label log-probs: a request is one prompt pass, so the restart costs the engine start, not
minutes of decoding on a 2-core machine) and generates the same answers to two requests as before it. One engine
start for the module, one more for the restart (each ~20-50 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import invarirank as ir
from invarirank import cli
from invarirank.candidates import write_candidates
from invarirank.llm._testing import toy_query
from tests.conftest import REQUIRE_ALL
from tests.support import ROOT
from tests.support.vllm_server import SERVED_NAME, VLLMServer, vllm_python

pytestmark = [pytest.mark.slow, pytest.mark.server]

QUERIES = [toy_query(k=5, history=3, seed=s, query_id=f"q{s}") for s in range(3)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    python, why = vllm_python()
    if python is None:
        if REQUIRE_ALL:
            pytest.fail(f"make test (INVARIRANK_REQUIRE_ALL=1): {why}; run `make setup` or set INVARIRANK_VLLM_PYTHON")
        pytest.skip(why)
    from invarirank.llm._gguf import prepare

    folder = prepare("smollm2-135m", quiet=True)
    srv = VLLMServer(python, folder, tmp_path_factory.mktemp("vllm") / "server.log")
    srv.start()
    yield srv
    srv.stop()
    print(f"\nvLLM server starts (s): {[round(s, 1) for s in srv.started_seconds]}")


@pytest.fixture(scope="module")
def candidates(tmp_path_factory):
    path = tmp_path_factory.mktemp("cands") / "candidates.jsonl"
    write_candidates(path, QUERIES)
    return path


def _audit(server, candidates, out, mode, m, *extra):
    args = ["audit", "--server", server.url, "--model", SERVED_NAME, "--mode", mode, "--candidates", str(candidates),
            "--m", str(m), "--seed", "7", "--concurrency", "2", "--timeout", "120", "--out", str(out)]  # fmt: skip
    return cli.main([*args, *extra])


def test_audit_by_label_logprobs_end_to_end(server, candidates, tmp_path, capsys):
    assert _audit(server, candidates, tmp_path / "run", "logprobs", 4) == 0, capsys.readouterr().err
    rows = ir.read_observations(tmp_path / "run" / "observations.jsonl")
    assert len(rows) == 3 * 4 and all(sorted(r["output"]) == sorted(r["input"]) for r in rows)
    assert all(len(r["scores"]) == 5 and max(r["scores"]) < 0 for r in rows)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    ident = manifest["rerankers"][0]
    assert ident["logprob_source"] == "fixed" and set(ident["label_token_ids"]) == set("ABCDE")
    assert len((tmp_path / "run" / "journal.jsonl").read_text().splitlines()) == 12


def test_label_logprobs_equal_the_choice_scorer_on_the_same_prompt(server):
    from invarirank.llm._choice import ChoiceScorer
    from invarirank.llm._frames import served_frame

    folder = server.folder
    for chat in (False, True):
        scorer = ChoiceScorer(str(folder), use_chat_template=chat)
        frame = dict(zip(("frame", "frame_name"), served_frame(str(folder)))) if chat else {}
        r = ir.audit.served(server.url, SERVED_NAME, "logprobs", **frame)
        for q in QUERIES[:2]:
            ranking = ir.rerank(r, q)
            p = ir.audit.Presentation(list(q.candidates), labels="ABCDE")
            assert scorer.explain(q, list(q.candidates))["text"] == r.prompt(q, p)  # the same prompt
            want = np.asarray(scorer.score(q, list(q.candidates)).scores, dtype=np.float64)
            np.testing.assert_allclose(ranking.scores, want, atol=1e-4, rtol=0)


def test_audit_by_generated_ranking_end_to_end(server, candidates, tmp_path, capsys):
    code = _audit(server, candidates, tmp_path / "run", "generate", 2, "--max-tokens", "24")
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr()
    rows = ir.read_observations(tmp_path / "run" / "observations.jsonl")
    assert len(rows) == 6 and all(sorted(r["output"]) == sorted(r["input"]) for r in rows)
    assert all(set(r["parse"]) == {"unparsable", "reasoning", "truncated"} for r in rows)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    totals = manifest["repairs"][f"{SERVED_NAME}-generate"]
    assert totals["rows"] == 6 and totals["unparsable"] == sum(r["parse"]["unparsable"] for r in rows)
    assert f"parse: {totals['unparsable']} of 6 answers unparsable" in printed.out
    journal = [json.loads(line) for line in (tmp_path / "run" / "journal.jsonl").read_text().splitlines()]
    assert len(journal) == 6 and all(
        e["request"]["temperature"] == 0.0 and e["request"]["seed"] == 7 and e["request"]["max_tokens"] == 24
        for e in journal
    )


def test_a_server_stopped_mid_audit_and_restarted_completes_with_identical_rows(server, candidates, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "invarirank", "audit", "--server", server.url, "--model", SERVED_NAME, "--mode",
           "logprobs", "--candidates", str(candidates), "--m", "3", "--seed", "11", "--concurrency", "1",
           "--retries", "1", "--out", str(out)]  # fmt: skip
    generated = ir.audit.served(server.url, SERVED_NAME, "generate", concurrency=1, seed=11, max_tokens=24)
    before = ir.audit(generated, QUERIES[:1], M=2, seed=11)  # generation before the restart, compared below
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "journal.jsonl"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:
        if journal.is_file() and len(journal.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    server.stop()  # mid-audit: SIGTERM to the engine
    _, err = proc.communicate(timeout=300)
    kept = len(journal.read_text().splitlines())
    assert proc.returncode == 2 and "no answer after 2 tries" in err, err
    assert 2 <= kept < 9 and not (out / "manifest.json").exists()
    server.start()
    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{9 - kept} requests sent, {kept} answered from the journal" in resumed.stderr
    rows = ir.read_observations(out / "observations.jsonl")
    again = ir.audit.served(server.url, SERVED_NAME, "logprobs", concurrency=1, seed=11)
    fresh = ir.audit(again, QUERIES, M=3, seed=11)  # an uninterrupted audit, no journal
    assert len(rows) == 9
    assert [(r["query_id"], r["permutation"], r["input"], r["output"]) for r in rows] == [
        (r["query_id"], r["permutation"], r["input"], r["output"]) for r in fresh
    ]
    # the label log-probs of a restarted engine: equal up to float32 rounding across the two engine lives
    np.testing.assert_allclose([r["scores"] for r in rows], [r["scores"] for r in fresh], atol=1e-4, rtol=0)
    after = ir.audit(generated, QUERIES[:1], M=2, seed=11)  # and the same generated answers (seed 11, temperature 0)
    assert [(r["output"], r["parse"], r["repairs"]) for r in after] == [
        (r["output"], r["parse"], r["repairs"]) for r in before
    ]
