"""The protocol chapter's number-format measurements (:mod:`invarirank.compendium._precision`): the files are read
in measuring order, the table says whether each criterion holds from the file's own numbers, and the committed
measurement files carry what the page reads."""

from __future__ import annotations

import copy
import json

import pytest

from invarirank.compendium._precision import (
    consistency_table,
    precision_measurements,
    precision_summary,
    precision_table,
)
from tests.support import ROOT

RULE = ("speedup >= 1.5", "mean tau >= 0.95", "PPI and LOC within 0.02", "verdicts the same", "CPU supports bf16")


def _measurement(**changes):
    c = {"ppi": 0.5, "gpi": 0.3, "loc": 0.4}
    m = {
        "run": "results/paper-cpu/qwen25-choice-k25",
        "model": "qwen2.5-coder-0.5b",
        "scorer": "choice",
        "date": "2026-12-05 15:31 UTC",
        "queries": 2,
        "M": 20,
        "K": 25,
        "cpu": {"model_name": "Some CPU", "bf16_flags": ["amx_bf16", "avx512_bf16"]},
        "passes": {"float32": 160, "bfloat16": 160},
        "seconds_per_pass": {"float32": 2.0, "bfloat16": 0.5},
        "speedup_bf16": 4.0,
        "tau": {"mean": 0.98, "min": 0.94, "orders": 80},
        "identical_rankings": 0.25,
        "consistency": {
            "zero_shot": {
                "float32": dict(c),
                "bfloat16": {"ppi": 0.51, "gpi": 0.35, "loc": 0.395},
                "difference": {"ppi": 0.01, "gpi": 0.05, "loc": -0.005},
            }
        },
        "verdicts": {"float32": {"hr@5:a-b": "a > b, n.s."}, "bfloat16": {"hr@5:a-b": "a > b, n.s."}},
        "rule": dict.fromkeys(RULE, True),
    }
    m.update(changes)
    return m


def test_files_are_read_oldest_first_undated_ones_before(tmp_path):
    for name, date in (
        ("precision_cpu-b.json", "2026-12-05 10:00 UTC"),
        ("precision_cpu-a.json", "2026-12-06 09:00 UTC"),
    ):
        (tmp_path / name).write_text(json.dumps(_measurement(date=date)))
    (tmp_path / "precision_cpu.json").write_text(json.dumps(_measurement(date=None)))
    (tmp_path / "other.json").write_text("{}")
    assert [m["file"] for m in precision_measurements(tmp_path)] == [
        "precision_cpu.json",
        "precision_cpu-b.json",
        "precision_cpu-a.json",
    ]


def test_the_table_reads_each_criterion_from_the_file():
    good = _measurement()
    slow = _measurement(rule=dict.fromkeys(RULE, True) | {"speedup >= 1.5": False}, speedup_bf16=0.14)
    differ = copy.deepcopy(good)
    differ["verdicts"]["bfloat16"]["hr@5:a-b"] = "a < b, n.s."
    table = precision_table([good, slow, differ])
    assert list(table["rule met"]) == ["yes", "no", "yes"]  # the file's rule decides, not a recomputation
    assert list(table["verdicts the same"]) == ["yes", "yes", "no"]
    assert list(table["bfloat16 speed-up"]) == ["4.00×", "0.14×", "4.00×"]
    # GPI moved by 0.05 but is not bounded by the rule: the largest change is PPI's 0.01
    assert table["largest PPI/LOC change"].iloc[0] == pytest.approx(0.01)
    assert list(table["measurement"]) == [f"{i}. Qwen2.5-Coder-0.5B choice" for i in (1, 2, 3)]
    assert table["bf16 instructions"].iloc[0] == "amx_bf16, avx512_bf16"
    assert table["run (K)"].iloc[0] == "qwen25-choice-k25 (25)"
    # pandas cuts an HTML cell after 50 characters: no cell may be that long
    assert table.map(lambda v: len(str(v))).max().max() <= 50


def test_the_summary_names_what_fails():
    fails = _measurement(cpu={"model_name": "AMD EPYC", "bf16_flags": []}, model="smollm2-135m", scorer="span")
    fails["rule"]["CPU supports bf16"] = False
    text = precision_summary([_measurement(), fails])
    assert "1. Qwen2.5-Coder-0.5B (choice) on Some CPU, 2026-12-05: **met**. 25% of the rankings" in text
    assert "2. SmolLM2-135M (span) on AMD EPYC, 2026-12-05: **not met** (CPU supports bf16 fail)." in text
    assert "identical" not in precision_summary([_measurement(identical_rankings=0.5)])
    assert "extremes" not in text  # PPI 0.5, LOC 0.4: not saturated
    saturated = _measurement()
    saturated["consistency"]["zero_shot"]["float32"].update(ppi=0.99, loc=0.01)
    assert "PPI (0.99) and LOC (0.01) sit near their extremes" in precision_summary([saturated])
    assert precision_summary([]) == "No measurement is committed."


def test_the_committed_measurements_render():
    """Every committed measurement has what the page reads, and a float32 side that gave back the committed run."""
    measurements = precision_measurements(ROOT / "book" / "data")
    assert measurements, "no book/data/precision_cpu*.json"
    table = precision_table(measurements)
    assert len(table) == len(measurements)
    assert table.map(lambda v: len(str(v))).max().max() <= 50
    assert len(consistency_table(measurements)) == sum(2 * len(m["consistency"]) for m in measurements)
    for m in measurements:
        assert set(m["rule"]) == set(RULE), m["file"]
        assert m.get("model") and m.get("scorer"), m["file"]
        assert m["float32_vs_committed_max_abs_score_difference"] < 1e-3, m["file"]
