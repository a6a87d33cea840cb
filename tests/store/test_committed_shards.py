"""The shards committed under ``results/*/*/shards/`` stay resumable: the run fingerprint no longer holds the
package version (a release changes no fingerprint), yet equals the one the committed shards were written with;
``invarirank grid configs/grid-<grid>.yaml --dry-run`` counts the committed queries; a resumed run accepts the
committed shards of every run still being computed (``results/<grid>/<run>/shards/``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import invarirank
from invarirank._io import read_json
from invarirank.cli import main
from invarirank.grid import load_grid
from invarirank.runner._manifest import sha256_json
from invarirank.runner._provenance import QUERY_PARTS
from invarirank.runner._shards import RECORD_VERSION, ShardFolders, run_fingerprint
from invarirank.store import CALIBRATION_PARTS_DIR
from tests.support import ROOT  # noqa: E402


def test_the_fingerprint_holds_no_package_version_and_keeps_its_old_value(monkeypatch):
    identity, key = {"K": 10, "scorer": "span"}, {"model": "m", "scorer_version": 3, "template_version": 2}
    before = run_fingerprint(identity, key, "q" * 64, "v" * 64)
    monkeypatch.setattr(invarirank, "__version__", "9.9.9")  # a release
    assert run_fingerprint(identity, key, "q" * 64, "v" * 64) == before
    # the formula the committed shards were written with (package version 0.1.0 in it)
    old = {
        "config": identity,
        "identity": key,
        "queries": "q" * 64,
        "validation": "v" * 64,
        "invarirank": "0.1.0",
        "checkpoint": 1,
    }
    assert before[0] == sha256_json(old) and before[1]["invarirank"] == "0.1.0" and RECORD_VERSION == 1
    # what changes results changes it: the scorer's or the template's version, the settings, the record format
    assert run_fingerprint(identity, {**key, "template_version": 3}, "q" * 64, "v" * 64)[0] != before[0]
    assert run_fingerprint({**identity, "K": 5}, key, "q" * 64, "v" * 64)[0] != before[0]


def _shard_folders(shards: Path) -> list[Path]:
    """The shard folders of a committed ``shards/`` (not its calibration parts)."""
    return [s for s in shards.iterdir() if s.is_dir() and s.name != CALIBRATION_PARTS_DIR]


#: every run with committed shards (a run still being computed), as (grid, run)
SHARDED = sorted(
    (p.parent.parent.name, p.parent.name) for p in (ROOT / "results").glob("*/*/shards") if _shard_folders(p)
)


def _committed(grid: str, run: str) -> int:
    return sum(
        len(read_json(s / "shard.json")["query_ids"]) for s in _shard_folders(ROOT / "results" / grid / run / "shards")
    )


@pytest.mark.committed
@pytest.mark.parametrize("grid", ["evidence", "paper-cpu"])
def test_the_dry_run_counts_the_committed_shards(grid, capsys):
    """Every run of the grid is complete, or missing with the queries its committed shards hold counted — all of
    them once every shard is committed and only the merge is left (the next grid run computes no pass for it)."""
    assert main(["grid", str(ROOT / "configs" / f"grid-{grid}.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if re.match(r"^\S+\s+(complete|missing|incomplete)", line)]
    rows = {line.split()[0]: line for line in lines}
    spec = load_grid(ROOT / "configs" / f"grid-{grid}.yaml")
    assert rows and set(rows) == {c.run_name for c in spec.runs}
    nothing_to_compute = []  # the runs complete, or with every query in committed shards (only the merge left)
    for run, line in rows.items():
        if (grid, run) in SHARDED:
            committed = _committed(grid, run)
            n = spec.run(run).planned_queries
            assert 0 < committed <= n
            assert re.match(rf"^{run}\s+missing\s+{n}\s+{committed}\s+", line), line
            nothing_to_compute.append(committed == n)
        elif (ROOT / "results" / grid / run / "manifest.json").is_file():
            assert line.split()[1] == "complete", line
            nothing_to_compute.append(True)
        else:
            assert line.split()[1] == "missing", line
            nothing_to_compute.append(False)
    if all(nothing_to_compute):
        assert "passes still to compute: 0-0 " in out, out


@pytest.mark.committed
@pytest.mark.slow
@pytest.mark.parametrize("grid,run", SHARDED, ids=[f"{g}/{r}" for g, r in SHARDED])
def test_a_resumed_run_accepts_the_committed_shards(grid, run, tmp_path):
    """The fingerprint a resumed run computes now (settings, queries, the scorer's key identity from a loaded
    model) is made of the committed shards' parts — the run would compute only the other queries — and a shard it
    writes holds the same ``parts`` as theirs (byte-compatible).

    The queries' part hashes the candidates file, first-stage scores included; a machine whose LightGCN training
    gives other floating-point scores (the same candidates) has another one. Such shards are then accepted by
    content: every row's presented order and ground truth is checked against this machine's queries
    (:func:`invarirank.runner._provenance.rows_reproduce`), and a doctored row is refused."""
    pytest.importorskip("torch")
    from invarirank.candidates import queries_sha256
    from invarirank.grid import run_folder
    from invarirank.runner import LocalExecutor, load_queries
    from invarirank.store import committed_shards, import_shards

    config = load_grid(ROOT / "configs" / f"grid-{grid}.yaml").run(run)
    target = run_folder(config, ROOT / "results")
    shards = committed_shards(target)
    assert len(shards) >= 1
    config = config.with_absolute_paths(ROOT)
    qs = load_queries(config, progress=False)  # the data and first stage, from their caches
    with LocalExecutor() as ex:
        key_identity = ex.describe(config)["key_identity"]
    validation = queries_sha256(qs.validation) if "stella" in config.methods else None  # as the runner hashes
    fingerprint, parts = run_fingerprint(config.identity(), key_identity, queries_sha256(qs.test), validation)
    heads = [read_json(shard / "shard.json") for shard in shards]
    for head in heads:  # what the change of the fingerprint is about
        assert {k: head["parts"][k] for k in ("settings", "scorer", "invarirank", "checkpoint")} == {
            k: parts[k] for k in ("settings", "scorer", "invarirank", "checkpoint")
        }
        assert set(head["query_ids"]) < {q.query_id for q in qs.test}
    from invarirank.errors import InvariRankError
    from invarirank.runner._provenance import rows_reproduce

    by_id = {q.query_id: q for q in qs.test}

    def reproduces(rows):
        return rows_reproduce(rows, by_id, M=config.M, seed=config.seed, noise_floor=config.noise_floor)

    assert import_shards(target, tmp_path) == [s.name for s in shards]
    folders = ShardFolders(tmp_path, run, fingerprint, parts, reproduces=reproduces)
    done, _ = folders.finished()
    assert len(done) == sum(len(head["query_ids"]) for head in heads)
    # shards written on this kind of CPU match the fingerprint; the others (another CPU's first-stage scores, so
    # other query hashes) are accepted by content — committed shards may be of both kinds
    same = [all(head["parts"][k] == parts[k] for k in QUERY_PARTS) for head in heads]
    assert all(head["fingerprint"] == fingerprint and head["parts"] == parts for head, here in zip(heads, same) if here)
    assert folders.accepted_by_content == [s.name for s, here in zip(shards, same) if not here]
    if not all(same):  # a doctored row of such a shard is refused
        other = shards[same.index(False)].name
        records = tmp_path / ".work" / "shards" / other / "records.jsonl"
        lines = records.read_text(encoding="utf-8").splitlines()
        lines[0] = lines[0].replace('"permutation": 0, "input": ["', '"permutation": 0, "input": ["x', 1)
        records.write_text("\n".join(lines) + "\n", encoding="utf-8")
        with pytest.raises(InvariRankError, match="a shard of other queries"):
            ShardFolders(tmp_path, run, fingerprint, parts, reproduces=reproduces).finished()
