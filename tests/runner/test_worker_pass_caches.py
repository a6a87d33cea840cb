"""A shard resumed after a stop finds the passes computed for it before, whichever worker slot takes it: each
worker writes its own pass cache and reads its siblings' on the same machine (real SmolLM2-135M, a K = 5 query)."""

from __future__ import annotations

import pytest

from invarirank.llm._toy_queries import toy_query
from invarirank.runner._config import RunConfig
from invarirank.runner._worker import ShardWorker, scorer_settings


@pytest.mark.slow
def test_a_pass_computed_by_one_slot_is_read_by_another(tmp_path):
    pytest.importorskip("torch")
    config = RunConfig.from_mapping(
        dict(dataset="ml-100k", scorer="span", model="smollm2-135m", K=5, cache_dir=str(tmp_path / "cache"))
    )
    query = toy_query(5, seed=3)
    first = ShardWorker(scorer_settings(config), threads=1, slot=0, own_pass_cache=True)
    computed = first.scorer.score(query, query.candidates)
    assert first.scorer.stats["forward_passes"] == 1

    later = ShardWorker(scorer_settings(config), threads=1, slot=1, own_pass_cache=True)  # the run resumed
    again = later.scorer.score(query, query.candidates)
    assert later.scorer.stats["disk_hits"] == 1 and later.scorer.stats["forward_passes"] == 0
    assert again.scores.tobytes() == computed.scores.tobytes()
    assert later.scorer.pass_cache.read_paths == [tmp_path / "cache" / "passes" / "worker-0" / "passes.sqlite3"]
    assert len(later.scorer.pass_cache) == 0  # it wrote nothing: the pass is worker 0's
