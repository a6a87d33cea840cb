"""Hostile grid files for ``invarirank grid`` (issue 14, family 6 and 7): a grid that would do nothing, or that a
real run would reject, is rejected by ``--dry-run`` too — exit 2, one line naming the file and field, no
traceback, the results folder left as it was (see tests/support/hostile.py)."""

from __future__ import annotations

import pytest

from tests.support.hostile import expect_rejected

pytestmark = pytest.mark.usefixtures("private_cache")

RUN = "{dataset: synthetic, scorer: simulated, model: simulated, retriever: none, M: 2, n_queries: 2, K: 6}"

# (id, grid file bytes, fragments)
CASES = [
    ("runs-empty", b"grid: g\nruns: []\n", ["field 'runs' is empty or missing"]),
    ("runs-missing", b"grid: g\n", ["field 'runs' is empty or missing"]),
    (
        "k-empty-list",
        b"grid: g\nruns:\n  - {dataset: synthetic, scorer: simulated, K: []}\n",
        ["runs[0]: field 'K' is an empty list"],
    ),
    (
        "unset-variable",
        b"grid: g\nruns:\n  - {raw_dir: '${INVARIRANK_HOSTILE_UNSET}/ml', K: 10}\n",
        ["setting 'raw_dir'", "environment variable INVARIRANK_HOSTILE_UNSET, which is not set"],
    ),
    (
        "unset-variable-candidates",
        b"grid: g\nruns:\n  - {candidates: $INVARIRANK_HOSTILE_UNSET/c.jsonl, K: 6}\n",
        ["setting 'candidates'", "INVARIRANK_HOSTILE_UNSET"],
    ),
    (
        "lab-shapes-string",
        f"grid: g\nruns:\n  - {RUN}\nlab: {{shapes: primacy}}\n".encode(),
        ["lab: field 'shapes' = 'primacy'", "non-empty list"],
    ),
    (
        "lab-strengths-text",
        f"grid: g\nruns:\n  - {RUN}\nlab: {{strengths: [a]}}\n".encode(),
        ["lab: field 'strengths'", "finite numbers"],
    ),
    (
        "lab-strengths-empty",
        f"grid: g\nruns:\n  - {RUN}\nlab: {{strengths: []}}\n".encode(),
        ["lab: field 'strengths' = []"],
    ),
    (
        "lab-unknown-shape",
        f"grid: g\nruns:\n  - {RUN}\nlab: {{shapes: [sideways]}}\n".encode(),
        ["lab:", "option 'bias_shape' = 'sideways'"],
    ),
    ("lab-not-mapping", f"grid: g\nruns:\n  - {RUN}\nlab: [1]\n".encode(), ["lab: must be a mapping"]),
    ("lab-bad-setting", f"grid: g\nruns:\n  - {RUN}\nlab: {{M: 0}}\n".encode(), ["lab:", "'M' ('m') = 0"]),
    ("not-utf8", b"grid: g\n# \xff\nruns: []\n", ["g.yaml:2: not UTF-8"]),
    (  # issue 39 F4: every K of the list would be a run of that name ("duplicate run 's'" blamed the user's name)
        "k-list-one-name",
        b"grid: g\nruns:\n  - {dataset: synthetic, scorer: simulated, K: [6, 8], name: s}\n",
        ["runs[0]: field 'name' = 's'", "'K' = [6, 8]"],
    ),
    (
        "trust-remote-code",
        b"grid: g\ndefaults: {scorer_options: {trust_remote_code: true}}\nruns:\n  - {K: 10}\n",
        ["'trust_remote_code' cannot be set", "--trust-remote-code"],
    ),
    ("batch-size-0", b"grid: g\nruns:\n  - {K: 10, scorer_options: {batch_size: 0}}\n", ["'batch_size' = 0"]),
    ("k-1", b"grid: g\nruns:\n  - {K: 1}\n", ["runs[0]", "'K' ('k') = 1"]),
    ("exposure-k-above-k", b"grid: g\nruns:\n  - {K: 4, exposure_k: 5}\n", ["'exposure_k' = 5 is larger than K = 4"]),
    ("sweep-above-k", b"grid: g\nruns:\n  - {K: 10, k_sweep: [15, 25]}\n", ["sample_k = 15", "K = 10"]),
    ("malformed", b"grid: g\nruns: [\n", ["not valid YAML"]),
    ("unknown-field", b"grid: g\nrunz: []\n", ["unknown top-level field 'runz'"]),
    ("bad-name", b"grid: 'a b'\nruns:\n  - {K: 10}\n", ["field 'grid' must be a simple name"]),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
@pytest.mark.parametrize("name,text,needles", CASES, ids=[c[0] for c in CASES])
def test_bad_grid(name, text, needles, dry, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("INVARIRANK_HOSTILE_UNSET", raising=False)
    grid = tmp_path / "g.yaml"
    grid.write_bytes(text)
    results = tmp_path / "results"
    argv = [
        "grid",
        grid,
        "--results-dir",
        results,
        "--work-dir",
        tmp_path / "work",
        *(["--dry-run"] if dry else []),
    ]
    expect_rejected(capsys, argv, needles, results)
    assert not (tmp_path / "work").exists()


def test_missing_grid_file(tmp_path, capsys):
    expect_rejected(capsys, ["grid", tmp_path / "nope.yaml", "--dry-run"], ["nope.yaml: grid file not found"])
