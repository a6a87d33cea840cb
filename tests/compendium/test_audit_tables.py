"""The audit chapter's tables on tiny data: an audit folder written by ``write_audit_run`` beside a project-like run
folder whose users it shares (a prefix in run order) and whose presented orders it shares (the same seed)."""

from __future__ import annotations

import json

import pytest

import invarirank as ir
from invarirank.audit._run_folder import write_audit_run
from invarirank.audit.designs import Design
from invarirank.compendium import _audit_tables as audit_tables
from invarirank.errors import InvariRankError
from invarirank.llm._testing import toy_query

QUERIES = [toy_query(k=6, history=3, seed=s, query_id=f"u{s}") for s in range(4)]


def _as_shown(query, presented):
    """A reranker that returns the presented order: the most position-bound ranking there is."""
    return [item.item_id for item in presented]


@pytest.fixture
def folders(tmp_path):
    shown = ir.audit.from_order(_as_shown, name="as-shown")
    rows = ir.audit(shown, QUERIES[:2], M=5, seed=3)
    audit = tmp_path / "audit"
    write_audit_run(audit, rows, rerankers=[shown.identity()], design=Design("random", 5).to_json(), seed=3)
    run = tmp_path / "run"
    run.mkdir()
    own = ir.audit.from_scorer(ir.make_scorer("simulated", seed=1), "zero_shot")
    ir.write_observations(run / "observations.jsonl", ir.audit(own, QUERIES, M=5, seed=3))
    manifest = {"grid_run": {"model": "simulated", "scorer": "simulated"}, "queries": {"count": 4}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return audit, run


def test_tables_restrict_the_run_to_the_audits_users_and_evaluate_both_alike(folders):
    audit, run = folders
    cmp = audit_tables.compare_with_run(audit, run)
    assert cmp.query_ids == ["u0", "u1"] and audit_tables.paired_orders(cmp) == 2 * 5
    table = audit_tables.measures_table(cmp, digits=6)
    assert list(table["users"]) == [2, 2]
    # the audit's row is its own metrics.json: the chapter evaluates it as `invarirank audit` did
    stored = json.loads((audit / "metrics.json").read_text())["methods"]["as-shown"]["overall"]
    assert table.loc["as-shown", "PPI"] == round(stored["ppi"], 6) and table.loc["as-shown", "LOC"] == round(
        stored["loc"], 6
    )
    # as shown: the first five positions always hold the top 5, the sixth never
    exposure = audit_tables.exposure_table(cmp)
    assert list(exposure.loc["as-shown"]) == [1.0] * 5 + [0.0]
    sister = audit_tables.sister_table(cmp)
    assert sister.shape[0] == 2 and sister.loc["as-shown", "pairs ever flipped"] > 0
    parse = audit_tables.parse_table(cmp)
    assert parse.loc["rows", "as-shown"] == 10 and parse.loc["repaired_rows", "as-shown"] == 0
    facts = audit_tables.audit_facts(cmp)
    assert (facts["users"], facts["run_users"], facts["M"], facts["K"], facts["rows"]) == (2, 4, 5, 6, 10)
    assert facts["as_presented"] == 10  # the as-shown reranker's every row
    words = audit_tables.basis_sentences(cmp)
    assert "10 requests" in words and "p = 0.5" in words


def test_an_audit_of_other_users_or_other_orders_is_refused(folders, tmp_path):
    audit, run = folders
    shown = ir.audit.from_order(_as_shown, name="as-shown")
    other = tmp_path / "other"
    rows = ir.audit(shown, QUERIES[2:3], M=5, seed=3)  # u2 is not the run's first user
    write_audit_run(other, rows, rerankers=[shown.identity()], design=Design("random", 5).to_json(), seed=3)
    with pytest.raises(InvariRankError, match="not the first 1 users"):
        audit_tables.compare_with_run(other, run)
    reseeded = tmp_path / "reseeded"
    rows = ir.audit(shown, QUERIES[:2], M=5, seed=4)  # other presented orders
    write_audit_run(reseeded, rows, rerankers=[shown.identity()], design=Design("random", 5).to_json(), seed=4)
    with pytest.raises(InvariRankError, match="saw another presented order"):
        audit_tables.paired_orders(audit_tables.compare_with_run(reseeded, run))
    with pytest.raises(InvariRankError, match="not an audit run folder"):
        audit_tables.compare_with_run(run, run)
