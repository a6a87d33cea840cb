"""The ray executor on a local Ray (2 CPUs, 2 logical GPUs, loopback only) with the simulated scorer: a grid of
2 runs in 6 shards gives the local executor's bytes, GPU placement, a worker killed by ``os._exit`` in the middle
of a shard or after a calibration part, a killed driver that resumes (from its shards, or from its calibration
journal), STELLA_LW's calibration parts spread over two workers, and bad input (unknown executor, no cluster at an
address, more GPUs than the cluster has). Each test stays within a few seconds once Ray is up; Ray is shut down at
the end."""

from __future__ import annotations

import os

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # before Ray is imported: stay on 127.0.0.1

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from invarirank._io import read_json  # noqa: E402
from invarirank.candidates import write_candidates  # noqa: E402
from invarirank.cli import main as cli_main  # noqa: E402
from invarirank.errors import InvariRankError  # noqa: E402
from invarirank.grid._book_build import compute_runs  # noqa: E402
from invarirank.llm._testing import toy_split_queries  # noqa: E402
from invarirank.runner import RunConfig, run_experiment  # noqa: E402
from invarirank.runner._ray_executor import RayExecutor  # noqa: E402
from tests.support.runner import Killed, calibration_candidates, kill_after  # noqa: E402

ray = pytest.importorskip("ray")
from tests.support import ROOT  # noqa: E402

pytestmark = pytest.mark.cluster  # starts a local Ray: never beside another service (tests/conftest.py)

PUBLISHED = ("observations.jsonl.gz", "metrics.json", "manifest.json")
FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )  # workers import this checkout
    ray.init(num_cpus=2, num_gpus=2, include_dashboard=False, log_to_driver=False)
    assert "node:127.0.0.1" in ray.cluster_resources()
    yield
    ray.shutdown()


@pytest.fixture()
def cands(tmp_path) -> Path:
    path = tmp_path / "cands.jsonl"
    write_candidates(path, toy_split_queries())
    return path


def config(cands: Path, tmp_path: Path, **kw) -> RunConfig:
    base = dict(
        candidates=str(cands),
        scorer="simulated",
        K=6,
        M=4,
        calibration_queries=3,
        calibration_repeats=2,
        n_bootstrap=20,
        seed=7,
        cache_dir=str(tmp_path / "cache"),
        grid="g",
    )
    base.update(kw)
    return RunConfig.from_mapping(base)


def test_grid_of_two_runs_in_six_shards_equals_the_local_executor(cands, tmp_path):
    runs = [
        config(cands, tmp_path, name="k6", shard_queries=2),
        config(cands, tmp_path, name="k4", K=4, exposure_k=2, shard_queries=1),
    ]
    compute_runs(runs, tmp_path / "local", tmp_path / "work-local")
    with RayExecutor(workers=2) as ex:
        compute_runs(runs, tmp_path / "ray", tmp_path / "work-ray", ex)
    shards = 0
    for run in ("k6", "k4"):
        for name in PUBLISHED:
            assert (tmp_path / "local" / "g" / run / name).read_bytes() == (
                tmp_path / "ray" / "g" / run / name
            ).read_bytes(), (run, name)
        vol = read_json(tmp_path / "work-ray" / "g" / run / "run.json")
        assert vol["execution"]["executor"] == "ray" and vol["execution"]["threads_per_worker"] == 1
        assert vol["model_loads"] == 2 and {w["slot"] for w in vol["workers"]} == {0, 1}
        shards += len(vol["shards"])
    assert shards >= 6


def test_gpu_placement_one_logical_gpu_per_worker(cands, tmp_path):
    with RayExecutor(gpus_per_shard=1) as ex:
        res = run_experiment(
            config(cands, tmp_path, out=str(tmp_path / "gpu"), shard_queries=1), progress=False, executor=ex
        )
    gpus = sorted(tuple(w["gpu_ids"]) for w in res.volatile["workers"])
    assert gpus == [("0",), ("1",)] and res.volatile["execution"]["gpus_per_shard"] == 1


def test_a_worker_killed_mid_shard_is_replaced_and_the_shard_rerun(cands, tmp_path):
    expected = run_experiment(config(cands, tmp_path, out=str(tmp_path / "local")), progress=False)
    marker = tmp_path / "killed"
    with RayExecutor(workers=2, fault={"marker": str(marker), "after_queries": 1}) as ex:
        res = run_experiment(
            config(cands, tmp_path, out=str(tmp_path / "ray"), shard_queries=3), progress=False, executor=ex
        )
    assert marker.is_file()  # a worker really died with os._exit(1)
    for name in FILES:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name
    assert res.manifest == expected.manifest
    assert res.volatile["model_loads"] >= 3  # 2 workers + the restarted one


def test_a_killed_driver_skips_finished_shards(cands, tmp_path):
    cfg = config(cands, tmp_path, out=str(tmp_path / "run"), shard_queries=2)
    with RayExecutor(workers=2) as ex:
        with pytest.raises(Killed):
            run_experiment(cfg, progress=False, executor=ex, on_shard_done=kill_after(1))
    assert len(list((tmp_path / "run" / ".work" / "shards").iterdir())) == 1
    seen = []
    with RayExecutor(workers=2) as ex:
        res = run_experiment(cfg, progress=False, executor=ex, on_shard_done=seen.append)
    assert seen == [1, 2] and res.volatile["queries_resumed_from_checkpoint"] == 2


def _calibrated(tmp_path: Path, name: str) -> RunConfig:
    """A run whose calibration has 5 parts of unequal size, with a cache of its own (so that it is computed)."""
    cands = calibration_candidates(tmp_path)
    out = tmp_path / name
    return config(cands, tmp_path, out=str(out), calibration_queries=5, cache_dir=f"{out}-cache")


def test_calibration_parts_are_spread_over_the_workers_and_survive_a_lost_worker(tmp_path):
    expected = run_experiment(_calibrated(tmp_path, "local"), progress=False)
    marker = tmp_path / "killed"
    with RayExecutor(workers=2, fault={"marker": str(marker), "after_parts": 1}) as ex:
        res = run_experiment(_calibrated(tmp_path, "ray"), progress=False, executor=ex)
    assert marker.is_file()  # a worker really died with os._exit(1) after computing its first part
    for name in FILES:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name
    assert res.manifest == expected.manifest
    facts = res.volatile["calibration_parts"]["6"]
    assert (facts["parts"], facts["journaled"], facts["computed"]) == (5, 0, 5)
    assert len({w["pid"] for w in facts["workers"]}) >= 2  # both workers computed parts


def test_a_driver_killed_mid_calibration_resumes_from_the_journal_on_two_workers(tmp_path):
    run_experiment(_calibrated(tmp_path, "local"), progress=False)
    cfg = _calibrated(tmp_path, "ray")
    with RayExecutor(workers=2) as ex:
        with pytest.raises(Killed):
            run_experiment(cfg, progress=False, executor=ex, on_calibration_part=kill_after(2))
    assert len(list((tmp_path / "ray" / ".work" / "calibration-parts" / "k6").iterdir())) == 2
    with RayExecutor(workers=2) as ex:
        res = run_experiment(cfg, progress=False, executor=ex)
    facts = res.volatile["calibration_parts"]["6"]
    assert (facts["parts"], facts["journaled"], facts["computed"]) == (5, 2, 3)
    for name in FILES:
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name


def test_bad_input_is_one_line_and_never_hangs(cands, tmp_path, capsys):
    base = [
        "rerank",
        "--candidates",
        str(cands),
        "--scorer",
        "simulated",
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
        "--executor",
        "ray",
    ]
    for extra, words in (
        (["--address", "127.0.0.1:9", "--connect-timeout", "3"], "no Ray cluster answers"),
        (["--gpus-per-shard", "4"], "the Ray cluster has 2 GPUs"),
        (["--workers", "5"], "room for 2 workers"),
    ):
        assert cli_main(base + extra) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("invarirank: error:") and words in err[0], err
    with pytest.raises(InvariRankError, match="HOST:PORT"):
        RayExecutor("nowhere")
    assert ray.is_initialized()  # the module's Ray was left alone


@pytest.mark.slow
def test_real_smollm2_run_through_ray_equals_the_local_run_at_equal_threads(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    settings = dict(
        dataset="ml-100k",
        retriever="als",
        K=5,
        M=2,
        n_queries=2,
        scorer="span",
        model="smollm2-135m",
        methods=["zero_shot", "bootstrapping"],
        n_bootstrap=0,
        seed=3,
        cache_dir=str(tmp_path / "cache"),
    )
    monkeypatch.setenv("INVARIRANK_THREADS", "1")  # the local run's threads = each worker's
    local = run_experiment(RunConfig.from_mapping(dict(settings, out=str(tmp_path / "local"))), progress=False)
    with RayExecutor(workers=2, threads_per_worker=1) as ex:
        res = run_experiment(
            RunConfig.from_mapping(dict(settings, out=str(tmp_path / "ray"), shard_queries=1)),
            progress=False,
            executor=ex,
        )
    for name in ("observations.jsonl", "metrics.json", "manifest.json"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name
    assert local.rows() == res.rows()
    vol = res.volatile
    assert vol["model_loads"] == 2 == len(vol["shards"]) and vol["execution"]["threads_per_worker"] == 1
    assert {s["worker"]["slot"] for s in vol["shards"]} == {0, 1}  # each worker computed one shard, own pass cache
    assert all((tmp_path / "cache" / "passes" / f"worker-{i}" / "passes.sqlite3").is_file() for i in (0, 1))
