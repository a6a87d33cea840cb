"""The served reranker against a small fake OpenAI-compatible server (``tests/support/fake_openai.py``): log-probs by
fixed token ids and by top-k (a missing label fails by name), strict parsing of generated rankings with the parse
counts, reasoning blocks, retries, and the journal that makes a rerun send nothing and give identical rows."""

from __future__ import annotations

import json

import pytest

import invarirank as ir
from invarirank import cli
from invarirank.audit.served_model import parse_ranking, served, strip_reasoning
from invarirank.candidates import write_candidates
from invarirank.errors import InvariRankError
from invarirank.llm._testing import toy_query
from tests.support.fake_openai import FakeServer, hidden_order

QUERIES = [toy_query(k=6, history=3, seed=s, query_id=f"q{s}") for s in range(3)]


def _expected_output(reranker, rows):
    """The hidden preference's ranking of each row's presented order (from the prompt the reranker writes)."""
    by_id = {q.query_id: q for q in QUERIES}
    out = []
    for row in rows:
        q = by_id[row["query_id"]]
        items = {c.item_id: c for c in q.candidates}
        p = ir.audit.Presentation([items[i] for i in row["input"]], labels="ABCDEF"[: len(row["input"])])
        by_label = dict(zip(p.labels, p.ids))
        out.append([by_label[lab] for lab in hidden_order(reranker.prompt(q, p))])
    return out


def test_logprobs_by_fixed_token_ids_rank_by_the_label_scores(tmp_path):
    with FakeServer() as srv:
        r = served(srv.url, "fake", "logprobs", journal=tmp_path / "j.jsonl", concurrency=3)
        rows = ir.audit(r, QUERIES, M=4, seed=5)
    assert [row["output"] for row in rows] == _expected_output(r, rows)
    assert all(len(row["scores"]) == 6 for row in rows)
    ident = r.identity()
    assert ident["logprob_source"] == "fixed" and ident["label_token_ids"]["A"] == ord("A")
    assert ident["sampling"] == {"temperature": 0.0, "top_p": 1.0, "seed": 0, "max_tokens": None}
    assert {b["seed"] for b in srv.posts} == {0} and {b["temperature"] for b in srv.posts} == {0.0}


def test_top_k_fallback_and_a_missing_label_fails_naming_it(tmp_path):
    with FakeServer(tokenize=False) as srv:
        r = served(srv.url, "fake", "logprobs")
        rows = ir.audit(r, QUERIES[:1], M=2, seed=5)
        assert r.identity()["logprob_source"] == "top-k"
        assert [row["output"] for row in rows] == _expected_output(r, rows)
    with FakeServer(tokenize=False, top_k_drop=("C", "E")) as srv:
        with pytest.raises(InvariRankError, match=r"lack label\(s\) C, E"):
            ir.audit(served(srv.url, "fake", "logprobs"), QUERIES[:1], M=2, seed=5)


def test_journal_rerun_sends_nothing_and_gives_identical_rows(tmp_path):
    journal = tmp_path / "journal.jsonl"
    with FakeServer() as srv:
        first = ir.audit(served(srv.url, "fake", "logprobs", journal=journal), QUERIES, M=3, seed=1)
        sent = len(srv.posts)
        lines = journal.read_text().splitlines()
        journal.write_text("\n".join(lines[:4]) + "\n" + lines[4][:20])  # a crash: 4 answers kept, one cut short
        r = served(srv.url, "fake", "logprobs", journal=journal)
        again = ir.audit(r, QUERIES, M=3, seed=1)
    assert sent == 9 and len(lines) == 9
    assert again == first and r.client.journal.reused == 4 and len(srv.posts) == sent + 5


def test_generation_is_parsed_strictly_and_counted():
    answers = iter(
        [
            "[B] > [A] > [C] > [D] > [E] > [F]",  # valid
            "<think>the user likes comedies</think>\n[A] > [B]",  # reasoning removed; 4 missing
            "I would pick [A] then [B]",  # unparsable: nothing read, all 6 appended
            "[A] > [A] > [Z] > [B]",  # a duplicate, an unknown label, 4 missing
        ]
    )
    with FakeServer(chat=lambda prompt: next(answers)) as srv:
        r = served(srv.url, "fake", "generate", concurrency=1)
        rows = ir.audit(r, QUERIES[:1], M=4, seed=2)
        assert "[B] > [A] > [C]" in srv.posts[0]["messages"][0]["content"]  # the question shows the form
        assert srv.posts[0]["max_tokens"] == 6 * 6 + 16
    ids = [row["input"] for row in rows]
    assert rows[0]["output"] == [ids[0][1], ids[0][0], *ids[0][2:]] and rows[0]["repairs"]["missing"] == 0
    assert rows[1]["parse"] == {"unparsable": 0, "reasoning": 1, "truncated": 0} and rows[1]["repairs"]["missing"] == 4
    assert rows[2]["parse"]["unparsable"] == 1 and rows[2]["output"] == ids[2] and rows[2]["repairs"]["missing"] == 6
    assert rows[3]["repairs"] == {"unknown": 1, "duplicate": 1, "missing": 4}
    totals = ir.audit.repair_totals(rows)[r.name]
    assert totals["unparsable"] == 1 and totals["reasoning"] == 1 and totals["repaired_rows"] == 3


def test_an_unclosed_reasoning_block_is_refused_not_read():
    with FakeServer(chat=lambda prompt: "<think>[A] > [B] is tempting but", finish_reason="length") as srv:
        with pytest.raises(InvariRankError, match="unclosed reasoning block"):
            ir.audit(served(srv.url, "fake", "generate"), QUERIES[:1], M=1, seed=2)


@pytest.mark.parametrize(
    ("text", "want"),
    [("[B] > [A]", ["B", "A"]), ("  [B]>[A]\n", ["B", "A"]), ("[B]", ["B"]), ("[B] > [A] done", None),
     ("B > A", None), ("[B] [A]", None), ("", None)],
)  # fmt: skip
def test_parse_ranking_is_strict(text, want):
    assert parse_ranking(text) == want


def test_strip_reasoning_handles_a_template_opened_block():
    assert strip_reasoning("ok</think> [A]") == (" [A]", True)  # the template wrote <think> itself
    assert strip_reasoning("[A] > [B]") == ("[A] > [B]", False)


def test_retries_with_backoff_then_one_line_failure():
    waits: list[float] = []
    with FakeServer(fail_first=2) as srv:
        r = served(srv.url, "fake", "logprobs", retries=2, backoff=0.01)
        r.client._sleep = waits.append
        ir.audit(r, QUERIES[:1], M=1, seed=0)
        assert waits == [0.01, 0.02]
    with FakeServer(fail_first=99) as srv:
        r = served(srv.url, "fake", "generate", retries=1, backoff=0.0)
        with pytest.raises(InvariRankError, match=r"no answer after 2 tries \(HTTP 503"):
            ir.audit(r, QUERIES[:1], M=1, seed=0)


def test_wrong_model_and_bad_settings_are_one_line_errors():
    with FakeServer() as srv:
        with pytest.raises(InvariRankError, match="the server serves fake"):
            ir.audit(served(srv.url, "other", "logprobs"), QUERIES[:1], M=1)
    with pytest.raises(InvariRankError, match="mode"):
        served("http://127.0.0.1:1/v1", "m", "beam")
    with pytest.raises(InvariRankError, match="concurrency"):
        served("http://127.0.0.1:1/v1", "m", "logprobs", concurrency=0)


def test_cli_audit_through_a_server_writes_the_run_folder_and_journal(tmp_path, capsys):
    write_candidates(tmp_path / "c.jsonl", QUERIES)
    with FakeServer() as srv:
        args = ["audit", "--server", srv.url, "--model", "fake", "--mode", "generate", "--candidates",
                str(tmp_path / "c.jsonl"), "--m", "3", "--concurrency", "2", "--timeout", "10", "--out"]  # fmt: skip
        assert cli.main([*args, str(tmp_path / "run")]) == 0, capsys.readouterr().err
        err = capsys.readouterr().err
        assert "9 requests sent, 0 answered from the journal" in err
        assert cli.main([*args, str(tmp_path / "run")]) == 0
        assert "0 requests sent, 9 answered from the journal" in capsys.readouterr().err
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (
        manifest["rerankers"][0]["adapter"] == "served-generate" and manifest["repairs"]["fake-generate"]["rows"] == 9
    )
    assert len((tmp_path / "run" / "journal.jsonl").read_text().splitlines()) == 9
    code = cli.main(["audit", "--server", "http://127.0.0.1:1/v1", "--candidates", str(tmp_path / "c.jsonl"),
                     "--out", str(tmp_path / "x")])  # fmt: skip
    assert code == 2 and "--model NAME" in capsys.readouterr().err


def test_ir_audit_served_is_the_function_after_its_module_is_imported():
    import invarirank.audit.served_model as module

    assert ir.audit.served is module.served and callable(ir.audit.served)


def test_a_frame_that_opens_a_reasoning_block_is_refused_in_logprob_mode():
    with pytest.raises(InvariRankError, match="reasoning block"):
        served("http://127.0.0.1:1/v1", "m", "logprobs", frame=("<|user|>", "<|assistant|><think>\n"), frame_name="x")
    with FakeServer() as srv:
        r = served(srv.url, "fake", "logprobs", frame=("<u>", "</u><a>"), frame_name="chat:toy")
        ir.audit(r, QUERIES[:1], M=1)
        assert srv.posts[0]["prompt"].startswith("<u>Given") and srv.posts[0]["prompt"].endswith("</u><a>[")
        assert r.identity()["frame"] == "chat:toy"
