"""The one reuse check (invarirank.runner.run_status: invarirank.store.RunFolder.status with the run schema's
identity): committed manifests still read as complete; a setting added with its default never changes a run's
identity; other settings mismatch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invarirank._io import atomic_write_json, read_json
from invarirank.errors import InvariRankError
from invarirank.grid import lab_runs, load_grid
from invarirank.runner import RunConfig, run_status
from invarirank.store import complete_runs, identity_difference, refresh_metrics
from tests.support import ROOT  # noqa: E402

COMMITTED = complete_runs(ROOT / "results")


@pytest.mark.committed
@pytest.mark.parametrize("run", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_manifests_read_as_their_own_run(run: Path):
    manifest = read_json(run / "manifest.json")
    config = RunConfig.from_manifest(manifest)
    assert config.run_name == run.name and config.grid == run.parent.name
    assert run_status(config, run) == "complete"
    # the older `config` section (flag names: k, m, queries, k_sweep) describes the same run
    assert RunConfig.from_mapping(RunConfig.canonical(manifest["config"], strict=False)).identity() == config.identity()


@pytest.mark.committed
def test_the_default_grid_matches_what_is_committed():
    grid = load_grid(ROOT / "configs" / "grid-default.yaml")
    for config in [*grid.runs, *lab_runs(grid.lab)]:
        assert run_status(config, ROOT / "results" / config.grid / config.run_name) == "complete", config.run_name


def test_identity_leaves_defaults_and_locations_out():
    a = RunConfig.from_mapping({"K": 10, "M": 8})
    assert a.identity() == {"K": 10, "M": 8}
    assert a.replace(out="/x", cache_dir="/y", device="cuda", label="L", grid="g", name="n").identity() == a.identity()
    assert a.replace(n_bootstrap=1000, noise_floor=False).identity() == a.identity()  # defaults given
    assert identity_difference(a.identity(), a.replace(M=9).identity()) == ["M"]
    # without STELLA_LW its calibration sizes change nothing
    b = a.replace(methods="zero_shot")
    assert b.replace(calibration_queries=3).identity() == b.identity()
    assert a.replace(calibration_queries=3).identity() != a.identity()


@pytest.mark.committed
def test_a_setting_added_later_with_its_default_keeps_a_run(tmp_path: Path):
    run = COMMITTED[0]
    manifest = read_json(run / "manifest.json")
    config = RunConfig.from_manifest(manifest)
    folder = tmp_path / "r"
    folder.mkdir()
    for name in ("observations.jsonl.gz", "metrics.json"):
        (folder / name).write_bytes((run / name).read_bytes())
    manifest["grid_run"]["a_future_setting"] = "its default"  # unknown to this version: ignored
    atomic_write_json(folder / "manifest.json", manifest)
    assert run_status(config, folder) == "complete"
    assert run_status(config.replace(seed=config.seed + 1), folder) == "mismatch"
    manifest["complete"] = False
    atomic_write_json(folder / "manifest.json", manifest)
    assert run_status(config, folder) == "incomplete"
    (folder / "metrics.json").unlink()
    (folder / "manifest.json").unlink()
    (folder / "observations.jsonl.gz").unlink()
    assert run_status(config, folder) == "missing"


def test_aliases_fill_the_same_schema_at_the_flags_edge_only():
    typed = {"k": 10, "m": 8, "queries": 5, "k_sweep": "6,10", "methods": "sgs,zero_shot"}
    flags = RunConfig.from_mapping(RunConfig.canonical(typed, aliases=True))
    grid = RunConfig.from_mapping({"K": 10, "M": 8, "n_queries": 5, "sample_k": 6, "methods": ["zero_shot", "sgs"]})
    assert flags == grid and flags.methods == ["zero_shot", "sgs"]  # the registry's order
    with pytest.raises(Exception, match="given twice"):
        RunConfig.canonical({"k": 10, "K": 12}, aliases=True)
    with pytest.raises(InvariRankError, match="unknown setting 'k'"):  # a grid entry spells the field
        RunConfig.from_mapping({"k": 10})
    assert json.loads(json.dumps(grid.to_json()))["run_name"] == grid.run_name


@pytest.mark.committed
def test_a_scorer_or_template_version_change_makes_a_run_outdated_and_old_metrics_are_re_evaluated(tmp_path: Path):
    run = next(r for r in COMMITTED if r.parent.name == "lab")
    config = RunConfig.from_manifest(read_json(run / "manifest.json"))
    folder = tmp_path / "r"
    folder.mkdir()
    for name in ("observations.jsonl.gz", "metrics.json", "manifest.json"):
        (folder / name).write_bytes((run / name).read_bytes())
    assert run_status(config, folder) == "complete"
    manifest = read_json(folder / "manifest.json")
    manifest["model"]["version"] = -1  # made by another simulated-scorer version
    atomic_write_json(folder / "manifest.json", manifest)
    assert run_status(config, folder) == "outdated"
    (folder / "manifest.json").write_bytes((run / "manifest.json").read_bytes())
    metrics = read_json(folder / "metrics.json")
    old = {k: v for k, v in metrics.items() if k not in ("comparisons", "claims")}
    atomic_write_json(folder / "metrics.json", {**old, "schema_version": 1})
    assert run_status(config, folder) == "old-metrics"
    refresh_metrics(folder)
    assert run_status(config, folder) == "complete"
    assert (folder / "metrics.json").read_bytes() == (run / "metrics.json").read_bytes()


@pytest.mark.committed
def test_a_choice_run_reads_complete_where_the_tokenizer_cannot_be_loaded(monkeypatch):
    """A torch-free install (`make test-fast`, a reader of committed runs) cannot render a choice run's chat frame:
    the status comes from the files alone instead of a ModuleNotFoundError."""
    from invarirank.llm import _choice

    choice = [
        p for p in COMMITTED if read_json(p / "manifest.json").get("model", {}).get("options", {}).get("frame_sha256")
    ]
    if not choice:
        pytest.skip("no committed choice run records its frame's hash")

    def missing(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'transformers'")

    monkeypatch.setattr(_choice, "current_frame_sha256", missing)
    for run in choice:
        assert run_status(RunConfig.from_manifest(read_json(run / "manifest.json")), run) == "complete", run.name
