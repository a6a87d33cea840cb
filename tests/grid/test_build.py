"""Many runs (invarirank.grid): grid files, run folders (reuse / mismatch / publish), cost estimates, notebook
execution (skip when up to date, failures stop the grid), the `invarirank grid` command."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from invarirank.cli import main
from invarirank.errors import InvariRankError
from invarirank.grid import RESULT_FILES, complete_runs, ensure_run, load_grid, run_folder, run_status
from invarirank.grid._notebooks import execute_notebook
from invarirank.runner import RunConfig
from invarirank.runner._grid_estimate import estimate_run, format_grid_cost, format_grid_estimate
from invarirank.store import publish_run
from tests.support import ROOT
from tests.support.runner import Killed

CONFIGS = ROOT / "configs"


def _tiny(**over) -> RunConfig:
    d = dict(
        dataset="synthetic",
        retriever="none",
        model="simulated",
        scorer="simulated",
        K=5,
        M=3,
        n_queries=3,
        methods=["zero_shot", "bootstrapping"],
        calibration_queries=3,
        calibration_repeats=1,
        seed=1,
        scorer_options={"bias_shape": "primacy", "bias_strength": 1.0},
        name="tiny",
    )
    d.update(over)
    return RunConfig.from_mapping(d, grid="t")


# -- grid files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["grid-default.yaml", "grid-smoke.yaml", "grid-paper.yaml"])
def test_committed_grids_load(name):
    grid = load_grid(CONFIGS / name)
    assert grid.runs
    for spec in grid.runs:  # a sweep samples its queries once, at its smallest K
        if spec.sample_k is not None:
            assert spec.sample_k == min(s.K for s in grid.runs if (s.dataset, s.label) == (spec.dataset, spec.label))


def test_default_grid_shape():
    grid = load_grid(CONFIGS / "grid-default.yaml")
    full = [s for s in grid.runs if set(s.methods) == {"zero_shot", "bootstrapping", "stella", "sgs"}]
    assert len(full) == 1 and 8 <= full[0].K <= 12 and full[0].scorer == "span"
    assert full[0].model == "smollm2-135m" and full[0].dataset == "ml-100k" and full[0].retriever == "lightgcn"
    span_ks = {s.K for s in grid.runs if s.scorer == "span"}
    assert len(span_ks) >= 3  # a K sweep for Figure 2
    assert any(s.scorer == "choice" for s in grid.runs)  # the scorer comparison
    assert grid.lab and len(grid.lab["shapes"]) >= 2 and len(grid.lab["strengths"]) >= 3


def test_paper_grid_is_the_papers_setting():
    grid = load_grid(CONFIGS / "grid-paper.yaml")
    assert len(grid.runs) == 18
    assert {s.K for s in grid.runs} == {15, 25, 50}
    assert {s.model for s in grid.runs} == {
        "meta-llama/Llama-3.2-3B-Instruct",
        "mistralai/Mistral-7B-Instruct-v0.3",
        "Qwen/Qwen2.5-7B-Instruct",
    }
    assert {s.data_label for s in grid.runs} == {"ml-32m", "amazon-books"}
    for s in grid.runs:
        assert (s.M, s.n_queries, s.sample_k, s.calibration_queries, s.calibration_repeats) == (20, 500, 15, 150, 5)
        assert set(s.methods) == {"zero_shot", "bootstrapping", "stella", "sgs"}


def test_paper_grid_header_holds_the_current_cost_table():
    text = (CONFIGS / "grid-paper.yaml").read_text()
    block = re.search(r"# COST-TABLE-BEGIN\n(.*?)# COST-TABLE-END", text, re.S).group(1)
    copied = [line[4:] for line in block.splitlines()]
    grid = load_grid(CONFIGS / "grid-paper.yaml")
    assert copied == format_grid_cost(grid.runs, grid.raw["estimate"]).splitlines(), (
        "regenerate the table in configs/grid-paper.yaml from `invarirank grid configs/grid-paper.yaml --dry-run`"
    )


def test_estimate_counts_passes():
    spec = RunConfig.from_mapping(
        dict(K=10, M=20, n_queries=500, calibration_queries=150, calibration_repeats=5), grid="g"
    )
    e = estimate_run(spec, calibration_relevant=1.0)
    # distinct passes per order: 1 + 2 (bootstrapping) + K-1 (SGS) + STELLA's 4..10 updates less 1 and less
    # the 2 it shares with bootstrapping
    assert e["passes_min"] == 500 * 20 * (1 + 2 + 9 + 1) and e["passes_max"] == 500 * 20 * (1 + 2 + 9 + 7)
    assert e["calibration_passes"] == 150 * 10 * 5
    assert e["requested_max"] == 500 * 20 * (1 + 3 + 10 + 10)


def test_dry_run_counts_queries_committed_in_shards_as_done():
    spec = RunConfig.from_mapping(
        dict(K=10, M=20, n_queries=40, calibration_queries=30, calibration_repeats=2), grid="g"
    )
    e = estimate_run(spec, calibration_relevant=1.0)
    whole = format_grid_estimate([spec], ["missing"])
    assert f"passes still to compute: {e['total_min']}-{e['total_max']}" in whole
    quarter = format_grid_estimate([spec], ["missing"], committed=[30])  # 30 of 40 queries in shards
    lo, hi = e["passes_min"] // 4 + e["calibration_passes"], e["passes_max"] // 4 + e["calibration_passes"]
    assert f"passes still to compute: {lo}-{hi}" in quarter
    row = next(line for line in quarter.splitlines() if line.startswith(spec.run_name))
    assert row.split()[2:4] == ["40", "30"]
    assert "passes still to compute: 0-0" in format_grid_estimate([spec], ["complete"], committed=[0])
    stella = spec.replace(methods=["zero_shot", "stella"])
    e = estimate_run(stella, calibration_relevant=1.0)
    assert e["calibration_passes"] > 0
    recorded = format_grid_estimate([stella], ["missing"], committed=[30], recorded=[True])  # with its calibration
    assert f"passes still to compute: {e['passes_min'] // 4}-{e['passes_max'] // 4}" in recorded
    assert next(line for line in recorded.splitlines() if line.startswith(spec.run_name)).split()[-1] == "rec."


@pytest.mark.parametrize(
    "text, message",
    [
        ("runs: []\n", "field 'grid'"),
        ("grid: g\nrunz: []\n", "unknown top-level field 'runz'"),
        ("grid: g\nruns:\n  - {K: 5, methods: [zero_shot, magic]}\n", "unknown method 'magic'"),
        ("grid: g\nruns:\n  - {K: 5, sample_k: 9}\n", "sample_k = 9) is larger than K = 5"),
        ("grid: g\nruns:\n  - {K: 0}\n", "'K' ('k') = 0"),
        ("grid: g\nruns:\n  - {K: 5}\n  - {K: 5}\n", "duplicate run"),
        ("grid: g\nruns:\n  - {K: 5, colour: red}\n", "unknown setting 'colour'"),
        ("grid: g\nruns: [\n", "not valid YAML"),
        ("grid: g\nruns:\n  - {name: a, K: 5}\npages: [a, b]\n", "field 'pages': 'b' is not a run of this grid"),
        ("grid: g\nruns:\n  - {name: a, K: 5}\npages: [a, a]\n", "field 'pages': run 'a' is listed twice"),
        ("grid: g\nruns:\n  - {name: a, K: 5}\npages: some\n", "field 'pages' = 'some', expected 'all' or a list"),
        ("grid: g\nruns:\n  - {name: a, K: 5}\npages: [{a: 1}]\n", "field 'pages' = [{'a': 1}], expected 'all'"),
    ],
)
def test_bad_grid_files_name_file_and_field(tmp_path, text, message):
    p = tmp_path / "g.yaml"
    p.write_text(text)
    with pytest.raises(InvariRankError) as err:
        load_grid(p)
    assert str(p) in str(err.value) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_k_list_expands_into_one_run_per_k(tmp_path):
    p = tmp_path / "g.yaml"
    p.write_text("grid: g\ndefaults: {M: 4, n_queries: 2, sample_k: 5}\nruns:\n  - {K: [5, 8], methods: [zero_shot]}\n")
    grid = load_grid(p)
    assert [s.K for s in grid.runs] == [5, 8]
    assert [s.run_name for s in grid.runs] == [
        "ml-100k-lightgcn-smollm2-135m-span-k5",
        "ml-100k-lightgcn-smollm2-135m-span-k8",
    ]
    assert grid.data == [
        {"dataset": "ml-100k", "label": None, "raw_dir": None, "retrievers": ["lightgcn"], "K": [5, 8]}
    ]


# -- run folders ---------------------------------------------------------------------------------
def test_ensure_run_runs_publishes_then_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    results, work = tmp_path / "results", tmp_path / "runs"
    spec = _tiny()
    assert run_status(spec, run_folder(spec, results)) == "missing"
    folder = ensure_run(spec, results, work)
    assert folder == results / "t" / "tiny"
    assert sorted(p.name for p in folder.iterdir()) == sorted(RESULT_FILES)
    assert run_status(spec, run_folder(spec, results)) == "complete"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["grid_run"]["run_name"] == "tiny"
    with gzip.open(folder / "observations.jsonl.gz", "rt") as fh:
        rows = [json.loads(line) for line in fh]
    assert len(rows) == 3 * 3 * 2
    stamp = (folder / "metrics.json").stat().st_mtime_ns
    again = ensure_run(spec, results, work)  # reused: nothing rewritten
    assert again == folder and (folder / "metrics.json").stat().st_mtime_ns == stamp
    assert complete_runs(results) == [folder]


def test_run_with_other_settings_is_never_overwritten(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    results, work = tmp_path / "results", tmp_path / "runs"
    ensure_run(_tiny(), results, work)
    other = _tiny(M=4)
    assert run_status(other, run_folder(other, results)) == "mismatch"
    with pytest.raises(InvariRankError, match="other settings \\(M\\)"):
        ensure_run(other, results, work)


def test_published_observations_are_deterministic(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    a = ensure_run(_tiny(), tmp_path / "a", tmp_path / "wa")
    b = ensure_run(_tiny(), tmp_path / "b", tmp_path / "wb")
    for name in ("observations.jsonl.gz", "metrics.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_incomplete_folder_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    folder = ensure_run(_tiny(), tmp_path / "r", tmp_path / "w")
    (folder / "metrics.json").unlink()
    assert run_status(_tiny(), run_folder(_tiny(), tmp_path / "r")) == "incomplete"
    ensure_run(_tiny(), tmp_path / "r", tmp_path / "w")
    assert run_status(_tiny(), run_folder(_tiny(), tmp_path / "r")) == "complete"


def _die_after_each_export(monkeypatch, exported: list | None = None):
    """Every session ends (raises :class:`Killed`) right after it commits its first shard into the results folder;
    ``exported`` collects what each commit copied. Returns the real ``export_shards``, to put back."""
    import invarirank.runner._run as run_module

    real_export = run_module.export_shards

    def export_then_die(work_dir, target):
        names = real_export(work_dir, target)
        if exported is not None:
            exported.append(names)
        raise Killed

    monkeypatch.setattr(run_module, "export_shards", export_then_die)
    return real_export


def test_shards_are_committed_as_they_finish_and_a_fresh_clone_resumes_from_them(tmp_path, monkeypatch):
    """A run in shards copies each finished shard into results/<grid>/<run>/shards/ (the part to commit); a
    session on a fresh clone (no work folder) computes only the other shards, whatever its shard setting, and
    publishes the same files as an uninterrupted run, without the shards folder."""
    import invarirank.runner._run as run_module
    from invarirank.store import SHARD_FILES, committed_shards

    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    results, work = tmp_path / "results", tmp_path / "runs"
    spec = _tiny(shard_queries=1)
    exported: list = []
    real_export = _die_after_each_export(monkeypatch, exported)  # the session ends after its first shard
    with pytest.raises(Killed):
        ensure_run(spec, results, work)
    target = results / "t" / "tiny"
    assert sorted(p.name for p in target.iterdir()) == ["shards"]
    shards = committed_shards(target)
    assert len(shards) == 1 and exported == [[shards[0].name]]
    assert sorted(p.name for p in shards[0].iterdir()) == sorted(SHARD_FILES)
    assert run_status(spec, run_folder(spec, results)) == "missing" and complete_runs(results) == []

    shutil.rmtree(work)  # a fresh clone: only the committed shard is there
    monkeypatch.setattr(run_module, "export_shards", lambda w, t: exported.append(real_export(w, t)))
    folder = ensure_run(_tiny(), results, work)  # no shard size given: the committed shards' is used
    later = exported[1:]  # one export per shard computed in this session
    assert [len(names) for names in later] == [1, 1]
    assert shards[0].name not in {names[0] for names in later}  # the committed shard was not recomputed
    assert sorted(p.name for p in folder.iterdir()) == sorted(RESULT_FILES)
    whole = ensure_run(_tiny(), tmp_path / "r2", tmp_path / "w2")  # uninterrupted, in one process
    for name in ("observations.jsonl.gz", "metrics.json", "manifest.json"):
        assert (folder / name).read_bytes() == (whole / name).read_bytes(), name


def test_a_fresh_machine_resumes_with_the_calibration_committed_beside_the_shards(tmp_path, monkeypatch):
    """STELLA_LW's calibration is committed with the run's first shard (``shards/calibrations.json``): a session on
    a fresh clone with an empty cache takes it instead of computing its passes again, and publishes the same
    files as an uninterrupted run. A recorded calibration that the fresh machine cannot take and computes with
    other counts stops the run before any shard (the committed shards' STELLA_LW rows came from the other one)."""
    import json

    import invarirank.methods._stella_calibration as stella_calibration
    import invarirank.runner._run as run_module
    from invarirank.store import CALIBRATIONS_FILE, committed_shards

    spec = _tiny(shard_queries=1, methods=["zero_shot", "stella"])
    results, work = tmp_path / "results", tmp_path / "runs"
    real_export = _die_after_each_export(monkeypatch)  # the session ends after its first shard
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache1"))
    with pytest.raises(Killed):
        ensure_run(spec, results, work)
    committed = results / "t" / "tiny" / "shards"
    assert len(committed_shards(committed.parent)) == 1
    recorded = json.loads((committed / CALIBRATIONS_FILE).read_text())
    assert set(recorded["calibrations"]) == {"5"} and recorded["calibrations"]["5"]["probes_sha256"]

    shutil.rmtree(work)  # a fresh clone on a fresh machine: no cache
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache2"))
    monkeypatch.setattr(run_module, "export_shards", real_export)
    real_counts = stella_calibration.calibration_counts

    def no_passes(*a, **k):
        raise AssertionError("the calibration was computed again")

    monkeypatch.setattr(stella_calibration, "calibration_counts", no_passes)
    folder = ensure_run(_tiny(methods=["zero_shot", "stella"]), results, work)
    monkeypatch.setattr(stella_calibration, "calibration_counts", real_counts)
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache3"))
    whole = ensure_run(_tiny(methods=["zero_shot", "stella"]), tmp_path / "r2", tmp_path / "w2")
    for name in ("observations.jsonl.gz", "metrics.json", "manifest.json"):
        assert (folder / name).read_bytes() == (whole / name).read_bytes(), name
    assert not committed.exists()

    # the same first session again, then a record the fresh machine cannot take (other probing queries) whose
    # counts differ from what it computes
    shutil.rmtree(results), shutil.rmtree(work)
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache4"))
    _die_after_each_export(monkeypatch)
    with pytest.raises(Killed):
        ensure_run(spec, results, work)
    monkeypatch.setattr(run_module, "export_shards", real_export)
    doctored = json.loads((committed / CALIBRATIONS_FILE).read_text())
    entry = doctored["calibrations"]["5"]
    entry["probes_sha256"], entry["counts"][0][0] = "0" * 64, entry["counts"][0][0] + 1
    (committed / CALIBRATIONS_FILE).write_text(json.dumps(doctored))
    shutil.rmtree(work)
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache5"))
    with pytest.raises(
        InvariRankError,
        match=r"calibrations\.json: STELLA_LW's calibration at K=5 computed now "
        r"differs from the one the run's finished shards",
    ):
        ensure_run(_tiny(methods=["zero_shot", "stella"]), results, work)
    (committed / CALIBRATIONS_FILE).write_text("{not json")
    shutil.rmtree(work)
    with pytest.raises(InvariRankError, match=r"calibrations\.json: unreadable"):
        ensure_run(_tiny(methods=["zero_shot", "stella"]), results, work)


def test_a_session_on_another_machine_leaves_the_committed_calibration_record_as_it_was(tmp_path, monkeypatch):
    """The record's ``key`` is the cache key of the machine that computed the calibration (another CPU's first-stage
    float scores change it). A later session on another machine takes the record (same counts) and commits its next
    shard without rewriting the record: ``shards/calibrations.json`` keeps its bytes."""
    import json

    from invarirank._io import atomic_write_json
    from invarirank.store import CALIBRATIONS_FILE, committed_shards

    spec = _tiny(shard_queries=1, methods=["zero_shot", "stella"])
    results, work = tmp_path / "results", tmp_path / "runs"
    _die_after_each_export(monkeypatch)  # each session ends after its first shard
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache1"))
    with pytest.raises(Killed):
        ensure_run(spec, results, work)
    committed = results / "t" / "tiny" / "shards"
    record = json.loads((committed / CALIBRATIONS_FILE).read_text())
    record["calibrations"]["5"]["key"] = "f" * 64  # as the machine that computed it keyed its cache
    atomic_write_json(committed / CALIBRATIONS_FILE, record)
    before = (committed / CALIBRATIONS_FILE).read_bytes()
    shutil.rmtree(work)  # the next session: a fresh machine, an empty cache
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache2"))
    with pytest.raises(Killed):
        ensure_run(spec, results, work)
    assert len(committed_shards(committed.parent)) == 2
    assert (committed / CALIBRATIONS_FILE).read_bytes() == before


def test_a_committed_shard_of_another_configuration_is_refused(tmp_path, monkeypatch):
    """Shards committed by a run of other settings (here M = 4) under this run's name are never mixed in: the
    resumed run stops with one line naming the shard and the part that differs."""
    import invarirank.runner._run as run_module

    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    results, work = tmp_path / "results", tmp_path / "runs"
    real_export = _die_after_each_export(monkeypatch)
    with pytest.raises(Killed):
        ensure_run(_tiny(M=4, shard_queries=1), results, work)
    monkeypatch.setattr(run_module, "export_shards", real_export)
    shutil.rmtree(work)
    with pytest.raises(InvariRankError, match=r"a shard of another configuration \(differs in: settings\)"):
        ensure_run(_tiny(), results, work)


def test_publish_refuses_an_unfinished_work_folder(tmp_path):
    (tmp_path / "w").mkdir()
    with pytest.raises(InvariRankError, match="no observations"):
        publish_run(tmp_path / "w", tmp_path / "r", _tiny().to_json())


# -- notebooks -----------------------------------------------------------------------------------
def _notebook(path: Path, code: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title"),
        nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(code),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_execute_notebook_skips_when_up_to_date_and_sets_title(tmp_path):
    src = _notebook(tmp_path / "n.ipynb", "print(x * 2)")
    out = tmp_path / "build" / "n.ipynb"
    assert execute_notebook(src, out, {"x": 21}, title="Run 21", fingerprint="abc") is True
    nb = nbformat.read(out, as_version=4)
    assert nb.cells[0].source == "# Run 21"
    assert any("42" in o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "hide-cell" in injected[0].metadata["tags"]
    assert execute_notebook(src, out, {"x": 21}, fingerprint="abc") is False
    assert execute_notebook(src, out, {"x": 21}, fingerprint="changed") is True


@pytest.mark.slow
def test_failing_notebook_stops_with_one_line_and_leaves_no_page(tmp_path):
    src = _notebook(tmp_path / "n.ipynb", "raise ValueError('boom')")
    out = tmp_path / "build" / "n.ipynb"
    with pytest.raises(InvariRankError) as err:
        execute_notebook(src, out, {"x": 1}, fingerprint="f")
    assert "ValueError: boom" in str(err.value) and "\n" not in str(err.value)
    assert not out.exists()
    assert (tmp_path / "build" / "_failed" / "n.ipynb").is_file()


def test_cli_dry_run_prints_status_and_passes(capsys, monkeypatch):
    monkeypatch.delenv("INVARIRANK_DATA", raising=False)  # a dry run rejects what a real run would: unset ${VAR}
    assert main(["grid", str(CONFIGS / "grid-paper.yaml"), "--dry-run"]) == 2
    assert "environment variable INVARIRANK_DATA, which is not set" in capsys.readouterr().err
    monkeypatch.setenv("INVARIRANK_DATA", "/data")
    assert main(["grid", str(CONFIGS / "grid-paper.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "ml-32m-lightgcn-llama-3.2-3b-instruct-span-k25" in out and "GPU h" in out


def test_cli_reports_bad_grid_in_one_line(tmp_path, capsys):
    assert main(["grid", str(tmp_path / "missing.yaml")]) == 2  # bad input
    err = capsys.readouterr().err.strip()
    assert err.startswith("invarirank: error:") and "\n" not in err


def test_changed_grid_recomputes_over_a_stale_scratch_run(tmp_path, monkeypatch):
    """The scratch folder runs/<grid>/<run> may hold a finished run of an older grid file: it is replaced,
    and a finished run of the same configuration is published without recomputing."""
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    results, work = tmp_path / "results", tmp_path / "runs"
    ensure_run(_tiny(), results, work)
    import shutil

    shutil.rmtree(results)
    scratch = work / "t" / "tiny"
    stamp = (scratch / "observations.jsonl").stat().st_mtime_ns
    ensure_run(_tiny(), results, work)  # same configuration: published from the scratch folder
    assert (scratch / "observations.jsonl").stat().st_mtime_ns == stamp
    shutil.rmtree(results)
    folder = ensure_run(_tiny(M=4), results, work)  # the grid changed: recomputed
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["grid_run"]["M"] == 4 and manifest["config"]["M"] == 4


@pytest.mark.slow
def test_rerank_notebook_with_new_parameters_computes_its_missing_run(tmp_path, monkeypatch):
    """`papermill notebooks/rerank.ipynb out.ipynb -p K 5 ...` computes a run that is not there, through the runner."""
    results, work = tmp_path / "results", tmp_path / "runs"
    params = dict(
        grid="nb",
        name="tiny-nb",
        dataset="synthetic",
        retriever="none",
        model="simulated",
        scorer="simulated",
        K=5,
        M=2,
        n_queries=2,
        sample_k=None,
        methods=["zero_shot"],
        seed=1,
        results_dir=str(results),
        work_dir=str(work),
        cache_dir=str(tmp_path / "cache"),
    )
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout's package
    execute_notebook(ROOT / "notebooks" / "rerank.ipynb", tmp_path / "out.ipynb", params, cwd=ROOT / "notebooks")
    config = RunConfig.from_mapping({k: v for k, v in params.items() if k not in ("results_dir", "work_dir")})
    assert run_status(config, run_folder(config, results)) == "complete"
    assert sorted(p.name for p in (results / "nb" / "tiny-nb").iterdir()) == sorted(RESULT_FILES)
