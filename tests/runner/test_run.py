"""The runner (invarirank.runner) with the simulated scorer: run folder, determinism, kill-and-resume, pass counts,
the noise floor, query sampling over a K sweep, the dry run, the CLI and the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from invarirank._io import read_json
from invarirank.candidates import write_candidates
from invarirank.cli import main as cli_main
from invarirank.errors import InvariRankError
from invarirank.evaluation import read_observations
from invarirank.llm._testing import toy_split_queries
from invarirank.runner import RunConfig, format_plan, load_queries, plan_run, run_experiment
from tests.support.runner import Killed, kill_after, toy_candidates
from tests.support.runner import simulated_config as config

K = 6
FINAL = ("observations.jsonl", "metrics.json", "calibration.json", "first_stage.jsonl.gz")
VOLATILE = ("run.json",)


@pytest.fixture()
def cands(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    return toy_candidates(tmp_path)


def comparable_manifest(run_dir: Path) -> bytes:
    """The run's ``manifest.json`` as written: it holds nothing volatile, so equal runs have equal bytes."""
    return (run_dir / "manifest.json").read_bytes()


def test_run_folder_rows_and_pass_counts(cands, tmp_path):
    res = run_experiment(config(cands, tmp_path / "run"), progress=False)
    run = tmp_path / "run"
    assert sorted(p.name for p in run.iterdir()) == sorted(FINAL + VOLATILE + ("manifest.json", ".lock"))  # .work gone
    rows = read_observations(run / "observations.jsonl")
    qids = {r["query_id"] for r in rows}
    assert len(rows) == len(qids) * 4 * 4
    by_key = {}
    for r in rows:
        assert r["k"] == K and r["model"] == "simulated" and r["dataset"] == "cands.jsonl"
        assert {"scores", "passes", "relevant"} <= set(r) and "seconds" not in r
        lo, hi = {"zero_shot": (1, 1), "bootstrapping": (3, 3), "sgs": (K, K), "stella": (4, 10)}[r["method"]]
        assert lo <= r["passes"] <= hi
        assert r["input"] != sorted(r["input"], key=int)  # never the retrieval order (ids ascend with rank)
        by_key.setdefault((r["query_id"], r["permutation"]), {})[r["method"]] = r
    for methods in by_key.values():  # one input per order; first pass = zero-shot pass
        assert len({tuple(m["input"]) for m in methods.values()}) == 1
        zs = methods["zero_shot"]["scores"]
        assert all(m["scores"] == zs for m in methods.values())
    man = res.manifest
    p = man["passes"]
    assert p["requested"] == sum(r["passes"] for r in rows)
    assert p["per_method"]["sgs"]["passes"] == K * len(by_key)
    assert p["shared_cache_hits"] == p["requested"] - p["scorer_calls"]
    assert p["shared_cache_hits"] >= 5 * len(by_key)  # 3 shared first passes + 2 shared shuffles per order
    assert p["calibration"][str(K)]["passes"] > 0
    assert man["model"]["scorer"] == "simulated" and man["config"]["M"] == 4
    assert man["packages"]["numpy"] and "run" not in man and "git" not in man
    vol = read_json(run / "run.json")
    assert "timings" in vol and vol["execution"]["executor"] == "local" and vol == res.volatile
    assert set(res.metrics["methods"]) == {"zero_shot", "bootstrapping", "sgs", "stella"}
    cal = read_json(run / "calibration.json")["calibrations"][str(K)]
    assert len(cal["matrix"]) == K and min(min(r) for r in cal["counts"]) >= 1
    # the reference rows: the candidates file's own order (ids ascend with rank) and the random order
    from invarirank.evaluation._references import read_first_stage

    first = read_first_stage(run / "first_stage.jsonl.gz")
    assert set(first) == qids and all(r == sorted(r, key=int) for r in first.values())
    refs = res.metrics["references"]
    assert set(refs) == {"first_stage", "random"}
    assert refs["first_stage"]["overall"]["loc"] == 1.0 and refs["first_stage"]["overall"]["ppi"] == 0.0
    assert set(refs["random"]["comparisons"]["ppi"]) == {"zero_shot", "bootstrapping", "sgs", "stella"}


def test_identical_configs_give_identical_files(cands, tmp_path):
    run_experiment(config(cands, tmp_path / "a"), progress=False)
    run_experiment(config(cands, tmp_path / "b"), progress=False)
    for name in FINAL:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert comparable_manifest(tmp_path / "a") == comparable_manifest(tmp_path / "b")
    # a different seed changes the orders
    run_experiment(config(cands, tmp_path / "c", seed=8), progress=False)
    assert (tmp_path / "a" / "observations.jsonl").read_bytes() != (tmp_path / "c" / "observations.jsonl").read_bytes()
    # rerunning a finished run rewrites the same bytes; another config never overwrites it
    before = (tmp_path / "a" / "metrics.json").read_bytes()
    run_experiment(config(cands, tmp_path / "a"), progress=False)
    assert (tmp_path / "a" / "metrics.json").read_bytes() == before
    with pytest.raises(InvariRankError, match="finished run with a different configuration"):
        run_experiment(config(cands, tmp_path / "a", seed=8), progress=False)


def test_killed_and_resumed_run_equals_uninterrupted(cands, tmp_path, capsys):
    """A one-process run writes one shard folder per query (the one resume record): killed after two, it resumes
    with the other four and gives the uninterrupted run's bytes."""
    run_experiment(config(cands, tmp_path / "full"), progress=False)

    part = tmp_path / "part"
    with pytest.raises(Killed):
        run_experiment(config(cands, part), progress=False, on_shard_done=kill_after(2))
    assert not any((part / name).exists() for name in FINAL + ("manifest.json",))  # nothing half-final
    shards = part / ".work" / "shards"
    assert [len(read_json(d / "shard.json")["query_ids"]) for d in sorted(shards.iterdir())] == [1, 1]
    torn = shards / ".00002-0123456789ab.tmp-1"  # a kill in the middle of a shard's write
    torn.mkdir()
    (torn / "records.jsonl").write_text('{"query_id": "u2", "rows": [{"schema_ver')
    # a changed configuration may not reuse the unfinished work
    with pytest.raises(InvariRankError, match="shard of another configuration"):
        run_experiment(config(cands, part, M=5), progress=False)
    calls = []
    res = run_experiment(config(cands, part), progress=False, on_shard_done=calls.append)
    assert calls == [1, 2, 3, 4]  # only the 4 missing queries (of 6) were reranked
    assert res.volatile["queries_resumed_from_checkpoint"] == 2
    assert res.volatile["execution"]["shard_queries"] == 1 and len(res.volatile["shards"]) == 6
    assert {"model_name", "bf16_flags", "bf16_supported"} <= set(res.volatile["workers"][0]["cpu"])  # which CPU
    for name in FINAL:
        assert (part / name).read_bytes() == (tmp_path / "full" / name).read_bytes(), name
    assert comparable_manifest(part) == comparable_manifest(tmp_path / "full")
    assert not (part / ".work").exists()


def test_noise_floor_gives_loc_one_and_gpi_zero(cands, tmp_path):
    res = run_experiment(config(cands, tmp_path / "nf", noise_floor=True), progress=False)
    rows = read_observations(tmp_path / "nf" / "observations.jsonl")
    for q in {r["query_id"] for r in rows}:
        assert len({tuple(r["input"]) for r in rows if r["query_id"] == q}) == 1  # M copies of one order
    for method, block in res.metrics["methods"].items():
        ov = block["overall"]
        assert ov["loc"] == pytest.approx(1.0), method
        assert ov["gpi"] == pytest.approx(0.0), method
        assert ov["ppi"] is None  # every pair sits in one position cell


def test_bias_knob_moves_exposure_in_the_run(cands, tmp_path):
    def zero_shot_exposure(shape):
        res = run_experiment(
            config(
                cands,
                tmp_path / shape,
                methods="zero_shot",
                M=12,
                exposure_k=2,
                scorer_options={"bias_shape": shape, "bias_strength": 3.0},
            ),
            progress=False,
        )
        return res.metrics["methods"]["zero_shot"]["overall"]["exposure@2"]

    primacy, recency = zero_shot_exposure("primacy"), zero_shot_exposure("recency")
    assert primacy[0] > primacy[-1] + 0.3
    assert recency[-1] > recency[0] + 0.3


def test_queries_are_sampled_from_those_kept_at_the_smallest_k(cands, tmp_path):
    small = load_queries(config(cands, tmp_path / "x", K=3, n_queries=2, k_sweep=[3, 6], exposure_k=3))
    large = load_queries(config(cands, tmp_path / "y", K=6, n_queries=2, k_sweep=[3, 6]))
    ids = [q.query_id for q in small.test]
    assert ids == [q.query_id for q in large.test] and len(ids) == 2
    assert all(q.k == 3 for q in small.test) and all(q.k == 6 for q in large.test)
    kept_at_3 = [q.query_id for q in load_queries(config(cands, tmp_path / "z", K=3, exposure_k=3)).test]
    assert kept_at_3 == ["u0", "u3", "u6"] and set(ids) <= set(kept_at_3)
    assert len(load_queries(config(cands, tmp_path / "v", K=6)).test) == 6
    other_seed = load_queries(config(cands, tmp_path / "w", K=6, n_queries=2, k_sweep=[3, 6], seed=99))
    assert other_seed.info["pool_queries"] == len(kept_at_3)


def test_first_queries_keeps_a_prefix_of_the_sample(cands, tmp_path):
    """A smaller run reranks the first users of a larger one's sample (not a new sample of that size), and its
    identity says so while a run without it keeps its identity."""
    larger = load_queries(config(cands, tmp_path / "a", K=6, n_queries=5)).test
    smaller = config(cands, tmp_path / "b", K=6, n_queries=5, first_queries=3)
    assert [q.query_id for q in load_queries(smaller).test] == [q.query_id for q in larger[:3]]
    assert smaller.planned_queries == 3 and smaller.identity()["first_queries"] == 3
    assert "first_queries" not in config(cands, tmp_path / "c", K=6, n_queries=5).identity()
    with pytest.raises(InvariRankError, match="first_queries"):
        config(cands, tmp_path / "d", K=6, n_queries=2, first_queries=3)


def test_dry_run_counts_passes_without_running(cands, tmp_path):
    cfg = config(cands, tmp_path / "dry")
    plan = plan_run(cfg)
    n = plan.n_queries
    assert plan.per_method["zero_shot"] == {"min": n * 4, "max": n * 4}
    assert plan.per_method["sgs"] == {"min": n * 4 * K, "max": n * 4 * K}
    assert plan.per_method["stella"] == {"min": n * 4 * 4, "max": n * 4 * 10}
    # distinct passes: 1 shared first + 2 bootstrap shuffles + (K-1) SGS + STELLA beyond its shared 3 (1..7)
    assert plan.unique_min == n * 4 * (1 + 2 + K - 1 + 1) and plan.unique_max == n * 4 * (1 + 2 + K - 1 + 7)
    assert plan.calibration_passes > 0 and plan.measured_passes == 4
    text = format_plan(plan)
    assert "estimated time" in text and "sgs" in text and "STELLA calibration" in text
    assert not (tmp_path / "dry").exists()
    run_experiment(cfg, progress=False)
    assert plan_run(cfg).calibration_passes == 0  # the matrix is now cached


def test_stella_without_validation_queries_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "only_test.jsonl"
    write_candidates(path, [q for q in toy_split_queries() if q.split == "test"])
    with pytest.raises(InvariRankError, match="validation"):
        run_experiment(config(path, tmp_path / "r"), progress=False)
    res = run_experiment(config(path, tmp_path / "r", methods=["zero_shot", "sgs"]), progress=False)
    assert set(res.metrics["methods"]) == {"zero_shot", "sgs"}
    assert not (tmp_path / "r" / "calibration.json").exists()


def test_config_errors_name_the_setting(tmp_path):
    with pytest.raises(InvariRankError, match="unknown setting 'mm'"):
        RunConfig.from_mapping({"mm": 3})
    with pytest.raises(InvariRankError, match="unknown method 'rrf'"):
        RunConfig.from_mapping({"methods": "zero_shot,rrf"})
    with pytest.raises(InvariRankError, match="'M'"):
        RunConfig.from_mapping({"M": 0})
    bad = tmp_path / "bad.yaml"
    bad.write_text("m: [1,\n")
    with pytest.raises(InvariRankError, match="bad.yaml"):
        RunConfig.from_yaml(bad)


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_rerank_from_yaml_and_flags_then_report(cands, tmp_path, capsys):
    yaml_file = tmp_path / "run.yaml"
    yaml_file.write_text(
        f"candidates: {cands}\nscorer: simulated\nk: {K}\nm: 3\nmethods: [zero_shot, sgs]\n"
        f"n_bootstrap: 10\nscorer_options:\n  bias_shape: recency\n"
    )
    out = tmp_path / "cli-run"
    rc = cli_main(
        [
            "rerank",
            "--config",
            str(yaml_file),
            "--m",
            "2",
            "--scorer-option",
            "noise_sd=0.5",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert rc == 0
    man = read_json(out / "manifest.json")
    assert man["config"]["M"] == 2 and man["config"]["methods"] == ["zero_shot", "sgs"]  # flag overrides file
    assert man["model"]["bias_shape"] == "recency" and man["model"]["noise_sd"] == 0.5
    printed = capsys.readouterr().out
    assert "zero_shot:" in printed and "sgs:" in printed

    rc = cli_main(["rerank", "--config", str(yaml_file), "--out", str(tmp_path / "dry"), "--dry-run"])
    assert rc == 0 and "estimated time" in capsys.readouterr().out and not (tmp_path / "dry").exists()

    figs = tmp_path / "figs"
    assert cli_main(["report", str(out), "--out", str(figs)]) == 0
    printed = capsys.readouterr().out
    assert "summary" in printed and "ppi" in printed
    for name in ("exposure_by_position.png", "metric_vs_k.png"):
        assert (figs / name).stat().st_size > 1000


def test_cli_bad_input_is_one_line_exit_2(cands, tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("mm: 3\n")
    assert cli_main(["rerank", "--config", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("invarirank: error:") and "'mm'" in err[0]
    assert cli_main(["report", str(tmp_path / "nowhere")]) == 2
    assert "run folder not found" in capsys.readouterr().err
    assert (
        cli_main(
            [
                "rerank",
                "--candidates",
                str(cands),
                "--scorer",
                "simulated",
                "--scorer-option",
                "bias_shape=sideways",
                "--out",
                str(tmp_path / "o2"),
            ]
        )
        == 2
    )
    assert "sideways" in capsys.readouterr().err
