"""The cost line before a long run (issue 14, family 10): one line on stderr with the estimate, what dominates it
and the flags that shrink it — for a run estimated above a few minutes, never for a small one. Priced honestly for
the scorer in use: the simulated scorer at its own near-zero cost, a real model at the stated CPU assumption; no
model is loaded for it. Expected pass counts are derived by hand in the comments."""

from __future__ import annotations

import json

import pytest

from invarirank.candidates import query_to_json
from invarirank.cli import main
from invarirank.data._synthetic import synthetic_queries
from invarirank.llm._testing import toy_split_queries
from invarirank.runner import RunConfig
from invarirank.runner import _cost_line as cost_line
from invarirank.runner._cost_line import cost_notice

pytestmark = pytest.mark.usefixtures("private_cache")

ALL = ["zero_shot", "bootstrapping", "stella", "sgs"]


def _split(n_test: int, n_validation: int, k: int):
    qs = toy_split_queries(n_test=n_test, n_validation=n_validation, k=k)
    return [q for q in qs if q.split == "test"], [q for q in qs if q.split == "validation"]


def test_calibration_dominated_real_model_gets_the_line():
    # the issue's `--queries 2 --m 4` on the span scorer, CPU: per order at K = 10 with STELLA_LW's 10 updates the
    # distinct passes are 1 (the presented order) + 0 (zero-shot) + 2 (bootstrapping) + 9 (STELLA_LW) + 9 (SGS)
    # - 2 (bootstrapping's shuffles are STELLA_LW's updates 1-2) = 19 -> 2 x 4 x 19 = 152 reranking passes;
    # calibration: 150 validation queries with one relevant candidate each x K=10 x 5 repeats = 7,500 passes.
    test, validation = _split(2, 200, 10)
    config = RunConfig(scorer="span", K=10, M=4, n_queries=2, methods=ALL)
    line = cost_notice(config, test, validation, {}, on_gpu=False)
    assert line is not None
    assert "7,652 passes at 1 s per pass, assumed for a small model on 2 CPU cores" in line
    assert "~2.1 h" in line  # 7,652 x 1 s = 7,652 s
    assert "98% is STELLA_LW calibration: 150 validation queries x 5 repeats = ~7,500 passes at K=10" in line
    assert "--calibration-queries" in line and "--calibration-repeats" in line and "--dry-run" in line
    assert "\n" not in line


def test_cached_calibration_is_not_counted(private_cache):
    from invarirank.methods._stella_calibration import calibration_key, select_calibration_queries

    test, validation = _split(2, 200, 10)
    config = RunConfig(scorer="span", K=10, M=4, n_queries=2, methods=ALL)
    probe = select_calibration_queries(validation, 10, 150, config.seed)
    key = calibration_key({}, 10, probe, 150, 5, config.seed)
    (private_cache / "stella").mkdir(parents=True)
    (private_cache / "stella" / f"{key}.json").write_text("{}")
    assert cost_notice(config, test, validation, {}, on_gpu=False) is None  # 152 x 1 s = 152 s


def test_a_calibration_recorded_with_the_shards_is_not_counted(private_cache):
    """A calibration committed with the run's shards that this machine takes (same probing queries, first-stage
    scores aside) is not priced; one of other probing queries is."""
    from dataclasses import replace

    import numpy as np

    from invarirank.methods._stella_calibration import CALIBRATION_VERSION, probes_sha256, select_calibration_queries

    test, validation = _split(2, 200, 10)
    config = RunConfig(scorer="span", K=10, M=4, n_queries=2, methods=ALL)
    probe = select_calibration_queries(validation, 10, 150, config.seed)
    record = {
        "k": 10,
        "counts": np.ones((10, 10), dtype=int).tolist(),
        "query_ids": [q.query_id for q in probe],
        "n_queries": 150,
        "repeats": 5,
        "seed": config.seed,
        "version": CALIBRATION_VERSION,
        "identity": {},
        "probes_sha256": probes_sha256(probe),
    }
    rescored = [replace(q, candidate_scores=tuple(0.5 - i / 100 for i in range(len(q.candidates)))) for q in validation]
    assert cost_notice(config, test, rescored, {}, on_gpu=False, recorded={10: record}) is None
    other = {**record, "probes_sha256": "0" * 64}
    assert "7,652 passes" in cost_notice(config, test, rescored, {}, on_gpu=False, recorded={10: other})


def test_rerank_dominated_large_simulated_config_gets_the_line():
    # the simulated scorer at its own cost (3e-4 s per pass): 3,000 queries x M=50 at K=20 without STELLA_LW:
    # per order 1 + 0 (zero-shot) + 2 (bootstrapping) + 19 (SGS) = 22 -> 3,000 x 50 x 22 = 3,300,000 passes = 990 s
    test, validation = _split(3000, 0, 20)
    config = RunConfig(scorer="simulated", K=20, M=50, methods=["zero_shot", "bootstrapping", "sgs"])
    line = cost_notice(config, test, validation, {})
    assert line is not None
    assert "3,300,000 passes at 0.0003 s per pass, the simulated scorer" in line
    assert "~16.5 min" in line
    assert "100% is reranking: 3000 queries x M=50 orders = ~3,300,000 passes" in line
    assert "--queries N, --m M" in line


def test_small_configs_get_no_line():
    test, validation = _split(5, 3, 6)
    assert cost_notice(RunConfig(scorer="simulated", K=6, M=4, methods=ALL), test, validation, {}) is None
    # a real model, small: 5 x 4 x (1 + 0 + 2 + 9 + 5 - 2 = 15 at K = 6) = 300 passes plus 3 probes x K=6 x 1
    # repeat = 18 calibration passes: 318 x 0.6 s (1 s scaled by K/10) = 191 s
    config = RunConfig(scorer="span", K=6, M=4, methods=ALL, calibration_queries=3, calibration_repeats=1)
    assert cost_notice(config, test, validation, {}, on_gpu=False) is None


def test_gpu_and_given_rates():
    test, validation = _split(2, 200, 10)
    config = RunConfig(scorer="span", K=10, M=4, n_queries=2, methods=ALL)
    assert cost_notice(config, test, validation, {}, on_gpu=True) is None  # 7,652 x 0.02 s = 153 s
    line = cost_notice(config, test, validation, {}, seconds_per_pass=0.1)
    assert line is not None and "7,652 passes at 0.1 s per pass, given" in line and "~12.8 min" in line


def _candidates(tmp_path):
    path = tmp_path / "cands.jsonl"
    path.write_text(
        "".join(json.dumps(query_to_json(q)) + "\n" for q in synthetic_queries(n_test=3, n_validation=3, k=6, seed=1))
    )
    return path


def _rerank(tmp_path, capsys, name):
    capsys.readouterr()
    code = main(
        [
            "rerank",
            "--candidates",
            str(_candidates(tmp_path)),
            "--scorer",
            "simulated",
            "--m",
            "2",
            "--methods",
            "zero_shot,bootstrapping",
            "--n-bootstrap",
            "0",
            "--out",
            str(tmp_path / name),
            "--no-progress",
        ]
    )
    assert code == 0
    return [line for line in capsys.readouterr().err.splitlines() if "cost:" in line]


def test_rerank_prints_the_line_only_when_the_estimate_is_long(tmp_path, capsys, monkeypatch):
    assert _rerank(tmp_path, capsys, "small") == []  # 3 x 2 x 3 passes at 3e-4 s
    # the same run priced at 10 s per simulated pass: 3 queries x M=2 x (1 + 0 + 2) = 18 passes = 180 s, below
    # the threshold; at 20 s = 360 s above it
    monkeypatch.setattr(cost_line, "SIMULATED_SECONDS_PER_PASS", 10.0)
    assert _rerank(tmp_path, capsys, "ten") == []
    monkeypatch.setattr(cost_line, "SIMULATED_SECONDS_PER_PASS", 20.0)
    lines = _rerank(tmp_path, capsys, "twenty")
    assert len(lines) == 1 and "18 passes at 20 s per pass" in lines[0] and "~6.0 min" in lines[0]
    assert "reranking: 3 queries x M=2 orders" in lines[0]


def test_queries_in_finished_shards_are_not_priced(tmp_path, capsys):
    """A resumed run is priced for the queries it still has to compute: with 3 of 8 queries in finished shards of
    its folder, the line counts five queries' passes (K = 10, M = 20, zero-shot + SGS: 1 + 9 = 10 distinct passes
    per order, 200 per query: 1,000 passes at the assumed 1 s each) and says how many it left out."""
    from invarirank._io import atomic_write_json
    from invarirank.runner._phases import print_cost_notice
    from invarirank.runner._queries import QuerySet
    from invarirank.store import RunFolder, shard_query_ids

    test, validation = _split(8, 0, 10)
    config = RunConfig(scorer="span", K=10, M=20, methods=["zero_shot", "sgs"])
    folder = tmp_path / "run"
    for n, ids in enumerate(([test[0].query_id, test[1].query_id], [test[2].query_id])):
        shard = RunFolder(folder).shards / f"0000{n}-abc"
        shard.mkdir(parents=True)
        atomic_write_json(shard / "shard.json", {"query_ids": ids})
        (shard / "records.jsonl").write_text("")
        atomic_write_json(shard / "volatile.json", {})
    (RunFolder(folder).shards / ".00002-tmp").mkdir()  # a temporary folder: not finished
    assert shard_query_ids(folder) == {q.query_id for q in test[:3]}
    facts = {"key_identity": {"device_type": "cpu"}, "worker": {}}
    capsys.readouterr()
    print_cost_notice(config, QuerySet(test, validation, {}), facts, folder)
    err = capsys.readouterr().err
    assert "(3 queries already in finished shards not counted) (1,000 passes at 1 s per pass" in err
    assert "reranking: 5 queries x M=20 orders" in err
