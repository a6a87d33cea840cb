"""``invarirank evaluate``: every validation error names FILE:LINE and exits 2; output; start-up imports."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from invarirank.cli import main
from tests.support import ROOT


def row(q="q", m="m", t=0, inp=("a", "b", "c"), out=None, rel=("a",), **extra):
    d = {
        "query_id": q,
        "method": m,
        "permutation": t,
        "input": list(inp),
        "output": list(inp if out is None else out),
        "relevant": list(rel),
    }
    d.update(extra)
    return json.dumps(d)


def run_cli(tmp_path, lines, *args, name="obs.jsonl"):
    path = tmp_path / name
    text = "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return main(["evaluate", str(path), "--bootstrap", "20", *args]), path


GOOD = [row(t=0), row(t=1, inp="cba", out="cba")]

CASES = {
    "malformed JSON": ([GOOD[0], '{"query_id": "q", "method": '], 2, "malformed JSON"),
    "not an object": ([GOOD[0], "[1, 2]"], 2, "expected a JSON object"),
    "trailing data": ([GOOD[0] + " x"], 1, "malformed JSON: Extra data"),
    "two objects on a line": ([GOOD[0] + GOOD[1]], 1, "malformed JSON"),
    "missing output": (
        [GOOD[0], json.dumps({k: v for k, v in json.loads(GOOD[1]).items() if k != "output"})],
        2,
        "missing field 'output'",
    ),
    "missing query_id": (
        [json.dumps({k: v for k, v in json.loads(GOOD[0]).items() if k != "query_id"})],
        1,
        "missing field 'query_id'",
    ),
    "output misses an id": ([GOOD[0], row(t=1, out="ab")], 2, "not a permutation"),
    "output has a foreign id": ([GOOD[0], row(t=1, out="abd")], 2, "not in input: 'd'"),
    "output repeats an id": ([GOOD[0], row(t=1, out="aab")], 2, "not a permutation"),
    "input repeats an id": ([row(inp="aab", out="aab")], 1, "repeats item id"),
    "inputs of a query differ": ([GOOD[0], row(t=1, inp="abd")], 2, "different set of candidates than on line 1"),
    "repeated permutation": ([GOOD[0], GOOD[1], row(t=1)], 3, "repeated (query_id, method, permutation)"),
    "relevant differs": ([GOOD[0], row(t=1, rel=("b",))], 2, "'relevant' of query 'q' differs from line 1"),
    "relevant differs across methods": ([GOOD[0], row(m="other", rel=("a", "b"))], 2, "differs from line 1"),
    "empty input": ([GOOD[0], row(t=1, inp=(), out=())], 2, "'input' is empty"),
    "empty output": ([GOOD[0], row(t=1, out=())], 2, "'output' is empty"),
    "empty relevant": ([GOOD[0], row(t=1, rel=())], 2, "'relevant' is empty"),
    "float id": ([GOOD[0], json.dumps({**json.loads(GOOD[1]), "relevant": [1.5]})], 2, "must be a string"),
    "null id": ([json.dumps({**json.loads(GOOD[0]), "input": ["a", None, "c"]})], 1, "must be a string"),
    "ids not a list": ([json.dumps({**json.loads(GOOD[0]), "output": "abc"})], 1, "must be a list"),
    "negative permutation": ([row(t=-1)], 1, "'permutation' must be an integer >= 0"),
    "string permutation": ([json.dumps({**json.loads(GOOD[0]), "permutation": "0"})], 1, "'permutation'"),
    "boolean permutation": ([json.dumps({**json.loads(GOOD[0]), "permutation": True})], 1, "'permutation'"),
    "empty method": ([row(m="")], 1, "'method' must be a non-empty string"),
    "query_id a list": ([json.dumps({**json.loads(GOOD[0]), "query_id": ["q"]})], 1, "'query_id' must be a string"),
    "schema version": ([row(schema_version=2)], 1, "schema_version 2"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validation_errors_name_the_line(tmp_path, capsys, case):
    lines, line, message = CASES[case]
    rc, path = run_cli(tmp_path, lines)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"invarirank: error: {path}:{line}: "), err
    assert message in err, err
    assert err.count("\n") == 1  # one line, no traceback
    assert not (tmp_path / "metrics.json").exists()


def test_blank_lines_are_skipped_and_line_numbers_stay_physical(tmp_path, capsys):
    rc, _ = run_cli(tmp_path, ["", GOOD[0], "   ", "", "  \t" + GOOD[1] + "  \r", ""])
    assert rc == 0
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + "\n".join(GOOD).encode() + b"\n")
    assert main(["evaluate", str(bom), "--bootstrap", "0"]) == 0
    rc, path = run_cli(tmp_path, ["", GOOD[0], "  ", row(t=1, out="ab")], name="bad.jsonl")
    assert rc == 2 and f"{path}:4: " in capsys.readouterr().err


def test_gzip_and_parquet_errors_name_the_line(tmp_path, capsys):
    rc, path = run_cli(tmp_path, [GOOD[0], GOOD[1], row(t=2, out="xyz")], name="obs.jsonl.gz")
    assert rc == 2 and f"{path}:3: " in capsys.readouterr().err
    import pandas as pd

    frame = pd.DataFrame([json.loads(GOOD[0]), json.loads(row(t=1, out="ab"))])
    pq = tmp_path / "obs.parquet"
    frame.to_parquet(pq)
    assert main(["evaluate", str(pq), "--bootstrap", "0"]) == 2
    assert f"{pq}:2: " in capsys.readouterr().err


def _one_error_line(capsys) -> str:
    """The single ``invarirank: error: ...`` line on stderr (no traceback, nothing else)."""
    err = capsys.readouterr().err
    assert err.startswith("invarirank: error: ") and err.count("\n") == 1, err
    return err.strip()


def test_empty_missing_and_bad_settings(tmp_path, capsys):
    rc, path = run_cli(tmp_path, ["", "  "])
    assert rc == 2 and f"{path}" in (line := _one_error_line(capsys)) and "no observations" in line
    missing = tmp_path / "nope.jsonl"
    assert main(["evaluate", str(missing)]) == 2
    assert _one_error_line(capsys) == f"invarirank: error: {missing}: observations file not found"
    ok, path = run_cli(tmp_path, GOOD)
    assert ok == 0
    capsys.readouterr()
    assert main(["evaluate", str(path), "--buckets", "0"]) == 2
    assert _one_error_line(capsys) == "invarirank: error: --buckets: expected an integer >= 1, got 0"
    assert main(["evaluate", str(path), "--exact-max-k", "40"]) == 2
    assert _one_error_line(capsys) == (
        "invarirank: error: --exact-max-k: expected an integer from 0 to 16 (or "
        "--no-exact-kemeny to switch the exact search off), got 40"
    )
    assert main(["evaluate", str(path), "--seed", "-1"]) == 2
    assert _one_error_line(capsys) == "invarirank: error: --seed: expected an integer >= 0, got -1"
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", str(path), "--k", "0,5"])
    assert exc.value.code == 2
    assert "argument --k: expected cut-offs >= 1, got '0,5'" in _one_error_line(capsys)
    before = path.read_bytes()
    assert main(["evaluate", str(path), "--output", str(path)]) == 2
    assert _one_error_line(capsys) == f"invarirank: error: --output {path} would overwrite the observations file"
    assert path.read_bytes() == before


def test_integer_ids_are_read_as_strings(tmp_path, capsys):
    lines = [
        json.dumps(
            {
                "query_id": 17,
                "method": "m",
                "permutation": 0,
                "input": [9, 10, "B0"],
                "output": ["10", 9, "B0"],
                "relevant": [10],
            }
        ),
        json.dumps(
            {
                "query_id": "17",
                "method": "m",
                "permutation": 1,
                "input": ["B0", "10", "9"],
                "output": ["B0", "10", "9"],
                "relevant": ["10"],
            }
        ),
    ]
    rc, path = run_cli(tmp_path, lines)
    assert rc == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert list(metrics["methods"]["m"]["per_query"]) == ["17"]
    assert metrics["methods"]["m"]["overall"]["hr@1"] == 0.5


def test_output_file_table_and_stdout_json(tmp_path, capsys):
    lines = [row(t=0), row(t=1, inp="cba", out="cba"), row(m="const", t=0), row(m="const", t=1, inp="cba", out="abc")]
    out = tmp_path / "sub" / "metrics.json"
    rc, path = run_cli(tmp_path, lines, "--k", "1,2", "--exposure-k", "1", "--output", str(out), "--no-exact-kemeny")
    captured = capsys.readouterr()
    assert rc == 0 and "m: 1 queries, 2 rows" in captured.out and "const:" in captured.out
    metrics = json.loads(out.read_text())
    assert list(metrics["methods"]) == ["m", "const"]
    ov = metrics["methods"]["m"]["overall"]
    assert ov["gpi"] == 0.5 and ov["gpi_exact"] is None and ov["exposure@1"] == [1.0, 0.0, 0.0]
    assert metrics["settings"]["ks"] == [1, 2] and metrics["settings"]["exact_kemeny_max_k"] is None
    assert metrics["methods"]["const"]["overall"]["loc"] == 1.0
    assert main(["evaluate", str(path), "--bootstrap", "20", "--output", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["methods"]["m"]["overall"]["gpi"] == 0.5 and "95% CI" in captured.err
    # same input → byte-identical output
    main(["evaluate", str(path), "--output", str(tmp_path / "a.json")])
    main(["evaluate", str(path), "--output", str(tmp_path / "b.json")])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_whole_process_exit_code_and_no_heavy_imports(tmp_path):
    """A real process: bad input exits 2 with one line; good input imports no torch, transformers or pandas."""
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text("\n".join(GOOD) + "\n")
    bad.write_text(GOOD[0] + "\n" + row(t=1, out="ab") + "\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "invarirank", "evaluate", str(bad)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and proc.stderr.startswith(f"invarirank: error: {bad}:2: ")
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "invarirank",
            "evaluate",
            str(good),
            "--output",
            str(tmp_path / "m.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert not _top_imports(proc.stderr) & {"torch", "transformers", "implicit"}
    # the evaluation path itself stays numpy-only (pandas/pyarrow only for DataFrames and Parquet)
    proc = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "import invarirank.evaluation, invarirank.commands._evaluate, invarirank.evaluation.engine",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    heavy = _top_imports(proc.stderr) & {"torch", "transformers", "implicit", "pandas", "pyarrow", "scipy"}
    assert proc.returncode == 0 and not heavy, heavy


def _top_imports(importtime_log: str) -> set[str]:
    names = {line.rsplit("|", 1)[-1].strip() for line in importtime_log.splitlines() if line.startswith("import time")}
    return {name.split(".")[0] for name in names}


def test_evaluate_imports_no_slow_module(tmp_path):
    """numpy.ma (np.unique and np.percentile import it: ~20 ms), pandas and scipy stay out of a whole evaluation with
    its intervals, comparisons and random-order reference (a process of its own: these tests import them)."""
    lines = [row(q=f"u{q}", t=t, inp="abcde"[t:] + "abcde"[:t], rel=("a", "z")) for q in range(30) for t in range(4)]
    path = tmp_path / "obs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = (
        "import sys; from invarirank.cli import main; "
        f"assert main(['evaluate', {str(path)!r}, '--output', {str(tmp_path / 'm.json')!r}]) == 0; "
        "print(sorted(m for m in ('numpy.ma', 'pandas', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


def test_the_metrics_text_encodes_values_as_the_json_module_does():
    """dumps_metrics makes its compact encoder once: the same text as json's encoder made for each value."""
    from invarirank.evaluation.engine import _compact_encoder

    plain = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
    compact = _compact_encoder()
    values = [0.1, 1e-05, -0.0, 3, None, True, 'é\u2028"x\\', [1.5, None, [2]], {"a": 0.3, "b": [1e300, -2e-300]}]
    for v in values:
        assert compact(v) == plain(v)
    with pytest.raises(ValueError):
        compact({"x": float("nan")})
