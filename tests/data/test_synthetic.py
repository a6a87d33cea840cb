"""Synthetic candidate sets (invarirank.data._synthetic): seeded, byte-identical for the same arguments, with
the promised shape (k distinct candidates, ``relevant`` of them ground truth, a history outside the candidates)."""

from __future__ import annotations

import pytest

from invarirank.candidates import read_candidates
from invarirank.data._synthetic import GENRES, synthetic_queries, write_synthetic_candidates


def test_shape_of_the_queries():
    qs = synthetic_queries(n_test=3, n_validation=2, k=7, relevant=2, history=4, catalogue=50, seed=1)
    assert [q.split for q in qs] == ["test"] * 3 + ["validation"] * 2
    assert [q.query_id for q in qs] == ["u000", "u001", "u002", "v000", "v001"]
    for q in qs:
        ids = [c.item_id for c in q.candidates]
        assert len(ids) == len(set(ids)) == 7
        assert len(q.ground_truth) == 2 and set(q.ground_truth) <= set(ids)
        assert len(q.history) == 4 and not {h.item.item_id for h in q.history} & set(ids)
        assert all(set(c.genres) <= set(GENRES) for c in q.candidates)


def test_same_arguments_same_bytes_other_seed_other_queries(tmp_path):
    a = write_synthetic_candidates(tmp_path / "a.jsonl", n_test=4, n_validation=2, k=5, seed=7)
    b = write_synthetic_candidates(tmp_path / "b.jsonl", n_test=4, n_validation=2, k=5, seed=7)
    c = write_synthetic_candidates(tmp_path / "c.jsonl", n_test=4, n_validation=2, k=5, seed=8)
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    assert read_candidates(a) == synthetic_queries(n_test=4, n_validation=2, k=5, seed=7)


@pytest.mark.parametrize("kwargs", [dict(k=3, relevant=4), dict(k=0, relevant=0), dict(k=10, catalogue=12)])
def test_impossible_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match="relevant <= k"):
        synthetic_queries(**kwargs)
