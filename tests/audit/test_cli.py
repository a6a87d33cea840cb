"""``invarirank audit``, ``invarirank import`` and ``invarirank export``: the run folder every run has, metrics equal to
evaluating its observations, the import/export round trip, and one-line errors with exit 2."""

from __future__ import annotations

import json
import textwrap

import pytest

import invarirank as ir
from invarirank import cli
from invarirank._io import read_json
from invarirank.candidates import write_candidates
from invarirank.llm._testing import toy_split_queries

RERANKER = textwrap.dedent(
    """
    def rank(query, presented):
        # position follower with a taste for even ids: deterministic, position-biased
        ids = [it.item_id for it in presented]
        return sorted(ids, key=lambda x: (int(x) % 2, ids.index(x)))

    def score(query, presented):
        return [len(presented) - i for i in range(len(presented))]
    """
)


@pytest.fixture()
def work(tmp_path):
    write_candidates(tmp_path / "candidates.jsonl", [q for q in toy_split_queries(n_test=4, k=6) if q.split == "test"])
    (tmp_path / "hidden.py").write_text(RERANKER)
    return tmp_path


def test_audit_writes_a_run_folder_whose_metrics_are_its_observations(work, capsys):
    out = work / "run"
    code = cli.main(
        ["audit", "--callable", f"{work / 'hidden.py'}:rank", "--returns", "order",
         "--candidates", str(work / "candidates.jsonl"), "--m", "6", "--seed", "3", "--out", str(out)]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "metrics.json", "observations.jsonl", "run.json"]
    rows = ir.read_observations(out / "observations.jsonl")
    assert len(rows) == 4 * 6 and {r["method"] for r in rows} == {"rank"}
    assert read_json(out / "metrics.json") == json.loads(
        json.dumps(ir.evaluate(rows, ks=(1, 5, 10), exposure_k=5, n_bootstrap=1000, seed=3))
    )
    manifest = read_json(out / "manifest.json")
    assert manifest["kind"] == "audit" and manifest["design"] == {"name": "random", "M": 6} and manifest["seed"] == 3
    assert manifest["rerankers"][0]["adapter"] == "callable-order" and manifest["queries"]["count"] == 4
    printed = capsys.readouterr().out
    assert "sister measures" in printed and "spearman" in printed


def test_audit_sweep_with_a_score_callable_and_a_project_scorer(work, capsys):
    assert cli.main(
        ["audit", "--callable", f"{work / 'hidden.py'}:score", "--returns", "scores", "--batched", "--candidates",
         str(work / "candidates.jsonl"), "--design", "sweep", "--repeats", "2", "--out", str(work / "sweep")]
    ) == 2  # fmt: skip
    # score(query, presented) called as a batched callable sees a list of queries: refused, not guessed
    assert "returned int 32; expected 6 finite real numbers" in capsys.readouterr().err
    assert cli.main(
        ["audit", "--callable", f"{work / 'hidden.py'}:score", "--returns", "scores", "--candidates",
         str(work / "candidates.jsonl"), "--design", "sweep", "--repeats", "2", "--out", str(work / "sweep")]
    ) == 0  # fmt: skip
    rows = ir.read_observations(work / "sweep" / "observations.jsonl")
    assert len(rows) == 4 * 6 * 2
    # a pure position follower under a balanced sweep: the first position is always first
    metrics = read_json(work / "sweep" / "metrics.json")["methods"]["score"]["overall"]
    assert metrics["exposure@5"][0] == 1.0 and metrics["exposure@5"][5] == 0.0
    assert cli.main(
        ["audit", "--scorer", "simulated", "--method", "bootstrapping", "--candidates", str(work / "candidates.jsonl"),
         "--m", "3", "--out", str(work / "sim")]
    ) == 0  # fmt: skip
    assert {r["method"] for r in ir.read_observations(work / "sim" / "observations.jsonl")} == {"bootstrapping"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--callable", "hidden.py"], "expected MODULE:FUNCTION"),
        (["--callable", "{w}/hidden.py:nope", "--returns", "order"], "has no callable 'nope'"),
        (["--callable", "{w}/hidden.py:rank"], "needs --returns"),
        (["--callable", "no_such_module_xyz:f", "--returns", "order"], "module 'no_such_module_xyz' not found"),
    ],
)
def test_audit_bad_input_is_one_line_exit_2(work, capsys, args, message):
    argv = [
        "audit",
        *[a.format(w=work) for a in args],
        "--candidates",
        str(work / "candidates.jsonl"),
        "--out",
        str(work / "x"),
    ]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("invarirank: error:") and message in err and "\n" not in err
    assert not (work / "x").exists()


def test_export_then_import_trec_gives_the_same_metrics(work, capsys):
    cli.main(
        ["audit", "--callable", f"{work / 'hidden.py'}:rank", "--returns", "order",
         "--candidates", str(work / "candidates.jsonl"), "--m", "4", "--out", str(work / "run")]
    )  # fmt: skip
    obs = work / "run" / "observations.jsonl"
    assert cli.main(["export", "trec", str(obs), "--out", str(work / "run.trec")]) == 0
    assert cli.main(["import", "trec", str(work / "run.trec"), "--out", str(work / "back.jsonl")]) == 0
    assert ir.evaluate(work / "back.jsonl", n_bootstrap=100) == ir.evaluate(obs, n_bootstrap=100)
    assert (
        cli.main(
            [
                "import",
                "rank-llm",
                str(work / "nope.jsonl"),
                "--requests",
                str(obs),
                "--qrels",
                "q",
                "--out",
                str(work / "o.jsonl"),
            ]
        )
        == 2
    )
    assert "expected an object with 'query'" in capsys.readouterr().err
