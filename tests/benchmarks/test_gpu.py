"""benchmarks.gpu: the committed architecture configs are the paper's models (parameter counts), and a CPU run with
a tiny config writes its JSON with every field."""

from __future__ import annotations

import json

import pytest

from tests.support import ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")

from benchmarks import gpu  # noqa: E402

ROW_FIELDS = {
    "arch",
    "model",
    "K",
    "config",
    "queries",
    "passes",
    "seconds",
    "passes_per_s",
    "tokens_per_s",
    "tflops",
    "share_of_matmul",
    "forward_calls",
    "prefix_forwards",
    "tokens_computed",
    "prefix_tokens",
    "peak_memory_gib",
}


@pytest.mark.parametrize(
    "name,billions",
    [("llama-3.2-3b-instruct", 3.21), ("mistral-7b-instruct-v0.3", 7.25), ("qwen2.5-7b-instruct", 7.62)],
)
def test_committed_architectures_have_the_papers_sizes(name, billions):
    model_id, fields = gpu.architecture(name)
    assert model_id.endswith(("Llama-3.2-3B-Instruct", "Mistral-7B-Instruct-v0.3", "Qwen2.5-7B-Instruct"))
    assert gpu.count_parameters(fields) / 1e9 == pytest.approx(billions, rel=0.01)


def test_cpu_run_with_a_tiny_config_writes_every_field(tmp_path):
    out = tmp_path / "bench.json"
    assert (
        gpu.main(
            [
                "--json",
                str(out),
                "--tiny",
                "--device",
                "cpu",
                "--archs",
                "llama-3.2-3b-instruct",
                "--ks",
                "4",
                "--queries",
                "2",
                "--m",
                "2",
                "--history-tokens",
                "40",
                "--candidate-tokens",
                "6",
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["complete"] is True and report["tiny"] is True and report["matmul_tflops"] > 0
    assert {"device", "dtype", "torch", "transformers", "settings", "parameters_billion"} <= set(report)
    rows = report["results"]
    assert [r["config"] for r in rows] == ["b", "c", "a"]
    for r in rows:
        assert set(r) == ROW_FIELDS and r["passes"] > 0 and r["passes_per_s"] > 0 and r["tflops"] > 0
        assert r["model"] == "meta-llama/Llama-3.2-3B-Instruct" and r["K"] == 4
    by = {r["config"]: r for r in rows}
    assert by["a"]["prefix_forwards"] == 0 and by["b"]["prefix_forwards"] == by["c"]["prefix_forwards"] == 2
    assert by["c"]["tokens_computed"] <= by["b"]["tokens_computed"] < by["a"]["tokens_computed"]
    assert by["a"]["passes"] == by["b"]["passes"] == by["c"]["passes"]


def test_the_cost_model_reads_the_benchmark_file(tmp_path):
    from invarirank.runner._bench_files import load_bench

    path = tmp_path / "b.json"
    path.write_text(
        json.dumps(
            {
                "device": "X",
                "results": [
                    {"model": "m/a", "K": 25, "config": "b", "passes_per_s": 10.0},
                    {"model": "m/a", "K": 25, "config": "c", "passes_per_s": 20.0},
                    {"model": "m/a", "K": 25, "scorer": "choice", "backend": "vllm", "passes_per_s": 90.0},
                    {"model": "m/b", "K": 25, "scorer": "span", "backend": "hf", "passes_per_s": 4.0},
                    {"model": "m/b", "K": 25, "scorer": "span", "backend": "vllm", "passes_per_s": 5.0},
                ],
                "first_stage": {"seconds_per_epoch": {"ml-32m": 36.0}, "epochs": 100},
            }
        )
    )
    bench = load_bench(path)
    assert bench.seconds_per_pass("m/a", 25) == pytest.approx(0.05)  # the fastest configuration, span rows only
    assert bench.seconds_per_pass("m/b", 25) == pytest.approx(0.2)  # the faster backend
    assert bench.seconds_per_pass("m/a", 50) == pytest.approx(0.1)  # scaled by the candidates
    assert bench.seconds_per_pass("m/other", 25) is None
    # each backend's own price: a grid computed on that backend (the choice row prices no span run)
    assert bench.only("hf").seconds_per_pass("m/b", 25) == pytest.approx(0.25)
    assert bench.only("vllm").seconds_per_pass("m/b", 25) == pytest.approx(0.2)
    assert bench.only("vllm").seconds_per_pass("m/a", 25) is None
    assert bench.only("hf").seconds_per_pass("m/a", 25) == pytest.approx(0.05)  # rows without a backend are hf's
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(Exception, match="bad.json: not a benchmark file"):
        load_bench(bad)


def test_the_paper_grid_priced_from_a_benchmark_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INVARIRANK_DATA", "/data")  # the paper grid's raw data folders (not read by a dry run)

    from invarirank.cli import main
    from invarirank.grid import load_grid
    from invarirank.runner._bench_files import load_bench
    from invarirank.runner._grid_estimate import format_grid_cost, grid_cost_table

    root = ROOT
    grid = load_grid(root / "configs" / "grid-paper.yaml")
    path = tmp_path / "h200.json"
    path.write_text(
        json.dumps(
            {
                "device": "NVIDIA H200",
                "results": [
                    {"model": "Qwen/Qwen2.5-7B-Instruct", "K": k, "config": "c", "passes_per_s": 100.0}
                    for k in (15, 25, 50)
                ],
                "first_stage": {"seconds_per_epoch": {"ml-32m": 36.0}, "epochs": 100, "device": "cpu"},
            }
        )
    )
    table = grid_cost_table(grid.runs, grid.raw["estimate"], load_bench(path))
    qwen = table[table["run"].str.contains("qwen")]
    assert set(qwen["source"]) == {"measured"} and set(table[~table.index.isin(qwen.index)]["source"]) == {"assumed"}
    assert list(qwen["s per pass"]) == [0.01] * len(qwen)
    assert table["first stage hours"].dropna().tolist() == [1.0]  # once per data set it measured
    text = format_grid_cost(grid.runs, grid.raw["estimate"], bench=path)
    assert "priced from" in text and "6 of 18 runs measured" in text and "first stage" in text
    assert main(["grid", str(root / "configs" / "grid-paper.yaml"), "--dry-run", "--bench", str(path)]) == 0
    assert "6 of 18 runs measured" in capsys.readouterr().out


def test_first_stage_timing_on_a_small_graph():
    fs = gpu.first_stage(scale=2e-4, steps=1)
    assert fs["seconds_per_epoch"]["ml-32m"] > 0 and fs["extrapolated"] is True and fs["epochs"] == 100
    assert fs["positives"] == 3200 and fs["device"] == "cpu"


def test_runs_go_k_by_k_so_a_cut_short_run_covers_every_model(tmp_path):
    out = tmp_path / "bench.json"
    assert (
        gpu.main(
            [
                "--json",
                str(out),
                "--tiny",
                "--device",
                "cpu",
                "--archs",
                "llama-3.2-3b-instruct,qwen2.5-7b-instruct",
                "--ks",
                "4,5",
                "--configs",
                "b",
                "--queries",
                "1",
                "--m",
                "2",
                "--history-tokens",
                "40",
                "--candidate-tokens",
                "6",
            ]
        )
        == 0
    )
    rows = json.loads(out.read_text())["results"]
    assert [(r["K"], r["arch"]) for r in rows] == [
        (4, "llama-3.2-3b-instruct"),
        (4, "qwen2.5-7b-instruct"),
        (5, "llama-3.2-3b-instruct"),
        (5, "qwen2.5-7b-instruct"),
    ]


def test_the_projects_benchmark_files_are_merged_per_device(tmp_path):
    import os

    from invarirank.runner._bench_files import find_bench

    folder = tmp_path / "results" / "bench"
    folder.mkdir(parents=True)

    def write(name, device, rows, when):
        path = folder / name
        path.write_text(
            json.dumps(
                {
                    "device": device,
                    "results": [{"model": m, "K": k, "config": "c", "passes_per_s": r} for m, k, r in rows],
                }
            )
        )
        os.utime(path, (when, when))

    write("0-a100.json", "A100", [("m/a", 25, 99.0), ("m/b", 25, 99.0)], 1)
    write("1-h200-k25.json", "H200", [("m/a", 25, 10.0)], 2)
    write("2-h200-k50.json", "H200", [("m/a", 50, 4.0), ("m/a", 25, 12.0)], 3)
    bench = find_bench(None, root=tmp_path)
    assert bench.device == "H200" and bench.source == "results/bench/1-h200-k25.json + results/bench/2-h200-k50.json"
    assert bench.seconds_per_pass("m/a", 25) == pytest.approx(1 / 12.0)  # the fastest of the two files
    assert bench.seconds_per_pass("m/a", 50) == pytest.approx(1 / 4.0)
    assert bench.seconds_per_pass("m/b", 25) is None  # measured on another device only
    assert find_bench(None, root=tmp_path / "elsewhere") is None
    # the CPU folder: both backends merged per backend; another benchmark's evidence file beside them is not a bench
    cpu = folder / "cpu"
    cpu.mkdir()
    rows = [
        {"model": "m/a", "K": 10, "scorer": "span", "backend": b, "passes_per_s": r}
        for b, r in (("hf", 2.0), ("vllm", 1.0))
    ]
    (cpu / "2026-12-03-a.json").write_text(json.dumps({"device": "cpu", "results": rows}))
    (cpu / "2026-12-03-recomputed.json").write_text(json.dumps({"rows_compared": 40, "rankings_identical": 40}))
    got = find_bench(None, root=tmp_path, folder="results/bench/cpu")
    assert got.source == "results/bench/cpu/2026-12-03-a.json" and got.seconds_per_pass("m/a", 10) == pytest.approx(0.5)
    assert got.only("vllm").seconds_per_pass("m/a", 10) == pytest.approx(1.0)
    assert got.only("hf").seconds_per_pass("m/a", 10) == pytest.approx(0.5)


def test_a_k_the_benchmark_did_not_measure_is_priced_as_scaled_not_measured(tmp_path):
    """The paper-scale page called every priced row 'measured' while the benchmark had measured K = 25 only for
    Qwen: a row priced from another K says so, and the total line counts it apart."""

    from invarirank.grid import load_grid
    from invarirank.runner._bench_files import load_bench
    from invarirank.runner._grid_estimate import format_grid_cost, grid_cost_table

    root = ROOT
    grid = load_grid(root / "configs" / "grid-paper.yaml")
    path = tmp_path / "h200.json"
    path.write_text(
        json.dumps(
            {
                "device": "NVIDIA H200",
                "results": [{"model": "Qwen/Qwen2.5-7B-Instruct", "K": 25, "config": "c", "passes_per_s": 100.0}],
            }
        )
    )
    table = grid_cost_table(grid.runs, grid.raw["estimate"], load_bench(path))
    qwen = table[table["run"].str.contains("qwen")]
    assert {(k, s) for k, s in zip(qwen["K"], qwen["source"])} == {
        (15, "scaled from K = 25"),
        (25, "measured"),
        (50, "scaled from K = 25"),
    }
    assert list(qwen["s per pass"]) == [0.01 * k / 25 for k in qwen["K"]]
    text = format_grid_cost(grid.runs, grid.raw["estimate"], bench=path)
    assert "2 of 18 runs measured, 4 scaled from the model's measurement at another K" in text
