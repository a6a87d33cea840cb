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


def test_more_queries_than_the_pool_takes_all_with_a_note(tmp_path, capsys, monkeypatch):
    """Issue 21 F14 / issue 39 F6: ``--queries 1000`` on a candidates file of 4 test queries takes all 4, as the
    documented "default all" reads, never without a word: one note names the setting and the count, and the rows
    are those of the run that leaves it unset (the synthetic data set, which generates its n_queries queries,
    keeps those kept at sample_k)."""
    from invarirank.candidates import query_to_json
    from invarirank.cli import main
    from invarirank.data._synthetic import synthetic_queries

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
    ]
    assert main([*args, "--out", str(tmp_path / "many"), "--queries", "1000"]) == 0
    err = capsys.readouterr().err
    assert "n_queries 1000: only 4 test queries are available" in err and "taking all 4" in err
    assert main([*args, "--out", str(tmp_path / "all")]) == 0
    assert "taking all" not in capsys.readouterr().err  # the note is for a count above the data only
    obs = "observations.jsonl"
    assert (tmp_path / "many" / obs).read_bytes() == (tmp_path / "all" / obs).read_bytes()
    assert main([*args, "--out", str(tmp_path / "dry"), "--queries", "1000", "--dry-run"]) == 0
    assert "taking all 4" in capsys.readouterr().err  # the dry run says the same
