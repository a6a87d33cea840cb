"""STELLA_LW's calibration in parts (one per probing query) on the local executor, with the simulated scorer: the
parts summed equal the one-piece calibration; a run killed mid-calibration resumes from its journal
(``.work/calibration-parts/``) computing only the missing parts, with the bytes of an uninterrupted run; a part of
another calibration is refused with one line, one of a query that is not probed is not counted; a full disk while
a part is written is one line and resumable; the cost line leaves journaled parts out."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from invarirank._io import read_json
from invarirank.cli import main as cli_main
from invarirank.errors import InvariRankError
from invarirank.llm import make_scorer
from invarirank.methods._calibration_parts import HEAD_FIELDS, compute_part, part_key, plan_calibration
from invarirank.methods._stella_calibration import calibration_counts, load_or_calibrate
from invarirank.methods.registry import calibrated_method
from invarirank.runner import LocalExecutor, load_queries, run_experiment
from invarirank.store import RunFolder, calibration_part_files
from tests.support.hostile import full_disk
from tests.support.runner import CountingExecutor, Killed, calibration_candidates, kill_after
from tests.support.runner import simulated_config as config

FILES = ("observations.jsonl", "metrics.json", "calibration.json", "manifest.json")
#: the calibrated method, as the runner asks for it
METHOD = calibrated_method(["zero_shot", "bootstrapping", "stella", "sgs"])


@pytest.fixture()
def cands(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    return calibration_candidates(tmp_path)


def _config(cands: Path, out: Path, **kw):
    """Five probing queries (1 to 3 relevant candidates each), each run with its own calibration cache."""
    return config(cands, out, calibration_queries=5, cache_dir=str(out) + "-cache", **kw)


def test_parts_summed_in_any_order_equal_the_one_piece_calibration(cands, tmp_path):
    cfg = _config(cands, tmp_path / "r")
    validation = load_queries(cfg, progress=False).validation
    scorer = make_scorer("simulated", seed=cfg.seed)
    identity = dict(scorer.key_identity()) if hasattr(scorer, "key_identity") else dict(scorer.identity())
    settings = dict(n_queries=5, repeats=2, seed=cfg.seed)
    plan = plan_calibration(validation, 6, identity, method=METHOD.name, cache_dir=tmp_path / "c1", **settings)
    assert plan.done is None and len(plan.queries) == 5
    order = list(range(5))
    random.Random(3).shuffle(order)  # any order, as workers finish
    parts = {i: compute_part(scorer, plan.queries[i], 6, repeats=2, seed=cfg.seed) for i in order}
    whole = load_or_calibrate(scorer, validation, 6, cache_dir=tmp_path / "c2", **settings)
    summed = plan.finish(parts)
    assert np.array_equal(summed.counts, calibration_counts(scorer, plan.queries, 6, 2, cfg.seed))
    assert summed.counts.dtype == np.int64 and summed.counts.sum() == 36 + plan.passes
    assert json.dumps(summed.to_record()) == json.dumps(whole.to_record())
    # the cache it writes is the one-piece calibration's: a later run takes it
    assert plan_calibration(validation, 6, identity, method=METHOD.name, cache_dir=tmp_path / "c1", **settings).done
    # a part's record: its head keyed, its probes' top-1 positions
    record = plan.record(0, parts[0])
    assert record["key"] == part_key({f: record[f] for f in HEAD_FIELDS}) and record["passes"] == len(parts[0])
    assert plan.match(record) == (0, [])
    assert plan.match({**record, "query_id": "not-probed"}) == (None, [])
    assert plan.match({**record, "seed": 99, "repeats": 1})[1] == ["repeats", "seed"]
    assert plan.match({**record, "top1": record["top1"][:-1]}) == (0, ["top1"])
    assert plan.match({**record, "top1": [6] * len(parts[0])}) == (0, ["top1"])


def test_a_run_killed_mid_calibration_resumes_from_its_journal(cands, tmp_path):
    whole = run_experiment(_config(cands, tmp_path / "whole"), progress=False).path
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run_experiment(_config(cands, out), progress=False, on_calibration_part=kill_after(2))
    journal = calibration_part_files(RunFolder(out).calibration_parts)
    assert list(journal) == [6] and len(journal[6]) == 2
    assert not (out / "calibration.json").exists() and not RunFolder(out).shards.exists()
    first = {read_json(f)["query_id"] for f in journal[6]}
    ex = CountingExecutor()
    run_experiment(_config(cands, out), progress=False, executor=ex)
    assert len(ex.parts) == 3 and not first & set(ex.parts)  # only the missing parts
    for name in FILES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    facts = read_json(out / "run.json")["calibration_parts"]["6"]
    assert (facts["parts"], facts["journaled"], facts["computed"]) == (5, 2, 3) and len(facts["workers"]) == 1
    assert not (out / ".work").exists()


def _killed_with_parts(cands: Path, out: Path, n: int = 2) -> list[Path]:
    with pytest.raises(Killed):
        run_experiment(_config(cands, out), progress=False, on_calibration_part=kill_after(n))
    return calibration_part_files(RunFolder(out).calibration_parts)[6]


def test_a_part_of_another_calibration_is_refused_with_one_line(cands, tmp_path, capsys):
    out = tmp_path / "run"
    part = _killed_with_parts(cands, out)[0]
    good = part.read_bytes()
    record = json.loads(good)
    for change, named in (
        ({"seed": 8}, "seed"),
        ({"identity": {**record["identity"], "bias": "other"}}, "identity"),
        ({"relevant": ["x"], "probe_sha256": "0" * 64}, "relevant, probe_sha256"),
    ):
        part.write_text(json.dumps({**record, **change}), encoding="utf-8")
        with pytest.raises(InvariRankError, match=rf"a calibration part of another run \(differs in: {named}\)"):
            run_experiment(_config(cands, out), progress=False)
    part.write_text(json.dumps({**record, "top1": [0]}), encoding="utf-8")
    with pytest.raises(InvariRankError, match=r"a malformed calibration part \(differs in: top1\)"):
        run_experiment(_config(cands, out), progress=False)
    part.write_text("{not json", encoding="utf-8")
    argv = ["rerank", "--config", str(tmp_path / "run.yaml"), "--no-progress"]
    (tmp_path / "run.yaml").write_text(json.dumps(_config(cands, out).to_dict()), encoding="utf-8")
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(part) in err[0] and "unreadable calibration part" in err[0], err
    # nothing was computed or rewritten: the refused part is still there, the journal otherwise as it was
    assert part.read_text(encoding="utf-8") == "{not json" and not (out / "calibration.json").exists()
    part.write_bytes(good)
    # a part of a query that is not probed (another sample) is left alone and not counted
    stray = part.parent / "elsewhere.json"
    stray.write_text(json.dumps({**record, "query_id": "v-not-probed"}), encoding="utf-8")
    ex = CountingExecutor()
    run_experiment(_config(cands, out), progress=False, executor=ex)
    assert len(ex.parts) == 3
    whole = run_experiment(_config(cands, tmp_path / "whole"), progress=False).path
    for name in FILES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


def test_a_full_disk_while_a_part_is_written_is_one_line_and_resumable(cands, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    (tmp_path / "run.yaml").write_text(json.dumps(_config(cands, out).to_dict()), encoding="utf-8")
    argv = ["rerank", "--config", str(tmp_path / "run.yaml"), "--no-progress"]
    with monkeypatch.context() as mp:
        full_disk(mp, lambda p: p.parent.parent.name == "calibration-parts", nth=3)
        assert cli_main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("invarirank:")]
    assert len(err) == 1 and "no space left" in err[0].lower() and "calibration-parts" in err[0], err
    assert len(calibration_part_files(RunFolder(out).calibration_parts)[6]) == 2
    assert [p for p in RunFolder(out).calibration_parts.rglob(".*")] == []  # no temporary file left
    assert cli_main(argv) == 0
    whole = run_experiment(_config(cands, tmp_path / "whole"), progress=False).path
    for name in FILES:
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


def test_the_cost_line_leaves_journaled_parts_out(cands, tmp_path):
    from invarirank.runner._calibration import journal_parts
    from invarirank.runner._passes import calibration_need

    out = tmp_path / "run"
    _killed_with_parts(cands, out, 3)
    cfg = _config(cands, out)
    validation = load_queries(cfg, progress=False).validation
    identity = LocalExecutor().describe(cfg)["key_identity"]
    passes, cached, probes = calibration_need(cfg, validation, [6], identity)
    assert (passes, cached, probes) == (120, {6: False}, 5)
    journal = {6: [record for _, record in journal_parts(out, 6)]}
    left, _, probes_left = calibration_need(cfg, validation, [6], identity, parts=journal)
    assert probes_left == 2 and 0 < left < passes
    assert left == passes - sum(r["passes"] for r in journal[6])
