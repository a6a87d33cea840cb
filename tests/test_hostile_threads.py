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
