"""Importers of other tools' logs: each layout written as the tool writes it, read back to the same rows (round trip)
and the same metrics; incomplete rankings completed by the stated rule and counted; bad files are one-line errors."""

from __future__ import annotations

import json

import pytest

import invarirank as ir
from invarirank.audit.authors import read_authors
from invarirank.audit.rank_llm import read_rank_llm
from invarirank.audit.trec import qrels_path, read_trec_run, write_trec_run
from invarirank.candidates import write_candidates
from invarirank.llm._simulated import SimulatedScorer
from invarirank.llm._testing import toy_split_queries

REQUIRED = ("query_id", "method", "permutation", "input", "output", "relevant")


@pytest.fixture(scope="module")
def queries():
    return [q for q in toy_split_queries(n_test=4, k=6) if q.split == "test"]


@pytest.fixture(scope="module")
def rows(queries):
    scorer = SimulatedScorer(seed=2, bias_strength=1.0)
    return ir.audit([ir.audit.from_scorer(scorer, "zero_shot"), ir.audit.from_scorer(scorer, "sgs")], queries, M=5)


def core(rs):
    return [{f: r[f] for f in REQUIRED} for r in rs]


def test_trec_writer_ranks_are_1_based_and_scores_strictly_decreasing(rows, tmp_path):
    run = write_trec_run(tmp_path / "r.run", rows)
    lists: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for line in run.read_text().splitlines():
        qid, q0, _, rank, score, tag = line.split()
        assert q0 == "Q0"
        lists.setdefault((qid, tag), []).append((int(rank), float(score)))
    assert len(lists) == len(rows)  # one list per (query, method, order)
    for entries in lists.values():
        assert [r for r, _ in entries] == list(range(1, len(entries) + 1))
        assert all(a[1] > b[1] for a, b in zip(entries, entries[1:]))
    assert {line.split()[0] for line in qrels_path(run).read_text().splitlines()} == {r["query_id"] for r in rows}


def test_a_truncated_trec_run_with_a_candidates_file_is_completed_and_counted(queries, tmp_path):
    cands = tmp_path / "candidates.jsonl"
    write_candidates(cands, queries)
    q = queries[0]
    ids = [c.item_id for c in q.candidates]
    # another tool's run: top-3 only, its own tag, scores not ranks decide the order
    (tmp_path / "other.run").write_text(f"{q.query_id} Q0 {ids[4]} 1 0.5 bm25\n{q.query_id} Q0 {ids[2]} 2 0.9 bm25\n")
    (got,) = read_trec_run(tmp_path / "other.run", candidates=cands)
    assert got["method"] == "bm25" and got["permutation"] == 0 and got["input"] == ids
    assert got["output"] == [ids[2], ids[4], ids[0], ids[1], ids[3], ids[5]]
    assert got["repairs"] == {"unknown": 0, "duplicate": 0, "missing": 4}
    assert got["relevant"] == list(q.ground_truth)


@pytest.mark.parametrize(
    "text, side, message",
    [
        ("u0 Q0 a 1 1\n", True, "expected 6 whitespace-separated columns"),
        ("u0 Q0 a 1 high m@0\n", True, "SCORE 'high' is not a number"),
        ("u0 Q0 a 1 1 m@0\n", False, "presented-order file not found"),
    ],
)
def test_bad_trec_files_are_one_line_errors(tmp_path, text, side, message):
    run = tmp_path / "bad.run"
    run.write_text(text)
    if side:
        (tmp_path / "bad.run.presented.jsonl").write_text('{"query_id": "u0", "tag": "m@0", "input": ["a", "b"]}\n')
        (tmp_path / "bad.run.qrels").write_text("u0 0 a 1\n")
    with pytest.raises(ir.InvariRankError, match=message):
        read_trec_run(run)


def write_rank_llm(rows, folder, *, as_array=False):
    """The rows as rank_llm writes requests and results (DataWriter.write_in_jsonl_format / _json_format)."""
    requests, results = [], []
    for r in rows:
        query = {"text": f"user {r['query_id']}", "qid": r["query_id"]}
        requests.append({"query": query, "candidates": [{"docid": d, "score": 0.0, "doc": {}} for d in r["input"]]})
        results.append({"query": query, "candidates": [{"docid": d, "score": 0.0, "doc": {}} for d in r["output"]]})
    paths = []
    for name, records in (("requests", requests), ("results", results)):
        p = folder / f"{name}.{'json' if as_array else 'jsonl'}"
        text = json.dumps(records, indent=2) if as_array else "".join(json.dumps(x) + "\n" for x in records)
        p.write_text(text)
        paths.append(p)
    qrels = folder / "qrels.txt"
    seen = {}
    for r in rows:
        seen.setdefault(r["query_id"], r["relevant"])
    qrels.write_text("".join(f"{q} 0 {d} 1\n" for q, rel in seen.items() for d in rel))
    return paths[0], paths[1], qrels


@pytest.mark.parametrize("as_array", [False, True])
def test_rank_llm_round_trip(rows, tmp_path, as_array):
    one = [r for r in rows if r["method"] == "sgs"]
    requests, results, qrels = write_rank_llm(one, tmp_path, as_array=as_array)
    back = read_rank_llm(results, requests=requests, qrels=qrels, method="sgs")
    assert core(back) == core(one)
    assert ir.evaluate(back, n_bootstrap=20) == ir.evaluate(core(one), n_bootstrap=20)


@pytest.mark.parametrize("lost, message", [("requests", "has no request"), ("results", "have no result")])
def test_rank_llm_pairs_every_request_with_a_result(rows, tmp_path, lost, message):
    one = [r for r in rows if r["method"] == "sgs"]
    requests, results, qrels = write_rank_llm(one, tmp_path)
    cut = requests if lost == "requests" else results
    cut.write_text("".join(cut.read_text().splitlines(keepends=True)[:-1]))  # the last line is lost
    with pytest.raises(ir.InvariRankError, match=message):
        read_rank_llm(results, requests=requests, qrels=qrels)


def test_a_trec_run_must_answer_every_presented_order(rows, tmp_path):
    run = write_trec_run(tmp_path / "r.run", rows)
    last_tag = run.read_text().splitlines()[-1].split()[-1]
    run.write_text(
        "".join(line for line in run.read_text().splitlines(keepends=True) if not line.endswith(f" {last_tag}\n"))
    )
    with pytest.raises(ir.InvariRankError, match="presented orders unanswered"):
        read_trec_run(run)


def harness_records(rows):
    """The rows as the authors' harness exports them: RankingResult.to_dict() in one JSON array."""
    out = []
    for r in rows:
        position = {d: i for i, d in enumerate(r["input"])}
        original = sorted(r["input"])  # any fixed candidate list: indices into it
        items = [
            {
                "candidate_index": original.index(d),
                "item_id": d,
                "score": float(len(r["output"]) - rank),
                "input_position": position[d],
                "relevance": int(d in r["relevant"]),
                "candidate": {"item_id": d},
            }
            for rank, d in enumerate(r["output"])
        ]
        perm = [original.index(d) for d in r["input"]]
        out.append(
            {
                "user_id": r["query_id"],
                "split": "test",
                "permutation": perm,
                "items": items,
                "metadata": {"method": r["method"]},
            }
        )
    return out


def test_authors_harness_round_trip(rows, tmp_path):
    path = tmp_path / "permutation_results.json"
    path.write_text(json.dumps(harness_records(rows), indent=2))
    back = read_authors(path)
    want = [
        {**r, "relevant": [d for d in r["relevant"] if d in r["input"]]} for r in core(rows)
    ]  # labels: candidates only
    assert core(back) == want


def test_authors_ranked_list_records(rows, tmp_path):
    one = [r for r in rows if r["method"] == "zero_shot"]
    records = {}
    for r in one:
        rec = records.setdefault(
            r["query_id"], {"sample_index": len(records), "user_id": r["query_id"], "permutations": []}
        )
        rec["permutations"].append(
            {
                "permutation_index": r["permutation"],
                "input": {"item_ids": r["input"], "relevance": [2 * int(d in r["relevant"]) for d in r["input"]]},
                "output_ranking": {"item_ids": r["output"]},
            }
        )
    path = tmp_path / "ranked.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in records.values()))
    back = read_authors(path, method="zero_shot")
    assert core(back) == [{**r, "relevant": [d for d in r["relevant"] if d in r["input"]]} for r in core(one)]
    with pytest.raises(ir.InvariRankError, match="no relevant item"):
        read_authors(path, min_relevance=3)
