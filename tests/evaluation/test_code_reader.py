"""The fast reader (a file straight into integer codes) takes what the row-by-row reader takes and nothing else: a
file it cannot vouch for is read row by row, which accepts it with the same codes or names its first problem as
``FILE:LINE``, exactly as before."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from invarirank.cli import main
from invarirank.errors import InvariRankError
from invarirank.evaluation import evaluate, read_observations
from invarirank.evaluation._code_reader import read_codes
from invarirank.evaluation._codes import Codes, codes_of_rows
from tests.evaluation.test_cli import row


def _row(q="q", m="m", t=0, inp="abcd", out=None, rel=("a", "x"), **extra) -> dict:
    return json.loads(row(q, m, t, inp, out, rel, schema_version=1, **extra))


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def _same(a: Codes, b: Codes) -> bool:
    if [(m, list(q)) for m, q in a.items()] != [(m, list(q)) for m, q in b.items()]:
        return False
    for m, queries in a.items():
        for qid, x in queries.items():
            y = b[m][qid]
            if x.items != y.items or sorted(x.relevant) != sorted(y.relevant) or x.n_relevant != y.n_relevant:
                return False
            if not (np.array_equal(x.inp, y.inp) and np.array_equal(x.out, y.out)):
                return False
    return True


GOOD = [
    _row(t=0),
    _row(m="n", t=0, out="dcba", extra={"a": [1, 2]}, note="x: {y}"),
    _row(q="r", t=0, inp=["10", "9", "B0"], rel=["9"]),
    _row(t=1, inp="dcba", out="badc"),
    _row(q="r", t=1, inp=["B0", "9", "10"], out=["9", "10", "B0"], rel=["9"]),
    _row(m="n", t=1, inp="bacd", out="abcd"),
]


def test_a_plain_file_is_read_into_the_codes_of_its_rows(tmp_path):
    path = _write(tmp_path / "obs.jsonl", GOOD)
    codes = read_codes(path)
    assert codes is not None
    assert _same(codes, codes_of_rows(read_observations(path)))
    assert list(codes) == ["m", "n"] and list(codes["m"]) == ["q", "r"]
    assert codes["m"]["r"].items == ["10", "9", "B0"]  # code-point order
    settings = {"exposure_k": 2, "n_bootstrap": 20, "n_permutations": 50}
    assert evaluate(path, **settings) == evaluate(read_observations(path), **settings)


def _swap_id(rows: list[dict], old: str, new) -> None:
    """Every row of query q with the id ``old`` written as ``new`` in input and output."""
    for r in rows:
        if r["query_id"] == "q":
            r["input"] = [new if x == old else x for x in r["input"]]
            r["output"] = [new if x == old else x for x in r["output"]]


@pytest.mark.parametrize(
    "change",
    [
        # files the row-by-row reader accepts but the fast one leaves to it
        lambda rows: _swap_id(rows, "b", 7),  # an integer id (read as "7")
        lambda rows: rows[3].update(relevant=["x", "a"]),  # the ground truth in another order
        lambda rows: _swap_id(rows, "b", "\u00e9"),  # a non-ASCII id
        lambda rows: rows[2].update(query_id=7),  # an integer query id
    ],
    ids=["integer-id", "relevant-reordered", "non-ascii", "integer-query"],
)
def test_a_file_the_fast_reader_leaves_is_evaluated_as_its_rows(tmp_path, change):
    rows = [json.loads(json.dumps(r)) for r in GOOD]
    change(rows)
    path = _write(tmp_path / "obs.jsonl", rows)
    assert read_codes(path) is None
    settings = {"exposure_k": 2, "n_bootstrap": 20, "n_permutations": 50}
    assert evaluate(path, **settings) == evaluate(read_observations(path), **settings)


def test_the_fast_reader_falls_back_and_the_first_problem_is_named(tmp_path, capsys):
    """Line 3 repeats an id in its output, which the codes show only once the whole file is read (the permutation
    check), and line 5 is not JSON: the first problem in file order is named, one line, as before."""
    rows = [*GOOD[:2], _row(t=1, out="aabc"), GOOD[3], '{"query_id": "q", "method": ']
    path = _write(tmp_path / "obs.jsonl", rows)
    assert read_codes(path) is None
    assert main(["evaluate", str(path), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"invarirank: error: {path}:3: field 'output' is not a permutation of 'input'"), err
    assert err.count("\n") == 1
    assert not (tmp_path / "metrics.json").exists()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_row(t=0), "repeated (query_id, method, permutation) = ('q', 'm', 0), first seen on line 1"),
        (_row(t=2, inp="abce"), "different set of candidates than on line 1"),
        (_row(m="o", inp="abce"), "ranks other candidates"),
        (_row(t=2, rel=("a",)), "'relevant' of query 'q' differs from line 1"),
        (_row(t=2, inp="abc", out="abc"), "different set of candidates than on line 1"),
        ('{"query_id": "q", "query_id": "r"}', "malformed JSON: key 'query_id' appears twice"),
    ],
    ids=["repeat", "input-set", "method-candidates", "relevant", "shorter", "key-twice"],
)
def test_problems_found_on_codes_name_their_line(tmp_path, capsys, row, message):
    path = _write(tmp_path / "obs.jsonl", [*GOOD, row])
    assert read_codes(path) is None
    assert main(["evaluate", str(path), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"invarirank: error: {path}:7: ") and message in err, err


def _line(**changes) -> str:
    """Line 7 of a file after :data:`GOOD`: a new row of query q (``permutation`` 2), its JSON text edited by
    ``changes`` (old text -> new text)."""
    text = json.dumps(_row(t=2, extra_field="EXTRA"))
    for old, new in changes.items():
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize(
    "line",
    [
        # JSON msgspec does not take or the checks do not vouch for, which the row reader accepts
        _line(**{'"EXTRA"': "NaN"}),  # NaN (and the infinities) outside the fields the metrics read
        _line(**{'"EXTRA"': "1e400"}),  # a float beyond a double: inf for the row reader
        _line(**{'"EXTRA"': '"\\ud800"'}),  # a lone surrogate escape outside the ids
        _line(**{'"EXTRA"': "[" * 40 + "]" * 40}),  # a nesting the fast path leaves unchecked
        _line(**{'"EXTRA"': '{"a": {"b": 1}}'}),  # nested objects (each key once)
        _line(**{'"EXTRA"': '"a:b"'}) + "\r",  # a ":" inside a string, a carriage return before the line's end
        "  \t",  # a blank line
        _line(**{'"EXTRA"': "1" * 300}),  # a large integer
    ],
    ids=["nan", "huge-float", "lone-surrogate-extra", "nested-lists", "nested-objects", "colon-cr", "blank", "big-int"],
)
def test_json_the_row_reader_accepts_gets_its_metrics(tmp_path, line):
    path = _write(tmp_path / "obs.jsonl", [*GOOD, line])
    codes = read_codes(path)
    assert codes is None or _same(codes, codes_of_rows(read_observations(path)))
    settings = {"exposure_k": 2, "n_bootstrap": 20, "n_permutations": 50}
    assert evaluate(path, **settings) == evaluate(read_observations(path), **settings)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_line() + " " + json.dumps(_row(t=3)), "malformed JSON: Extra data"),
        (_line(**{'"permutation": 2': '"permutation": NaN'}), "field 'permutation' must be an integer >= 0, got nan"),
        (_line(**{'"permutation": 2': '"permutation": true'}), "field 'permutation' must be an integer >= 0, got True"),
        (_line(**{'"permutation": 2': '"permutation": 2.0'}), "field 'permutation' must be an integer >= 0, got 2.0"),
        (json.dumps(_row(q="s", inp=["a", "\ud800"])), "field 'input': '\\ud800' holds a lone surrogate"),
        (_line(**{'"EXTRA"': '{"a": 1, "a": 2}'}), "malformed JSON: key 'a' appears twice in one object"),
        (_line(**{'"extra_field"': '"method"'}), "malformed JSON: key 'method' appears twice in one object"),
        (_line(**{'"EXTRA"': "[" * 5000 + "]" * 5000}), "JSON nested too deeply"),
        (_line(**{'"EXTRA"': "1" * 5000}), "malformed JSON: Exceeds the limit (4300 digits)"),
        (
            json.dumps(_row(q="s")).replace('"relevant": ["a", "x"]', '"relevant": "ax"'),
            "field 'relevant' must be a list of item ids (strings), got str",
        ),
    ],
    ids=[
        "two-objects",
        "nan-permutation",
        "bool-permutation",
        "float-permutation",
        "lone-surrogate-id",
        "nested-key-twice",
        "key-twice",
        "too-deep",
        "int-too-long",
        "relevant-string",
    ],
)
def test_json_the_row_reader_refuses_is_named_by_it(tmp_path, capsys, line, message):
    """msgspec parses some of these lines (a repeated key: it keeps the last; an integer past Python's digit limit:
    msgspec refuses it too): the fast reader takes none of them, and the error is the row reader's."""
    path = _write(tmp_path / "obs.jsonl", [*GOOD, line])
    assert read_codes(path) is None
    with pytest.raises(InvariRankError) as row_reader:
        read_observations(path)
    assert main(["evaluate", str(path), "--bootstrap", "0"]) == 2
    err = capsys.readouterr().err
    assert err == f"invarirank: error: {row_reader.value}\n" and f"{path}:7: " in err and message in err, err


def test_a_file_that_is_not_utf8_is_named_by_the_row_reader(tmp_path, capsys):
    """msgspec checks the UTF-8 of every string it decodes; a bad byte anywhere else is not JSON either."""
    path = _write(tmp_path / "obs.jsonl", GOOD)
    bad = _line(**{'"EXTRA"': '"x-byte"'}).encode().replace(b"-byte", b"\xff")
    path.write_bytes(path.read_bytes() + bad + b"\n")
    assert read_codes(path) is None
    assert main(["evaluate", str(path), "--bootstrap", "0"]) == 2
    assert capsys.readouterr().err.startswith(f"invarirank: error: {path}:7: not UTF-8 text")


def test_a_gzip_file_with_a_byte_order_mark_and_crlf_lines_is_read_fast(tmp_path):
    text = "\ufeff" + "".join(json.dumps(r) + "\r\n" for r in GOOD)
    path = tmp_path / "obs.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    codes = read_codes(path)
    assert codes is not None and _same(codes, codes_of_rows(read_observations(path)))


@pytest.mark.parametrize(("given", "expected"), [({}, "1"), ({"OMP_NUM_THREADS": "3"}, None)])
def test_the_command_runs_blas_on_one_thread_unless_told(given, expected):
    """Set before numpy is imported (a user's thread count is kept): OpenBLAS's spinning threads cost CPU time."""
    from invarirank.commands._evaluate import _BLAS_THREADS

    env = {k: v for k, v in os.environ.items() if k not in _BLAS_THREADS}
    code = (
        "import os; from invarirank.commands._evaluate import _one_blas_thread; _one_blas_thread(); "
        "import numpy; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    out = subprocess.run([sys.executable, "-c", code], env={**env, **given}, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(expected)


def test_a_query_of_more_than_256_candidates_gets_two_byte_codes(tmp_path):
    ids = [f"i{n}" for n in range(300)]
    rows = [_row(t=t, inp=ids[t:] + ids[:t], out=ids[::-1], rel=("i7",)) for t in range(3)]
    path = _write(tmp_path / "obs.jsonl", rows)
    codes = read_codes(path)
    assert codes is not None and codes["m"]["q"].inp.dtype.itemsize == 2
    assert _same(codes, codes_of_rows(read_observations(path)))
