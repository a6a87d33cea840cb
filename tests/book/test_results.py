"""Committed finished runs (results/<grid>/<run>/): each metrics.json equals ``evaluate`` on its committed
observations (with the settings the file records), the manifest describes the same run, and every run of
the default grid and the lab sweep is there, so `make book` on a fresh clone only re-renders."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from invarirank.evaluation import evaluate
from invarirank.grid import RESULT_FILES, complete_runs, lab_runs, load_grid, run_folder, run_status
from invarirank.methods._calibration_parts import HEAD_FIELDS, part_key
from invarirank.runner._provenance import QUERY_PARTS
from invarirank.runner._shards import Shard
from invarirank.store import (
    CALIBRATION_PARTS_DIR,
    CALIBRATIONS_FILE,
    OPTIONAL_RESULT_FILES,
    SHARD_FILES,
    SHARDS_DIR,
)
from invarirank.store._layout import calibration_part_name
from tests.support import ROOT

pytestmark = pytest.mark.committed

RESULTS = ROOT / "results"

RUNS = complete_runs(RESULTS)


def _run_folders() -> list[Path]:
    """``results/<grid>/<run>/``; ``results/bench/`` holds benchmark files (by device), not runs."""
    grids = [p for p in RESULTS.iterdir() if p.is_dir() and p.name != "bench"] if RESULTS.is_dir() else []
    return [run for grid_dir in grids for run in sorted(p for p in grid_dir.iterdir() if p.is_dir())]


SHARDED = [run for run in _run_folders() if (run / SHARDS_DIR).is_dir()]
#: the files of a committed audit (``invarirank audit --out``: :mod:`invarirank.audit._run_folder`); an audit of a
#: served reranker also keeps its journal (every request and answer: tests/book/test_audit_chapter.py checks it)
AUDIT_FILES = sorted(("observations.jsonl", "metrics.json", "manifest.json", "run.json"))
SERVED_AUDIT_FILES = sorted((*AUDIT_FILES, "journal.jsonl"))


def _is_audit(run: Path) -> bool:
    manifest = run / "manifest.json"
    return manifest.is_file() and json.loads(manifest.read_text(encoding="utf-8")).get("kind") == "audit"


AUDITS = [run for run in _run_folders() if _is_audit(run)]


def test_results_folders_hold_only_finished_runs_or_committed_shards():
    for run in _run_folders():
        names = sorted(f.name for f in run.iterdir())
        if _is_audit(run):
            assert names in (AUDIT_FILES, SERVED_AUDIT_FILES), run
            continue
        assert names in (sorted(RESULT_FILES), sorted((*RESULT_FILES, *OPTIONAL_RESULT_FILES)), [SHARDS_DIR]), run


@pytest.mark.parametrize("run", AUDITS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_audits_are_whole(run: Path):
    """A committed audit: its observations are those the manifest hashes and counts, and its metrics are
    ``evaluate`` of them with the settings the audit writes (cut-offs 1, 5, 10; top-5 exposure; its seed)."""
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    raw = (run / "observations.jsonl").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == manifest["files"]["observations_sha256"]
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    assert len(rows) == manifest["rows"] and len({r["query_id"] for r in rows}) == manifest["queries"]["count"]
    assert {r["design"] for r in rows} == {manifest["design"]["name"]}
    again = evaluate(run / "observations.jsonl", ks=(1, 5, 10), exposure_k=5, n_bootstrap=1000, seed=manifest["seed"])
    assert json.loads(json.dumps(again)) == json.loads((run / "metrics.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("run", SHARDED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_shards_are_whole_and_of_one_run(run: Path):
    """A run still being computed commits its finished shards: each is whole (its files, the records
    of exactly its queries, an id made of its index and its query ids), all of one configuration (one
    fingerprint but for the queries' hashes), of a run that a committed grid file names, and no query is in two
    shards; beside them, the parts of a STELLA_LW calibration still being computed are each well formed, named
    by their query and K, and keyed by their head."""
    entries = sorted((run / SHARDS_DIR).iterdir())
    folders = [p for p in entries if p.is_dir() and p.name != CALIBRATION_PARTS_DIR]
    parts = run / SHARDS_DIR / CALIBRATION_PARTS_DIR
    assert folders or parts.is_dir(), run
    assert all(sorted(f.name for f in shard.iterdir()) == sorted(SHARD_FILES) for shard in folders), run
    # beside them only STELLA_LW's calibrations, of a run with STELLA_LW, one K × K record per K
    assert [p.name for p in entries if not p.is_dir()] in ([], [CALIBRATIONS_FILE]), run
    if (run / SHARDS_DIR / CALIBRATIONS_FILE).is_file():
        assert "stella" in load_grid(ROOT / "configs" / f"grid-{run.parent.name}.yaml").run(run.name).methods
        recorded = json.loads((run / SHARDS_DIR / CALIBRATIONS_FILE).read_text(encoding="utf-8"))["calibrations"]
        for k, entry in recorded.items():
            assert int(k) == entry["k"] and len(entry["counts"]) == entry["k"], (run, k)
            assert all(len(row) == entry["k"] and min(row) >= 1 for row in entry["counts"]), (run, k)
            assert entry["identity"] and len(entry["probes_sha256"]) == 64 and entry["query_ids"], (run, k)
    if parts.is_dir():
        assert "stella" in load_grid(ROOT / "configs" / f"grid-{run.parent.name}.yaml").run(run.name).methods
        for k_dir in sorted(parts.iterdir()):
            assert k_dir.is_dir() and k_dir.name[:1] == "k" and k_dir.name[1:].isdigit(), k_dir
            for f in sorted(k_dir.iterdir()):
                record = json.loads(f.read_text(encoding="utf-8"))
                k = record["k"]
                assert k == int(k_dir.name[1:]) and f.name == calibration_part_name(record["query_id"]), f
                assert record["key"] == part_key({name: record[name] for name in HEAD_FIELDS}), f
                assert record["relevant"] and record["identity"] and len(record["probe_sha256"]) == 64, f
                assert len(record["top1"]) == record["passes"] == len(record["relevant"]) * k * record["repeats"], f
                assert all(0 <= j < k for j in record["top1"]), f
    grid = load_grid(ROOT / "configs" / f"grid-{run.parent.name}.yaml")
    assert run.name in {c.run_name for c in grid.runs}
    configurations, seen = set(), []
    for shard in folders:
        head = json.loads((shard / "shard.json").read_text(encoding="utf-8"))
        records = [json.loads(line) for line in (shard / "records.jsonl").read_text(encoding="utf-8").splitlines()]
        assert head["run"] == run.name and head["id"] == shard.name
        assert [r["query_id"] for r in records] == head["query_ids"]
        assert Shard(int(shard.name.split("-")[0]), tuple(head["query_ids"])).id == shard.name
        # the resume's rule: shards may differ only in the hashes of the queries (another CPU's first-stage
        # scores), which a resume then checks by content (tests/store/test_committed_shards.py)
        configurations.add(json.dumps({k: v for k, v in head["parts"].items() if k not in QUERY_PARTS}, sort_keys=True))
        seen += head["query_ids"]
    assert len(configurations) == (1 if folders else 0) and len(seen) == len(set(seen))


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_metrics_equal_evaluate_on_committed_observations(run: Path):
    stored = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    st = stored["settings"]
    first_stage = run / "first_stage.jsonl.gz"
    again = evaluate(
        run / "observations.jsonl.gz",
        ks=st["ks"],
        exposure_k=st["exposure_k"],
        buckets=st["buckets"],
        exact_kemeny_max_k=st["exact_kemeny_max_k"],
        n_bootstrap=st["bootstrap"],
        seed=st["seed"],
        reference_replicates=st["reference_replicates"],
        first_stage=first_stage if first_stage.is_file() else None,
    )
    assert json.loads(json.dumps(again)) == stored


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_manifest_describes_the_committed_run(run: Path):
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["complete"] is True
    spec = manifest["grid_run"]
    assert spec["grid"] == run.parent.name and spec["run_name"] == run.name
    with gzip.open(run / "observations.jsonl.gz", "rb") as fh:
        raw = fh.read()
    assert hashlib.sha256(raw).hexdigest() == manifest["files"]["observations_sha256"]
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    assert {r["method"] for r in rows} == set(spec["methods"])
    assert {len(r["input"]) for r in rows} == {spec["K"]}
    per_query = {}
    for r in rows:
        per_query.setdefault((r["query_id"], r["method"]), 0)
        per_query[(r["query_id"], r["method"])] += 1
    assert set(per_query.values()) == {spec["M"]}
    assert len({q for q, _ in per_query}) == manifest["queries"]["count"]


def test_every_run_of_the_default_grid_and_the_lab_is_committed():
    grid = load_grid(ROOT / "configs" / "grid-default.yaml")
    missing = [
        s.run_name for s in [*grid.runs, *lab_runs(grid.lab)] if run_status(s, run_folder(s, RESULTS)) != "complete"
    ]
    assert not missing, f"not committed under results/ (run `make grid`): {missing}"


@pytest.mark.parametrize("grid_file", ["grid-default.yaml", "grid-evidence.yaml"])
def test_a_k_sweep_reranks_the_same_users(grid_file):
    """Runs of one grid that sample as many queries at the same K rerank the same users (committed runs only)."""
    grid = load_grid(ROOT / "configs" / grid_file)
    ids: dict[tuple, dict[str, tuple]] = {}
    for spec in grid.runs:
        if run_status(spec, run_folder(spec, RESULTS)) == "complete":
            manifest = json.loads((RESULTS / spec.grid / spec.run_name / "manifest.json").read_text())
            group = ids.setdefault((spec.n_queries, spec.sample_k, spec.dataset), {})
            group[spec.run_name] = tuple(manifest["queries"]["ids"])
    for group in ids.values():
        assert len(set(group.values())) <= 1, group


def test_run_page_titles_use_display_names_and_label_smoke_runs():
    """The sidebar's run titles: display names (never ids such as ``ml-100k``), one title per run of the book's
    grids together (the evidence and paper-cpu grids both have a K = 15 run; their queries differ), and
    "Smoke run" exactly on the runs too small to resolve a claim (the default grid's 5 queries; not the evidence
    grid's 40 or 20)."""
    from invarirank.compendium._titles import run_page_title as page_title

    every: list[str] = []
    for name, smoke in (("default", True), ("evidence", False), ("paper-cpu", False)):
        titles = [page_title(c) for c in load_grid(ROOT / "configs" / f"grid-{name}.yaml").runs]
        every += titles
        assert all(t.startswith("Smoke run: ") == smoke for t in titles), titles
        assert all("MovieLens-100K" in t and "ml-100k" not in t and "smollm2-135m" not in t for t in titles), titles
    assert len(set(every)) == len(every), every
    assert "SmolLM2-135M at K = 15, span scorer (MovieLens-100K, 40 queries kept at K = 5, M = 20)" in every
    # a run of the first 20 of the 40 sampled users says so: its page is not a 40-query page
    assert (
        "Qwen2.5-Coder-0.5B at K = 25, choice scorer (MovieLens-100K, the first 20 of 40 queries kept at K = 15, "
        "M = 20)" in every
    )
    from invarirank.compendium._labels import dataset_label
    from invarirank.grid._book_build import data_page_title

    assert (
        data_page_title(dataset_label("ml-100k"), [25, 5, 15, 10])
        == "MovieLens-100K at K = 5, 10, 15, 25: counts and the first stage's coverage"
    )
