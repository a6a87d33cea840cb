"""Hostile input (issue 21 T6): a thread count from the environment that is not a whole number >= 1 is one clear
error naming the variable, before torch sees it."""

from __future__ import annotations

import pytest

from invarirank.errors import InvariRankError


@pytest.mark.parametrize("value", ["lots", "0", "-2", "1.5", "2e3", " "])
def test_bad_thread_counts_are_refused(value, monkeypatch):
    pytest.importorskip("torch")
    from invarirank.llm.models import set_threads

    monkeypatch.setenv("INVARIRANK_THREADS", value)
    with pytest.raises(InvariRankError, match=r"INVARIRANK_THREADS=.*expected a whole number of threads >= 1"):
        set_threads()


def test_more_queries_than_the_pool_is_refused(tmp_path, capsys, monkeypatch):
    """Issue 21 F14: ``--queries 1000`` on a candidates file of 4 test queries is refused, not clamped to 4 (the
    synthetic data set, which generates its n_queries queries, keeps those kept at sample_k)."""
    from invarirank.candidates import query_to_json
    from invarirank.cli import main
    from invarirank.data.synthetic import synthetic_queries

    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    cands = tmp_path / "cands.jsonl"
    cands.write_text(
        "".join(
            __import__("json").dumps(query_to_json(q)) + "\n"
            for q in synthetic_queries(n_test=4, n_validation=0, k=6, seed=1)
        )
    )
    args = [
        "rerank",
        "--candidates",
        str(cands),
        "--scorer",
        "simulated",
        "--m",
        "2",
        "--methods",
        "zero_shot",
        "--n-bootstrap",
        "0",
        "--no-progress",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main([*args, "--queries", "1000"]) == 2
    err = capsys.readouterr().err
    assert "n_queries 1000: only 4 test queries are available" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "observations.jsonl").exists()
    assert main([*args, "--queries", "4"]) == 0  # all of them: fine
