"""Batches across queries: a worker drives a window of queries in lockstep. With the simulated scorer the run files
are byte-identical to query-by-query; with a tiny random Llama and a token budget the scores stay within 1e-4,
with fewer forward calls, one prefix forward per query and no more tokens computed."""

from __future__ import annotations

import numpy as np
import pytest

from invarirank.llm._testing import toy_query
from invarirank.methods import QueryPassCache
from invarirank.runner import RunConfig
from invarirank.runner.rerank import rerank_query, rerank_window

FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json")


@pytest.fixture(scope="module")
def tiny_llama():
    pytest.importorskip("torch")
    from invarirank.llm._testing import tiny_model, train_tokenizer

    tok = train_tokenizer("bytelevel")
    return tiny_model("llama", tok, seed=5)


@pytest.mark.slow  # the fixture trains a tokenizer and builds a model: 82 s, and the test 154 s, on 2 busy cores
def test_window_with_a_token_budget_on_a_tiny_llama(tiny_llama):
    from invarirank.llm._span import SpanScorer

    queries = [toy_query(6, history=3 + 2 * i, seed=i, query_id=f"u{i}") for i in range(3)]  # prefixes differ
    config = RunConfig.from_mapping(
        dict(scorer="span", K=6, M=2, methods=["zero_shot", "bootstrapping", "sgs"], seed=2)
    )
    alone = SpanScorer(tiny_llama, pass_cache=False, batch_size=8)
    packed = SpanScorer(tiny_llama, pass_cache=False, batch_size=8, max_batch_tokens=4096)
    settings = dict(methods=config.methods, M=config.M, seed=config.seed, model="tiny", dataset="toy")
    one_by_one = [rerank_query(QueryPassCache(alone), q, **settings) for q in queries]
    together = rerank_window(QueryPassCache(packed), queries, **settings)
    for a_rows, b_rows in zip(one_by_one, together):
        for a, b in zip(a_rows, b_rows):
            assert (a.query_id, a.method, a.permutation, a.input) == (b.query_id, b.method, b.permutation, b.input)
            assert np.allclose(a.scores, b.scores, atol=1e-4, rtol=0)
            assert a.passes == b.passes
    sa, sb = alone.stats, packed.stats
    assert sb["forward_passes"] < sa["forward_passes"]
    assert sb["prefix_passes"] == len(queries) == sa["prefix_passes"]
    assert sb["tokens_computed"] <= sa["tokens_computed"]
    # a small budget packs smaller batches, never changes the scores
    small = SpanScorer(tiny_llama, pass_cache=False, batch_size=8, max_batch_tokens=64)
    again = rerank_window(QueryPassCache(small), queries, **settings)
    assert all(
        np.allclose(a.scores, b.scores, atol=1e-4, rtol=0) for ra, rb in zip(together, again) for a, b in zip(ra, rb)
    )
    assert small.stats["forward_passes"] > sb["forward_passes"]
