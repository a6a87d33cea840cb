"""Hostile input to ``invarirank audit``, ``import`` and ``export`` (issue 14's promise): exit 2, one error line
naming the file, field or parameter, no traceback, and ``--out`` left as it was (see tests/support/hostile.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from invarirank.candidates import write_candidates
from invarirank.llm._testing import toy_split_queries
from tests.support.hostile import expect_rejected

RERANKERS = """
def rank(query, presented):
    return [it.item_id for it in presented]

def few(query, presented):
    return [1.0]
"""


@pytest.fixture()
def work(tmp_path: Path) -> Path:
    write_candidates(tmp_path / "c.jsonl", [q for q in toy_split_queries(n_test=2, k=5) if q.split == "test"])
    (tmp_path / "r.py").write_text(RERANKERS)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "manifest.json").write_text('{"manifest_version": 2}')
    (tmp_path / "obs.jsonl").write_text(
        json.dumps(
            {
                "query_id": "q",
                "method": "m",
                "permutation": 0,
                "input": ["a", "b"],
                "output": ["b", "a"],
                "relevant": ["a"],
            }
        )
        + "\n"
    )
    (tmp_path / "bad.run").write_text("q Q0 a 1\n")
    (tmp_path / "bad.run.presented.jsonl").write_text('{"query_id": "q", "tag": "m@0", "input": ["a", "b"]}\n')
    (tmp_path / "bad.run.qrels").write_text("q 0 a 1\n")
    (tmp_path / "requests.jsonl").write_text(
        '{"query": {"qid": "q"}, "candidates": [{"docid": "a"}, {"docid": "b"}]}\n'
    )
    (tmp_path / "results.jsonl").write_text('{"query": {"qid": "q"}, "candidates": [{"docid": "b"}, {"docid": "a"}]}\n')
    (tmp_path / "qrels.txt").write_text("q 0 a 1\n")
    return tmp_path


AUDIT = ["audit", "--candidates", "{w}/c.jsonl"]
RANK = [*AUDIT, "--callable", "{w}/r.py:rank", "--returns", "order"]
LLM = ["import", "rank-llm", "{w}/results.jsonl", "--requests", "{w}/requests.jsonl"]
CASES = [
    # (argv without --out, error fragments, the --out: given last, it must stay as it was)
    ([*AUDIT, "--callable", "{w}/r.py", "--returns", "order"], ["MODULE:FUNCTION"], "run"),
    ([*AUDIT, "--callable", "{w}/r.py:rank"], ["--returns"], "run"),
    ([*AUDIT, "--callable", "{w}/r.py:few", "--returns", "scores"], ["'few'", "1 scores", "5"], "run"),
    ([*RANK, "--design", "label-swap"], ["uses_labels"], "run"),
    ([*RANK, "--design", "pinned", "--pin-item", "7"], ["pin_item 7"], "run"),
    (RANK, ["holds another run"], "other"),
    (RANK, ["not a folder"], "obs.jsonl"),
    (["audit", "--candidates", "{w}/none.jsonl", *RANK[3:]], ["none.jsonl"], "run"),
    (["import", "trec", "{w}/bad.run"], ["bad.run:1", "6 whitespace-separated columns"], "o.jsonl"),
    (["import", "trec", "{w}/bad.run"], ["one of the input files"], "bad.run"),
    # issue 39 F9: the side files read beside RUN when not named are inputs too (RUN.qrels was overwritten)
    (["import", "trec", "{w}/bad.run"], ["one of the input files"], "bad.run.qrels"),
    (["import", "trec", "{w}/bad.run"], ["one of the input files"], "bad.run.presented.jsonl"),
    ([*LLM, "--qrels", "{w}/none"], ["none", "not found"], "o.jsonl"),
    (["import", "authors", "{w}/obs.jsonl"], ["obs.jsonl:1", "neither a harness result"], "o.jsonl"),
    (["export", "trec", "{w}/obs.jsonl"], ["is the observations file"], "obs.jsonl"),
    (["export", "trec", "{w}/c.jsonl"], ["c.jsonl:1"], "x.run"),
    # issue 39 F6: a flag where it does nothing is refused, naming it and what it belongs to (it was ignored)
    ([*RANK, "--design", "sweep", "--m", "3"], ["--m 3", "--design random"], "run"),
    ([*RANK, "--repeats", "3"], ["--repeats 3", "--design sweep"], "run"),
    ([*RANK, "--pin-item", "2"], ["--pin-item 2", "--design pinned"], "run"),
    ([*RANK, "--method", "sgs"], ["--method 'sgs'", "--scorer"], "run"),
    ([*RANK, "--lower-is-better"], ["--lower-is-better does nothing", "--returns scores"], "run"),
    ([*AUDIT, "--scorer", "simulated", "--returns", "order"], ["--returns 'order'", "--callable"], "run"),
    ([*AUDIT, "--scorer", "simulated", "--concurrency", "8"], ["--concurrency 8", "--server"], "run"),
]


@pytest.mark.parametrize("argv, needles, out", CASES, ids=[f"{c[0][0]}-{i}" for i, c in enumerate(CASES)])
def test_rejected(work, capsys, argv, needles, out):
    argv = [a.format(w=work) for a in argv] + ["--out", str(work / out)]
    expect_rejected(capsys, argv, needles, work / out)
