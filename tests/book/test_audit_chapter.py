"""The chapter "Auditing your own reranker" (notebooks/audit.py): its committed audit is whole and paired with the
project run beside it, and its three snippets are real — the callable's and the import's run on tiny data, the
server's command line parses with the CLI's own parser."""

from __future__ import annotations

import hashlib
import json
import re
import shlex

import jupytext
import pytest

import invarirank as ir
from invarirank import cli
from invarirank.candidates import write_candidates
from invarirank.compendium import _audit_tables as audit_tables
from invarirank.evaluation import evaluate
from invarirank.llm._testing import toy_query
from tests.book.test_results import SERVED_AUDIT_FILES
from tests.support import ROOT

AUDIT = ROOT / audit_tables.COMMITTED_AUDIT
RUN = ROOT / audit_tables.COMMITTED_RUN


def _snippets(language: str) -> list[str]:
    """The fenced ``language`` blocks of the chapter's Markdown cells, in order."""
    text = "\n".join(
        c.source for c in jupytext.read(ROOT / "notebooks" / "audit.py").cells if c.cell_type == "markdown"
    )
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.committed
def test_the_committed_audit_is_whole_and_its_metrics_are_its_observations():
    assert sorted(p.name for p in AUDIT.iterdir()) == SERVED_AUDIT_FILES
    manifest = json.loads((AUDIT / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["kind"] == "audit" and manifest["design"] == {"name": "random", "M": 20}
    raw = (AUDIT / "observations.jsonl").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == manifest["files"]["observations_sha256"]
    rows = ir.read_observations(AUDIT / "observations.jsonl")
    assert len(rows) == manifest["rows"] == 20 * manifest["queries"]["count"]
    assert {len(r["input"]) for r in rows} == {15}
    stored = json.loads((AUDIT / "metrics.json").read_text(encoding="utf-8"))
    st = stored["settings"]
    again = evaluate(rows, ks=st["ks"], exposure_k=st["exposure_k"], n_bootstrap=st["bootstrap"], seed=st["seed"])
    assert json.loads(json.dumps(again)) == stored
    # every answer is in the journal, and the manifest's parse counts are the rows' own
    journal = [json.loads(line) for line in (AUDIT / "journal.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len({e["key"] for e in journal}) >= len(rows)
    assert manifest["repairs"] == ir.audit.repair_totals(rows)


@pytest.mark.committed
def test_the_committed_audit_pairs_with_the_project_run_on_its_first_users():
    cmp = audit_tables.compare_with_run(AUDIT, RUN)
    n = len(cmp.query_ids)
    assert audit_tables.paired_orders(cmp) == 20 * n  # the same presented orders as the project's methods
    assert set(audit_tables.measures_table(cmp)["users"]) == {n}
    assert cmp.audit_methods and len(cmp.rows) == len(cmp.audit_methods) + len(cmp.run_manifest["grid_run"]["methods"])


def test_the_callable_and_import_snippets_run_on_tiny_data(tmp_path, monkeypatch, capsys):
    (python,) = _snippets("python")
    bash = _snippets("bash")
    assert len(bash) == 2
    queries = [toy_query(k=6, history=3, seed=s, query_id=f"u{s}") for s in range(3)]
    write_candidates(tmp_path / "candidates.jsonl", queries)
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(python, "audit-snippet", "exec"), scope)
    printed = capsys.readouterr().out
    assert re.search(r"PPI \d\.\d{3}, GPI \d\.\d{3}, LOC -?\d\.\d{3}", printed), printed
    rows = ir.read_observations(tmp_path / "by-title.observations.jsonl")
    assert len(rows) == 3 * 20
    for line in bash[1].strip().splitlines():
        argv = shlex.split(line)
        assert argv[0] == "invarirank" and cli.main(argv[1:]) == 0
    capsys.readouterr()
    back = ir.read_observations(tmp_path / "by-title.imported.jsonl")
    mine, imported = evaluate(rows, n_bootstrap=0), evaluate(back, n_bootstrap=0)
    assert imported["methods"]["by-title"]["overall"] == mine["methods"]["by-title"]["overall"]


def test_the_server_snippet_is_a_command_line_the_cli_accepts():
    server = _snippets("bash")[0].replace("\\\n", " ")
    argv = shlex.split(server)
    assert argv[0] == "invarirank"
    args = cli.build_parser().parse_args(argv[1:])
    assert (args.mode, args.M, args.seed, args.design) == ("generate", 20, 42, "random")
    if (AUDIT / "manifest.json").is_file():  # the snippet is the committed audit's own command
        identity = json.loads((AUDIT / "manifest.json").read_text(encoding="utf-8"))["rerankers"][0]
        assert (identity["model"], identity["sampling"]["seed"]) == (args.model, args.seed)
        assert args.out == str(audit_tables.COMMITTED_AUDIT)
