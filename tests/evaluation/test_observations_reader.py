"""The observations reader's fast paths keep the file's rules: a key given twice is refused wherever it is (the
C scanner alone would keep the last one), and a query's rows share one string object per id (the memory bound
stated in ``read_observations``) without changing what they hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invarirank import read_observations
from invarirank.errors import InvariRankError


def _line(**extra) -> dict:
    row = {"query_id": "u1", "method": "m", "permutation": 0, "input": ["a", "b:1", "c"]}
    row.update(output=["c", "a", "b:1"], relevant=["a", "z"])
    row.update(extra)
    return row


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "line",
    [
        '{"query_id": "u1", "query_id": "u2", "method": "m", "permutation": 0, "input": ["a"], "output": ["a"], '
        '"relevant": ["a"]}',
        # a nested object: two "{" on the line
        '{"query_id": "u1", "method": "m", "permutation": 0, "input": ["a"], "output": ["a"], "relevant": ["a"], '
        '"scores": {"a": 1, "a": 2}}',
        # ":" inside an id: more ":" than keys even without the repeat
        '{"query_id": "u:1", "method": "m", "method": "n", "permutation": 0, "input": ["a:b"], "output": ["a:b"], '
        '"relevant": ["a:b"]}',
    ],
    ids=["top-level", "nested", "colon-in-a-string"],
)
def test_a_key_given_twice_is_refused_on_its_line(tmp_path: Path, line: str):
    path = _write(tmp_path / "obs.jsonl", [json.dumps(_line()), line])
    with pytest.raises(InvariRankError, match=r"obs\.jsonl:2: malformed JSON: key '(query_id|a|method)' appears twice"):
        read_observations(path)


def test_colons_and_nested_objects_without_repeats_read_as_written(tmp_path: Path):
    rows = [_line(permutation=t, scores={"a": 1.5, "b:1": -2.0}, note="x: y") for t in range(3)]
    rows[1]["input"] = ["c", "a", "b:1"]
    path = _write(tmp_path / "obs.jsonl", [json.dumps(r) for r in rows])
    assert read_observations(path) == rows


def test_a_querys_rows_share_their_id_strings(tmp_path: Path):
    rows = [_line(permutation=t) for t in range(3)] + [_line(method="n")]
    path = _write(tmp_path / "obs.jsonl", [json.dumps(r) for r in rows])
    read = read_observations(path)
    assert read == rows
    first = {x: x for x in read[0]["input"] + read[0]["relevant"]}
    for r in read[1:]:
        for field in ("input", "output", "relevant"):
            assert all(x is first[x] for x in r[field]), field
