"""The paper's claims on a run as the book shows them (invarirank.compendium._verdicts and .claim_tables): read from
metrics.json (or judged from its comparisons), never typed; Table 1's marks follow each pair's state; the sentence
that says why five queries cannot resolve anything is computed from the run; the switch between grids only takes
complete runs."""

from __future__ import annotations

import copy
import gzip
import json
import shutil

import pytest

from invarirank import compendium as C
from invarirank.evaluation import judge_claims
from invarirank.evaluation._claims import paper_claim


def _resolve(run: C.Run, claim: str, direction: str) -> C.Run:
    """A copy of ``run`` whose comparisons resolve every pair of ``claim`` in ``direction`` ("as claimed" or
    "reversed"): raw p 1e-5 and a difference of that sign (the one judge then decides)."""
    r = copy.deepcopy(run)
    c = paper_claim(claim)
    for better, worse in c.pairs:
        by = r.metrics["comparisons"][c.metric]
        a, b = (better, worse) if worse in by.get(better, {}) else (worse, better)
        rec = by[a][b]
        gain = 1.0 if direction == "as claimed" else -1.0
        sign = gain * (1 if c.higher_is_better else -1) * (1 if a == better else -1)
        rec.update(p=1e-5, mean_diff=sign * max(abs(rec["mean_diff"]), 0.01))
    return r


def test_claims_are_judged_from_the_comparisons_never_read_from_the_file(simulated_run):
    assert "claims" not in simulated_run.metrics  # evaluate judges no claim
    judged = copy.deepcopy(simulated_run)
    judged.metrics["claims"] = {"loc_order": {"verdict": "reproduced", "pairs": []}}  # a stale stored verdict
    assert C.run_claims(judged) == judge_claims(simulated_run.metrics["comparisons"])
    old = copy.deepcopy(judged)
    del old.metrics["comparisons"]  # a schema-1 metrics.json: no verdict, never a guessed one
    assert C.run_claims(old) == {}
    assert "no verdicts" in C.resolution_sentence(old)
    assert C.claims_table([old]) is None and C.pairwise_table(old) is None
    assert "No run shown here" in C.verdicts_html([old])


def test_five_queries_cannot_resolve_and_the_page_says_why(simulated_run):
    assert simulated_run.n_queries == 5
    assert C._verdicts.smallest_p(5) == pytest.approx(0.0625)
    assert C._verdicts.smallest_p(40, 10_000) == pytest.approx(1 / 10_001)
    claims = C.run_claims(simulated_run).values()
    assert not any(p["resolved"] for v in claims for p in v["pairs"])  # nothing resolved, nothing reproduced
    assert "reproduced" not in {v["verdict"] for v in claims} and not any(v["resolved_against"] for v in claims)
    text = C.resolution_sentence(simulated_run)
    assert "n = 5 queries" in text and "2/2⁵ = 0.0625" in text and "no pair of methods can be resolved" in text
    assert "A pair needs at least 6 queries, a claim of 3 pairs at least 7 queries" in text


def test_verdict_sentences_follow_the_pairs(simulated_run):
    verdict = C.run_claims(simulated_run)["loc_order"]
    sentence = C.verdict_sentence(verdict)
    assert sentence.startswith(f"LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW — {verdict['verdict']}: 0 of 3 pairs")
    reversed_ = [p for p in verdict["pairs"] if p["direction"] == "reversed"]
    assert (verdict["verdict"] == "contradicted") == bool(reversed_)
    for p in reversed_:  # named "the other way", with no queries for 80% power
        part = sentence.split(f"{C._labels.method_label(p['better'])} vs {C._labels.method_label(p['worse'])} (", 1)[1]
        assert part.startswith("the other way") and "80% power" not in part.split(")")[0]
    good = C.run_claims(_resolve(simulated_run, "loc_order", "as claimed"))["loc_order"]
    assert "— reproduced: 3 of 3 pairs resolved in the paper's direction (SGS vs bootstrapping" in C.verdict_sentence(
        good
    )
    bad = C.run_claims(_resolve(simulated_run, "ppi_order", "reversed"))["ppi_order"]
    assert "— contradicted: 0 of 3 pairs" in C.verdict_sentence(
        bad
    ) and "resolved against the paper: SGS vs" in C.verdict_sentence(bad)


def test_table1_marks_each_claimed_pair_on_the_better_methods_row(simulated_run):
    plain = C.table1([simulated_run], styled=False)
    claims = C.run_claims(simulated_run)

    def mark(claim: str, worse: str) -> str:  # "○ vs X", with "other way" for an unresolved wrong-sign pair
        p = next(p for p in claims[claim]["pairs"] if p["worse"] == worse)
        return f"○ vs {C._labels.method_label(worse)}" + (", other way" if p["direction"] == "reversed" else "")

    assert plain.loc["SGS", "LOC"].endswith(f"({mark('loc_order', 'bootstrapping')})")
    assert plain.loc["STELLA_LW", "HR@5"].endswith(
        "(" + "; ".join(mark("hr5_stella_best", m) for m in ("zero_shot", "bootstrapping", "sgs")) + ")"
    )
    assert "(" not in plain.loc["STELLA_LW", "LOC"] and "(" not in plain.loc["SGS", "nDCG@5"]
    flipped = C.table1([_resolve(simulated_run, "loc_order", "reversed")], styled=False)
    assert flipped.loc["SGS", "LOC"].endswith("(✗ vs bootstrapping)")
    assert (
        C.table1([_resolve(simulated_run, "loc_order", "as claimed")], styled=False)
        .loc["zero-shot", "LOC"]
        .endswith("(● vs STELLA_LW)")
    )
    styled = C.table1([simulated_run])
    assert f"{mark('loc_order', 'bootstrapping')}</span>" in styled.to_html() and "Marks:" in styled.caption
    assert "(" not in C.table1([simulated_run], styled=False, marks=False).loc["SGS", "LOC"]


def test_claim_tables_hold_the_stored_verdicts_and_pairs(simulated_run):
    claims = C.run_claims(simulated_run)
    table = C.claims_table([simulated_run], styled=False)
    assert list(table.iloc[:, 0]) == [v["verdict"] for v in claims.values()]
    pairs = C.pairwise_table(simulated_run, styled=False)
    assert len(pairs) == sum(len(v["pairs"]) for v in claims.values())
    first = claims["loc_order"]["pairs"][0]
    row = pairs.loc[("LOC: SGS ≻ bootstrapping ≻ zero-shot ≻ STELLA_LW", "SGS vs bootstrapping")]
    assert row["difference [95% CI]"].startswith(f"{first['mean_diff']:+.3f} [".replace("-", "−"))
    assert "-" not in "".join(pairs["difference [95% CI]"])  # true minus signs only
    assert row["Holm p"] == f"{first['p_holm']:.3f}" and row["state"].startswith("○ unresolved")
    assert row["state"].endswith("the other way") == (first["direction"] == "reversed")
    if first["direction"] == "reversed":  # no power figure for a difference of the wrong sign
        assert row["queries for 80% power"] == "–"
    else:  # never below what 3 pairs need
        assert row["queries for 80% power"] == f"{max(first['queries_80'], 7):,}"
    assert [C._verdicts.fewest_queries(m) for m in (1, 2, 3)] == [6, 7, 7]
    html = C.verdicts_html([simulated_run])
    for name, v in claims.items():
        assert f'data-claim="{name}" data-verdict="{v["verdict"]}"' in html


def test_the_grid_shown_needs_every_run_complete(simulated_run, tmp_path):
    for name in ("main", "sweep"):  # published run folders (observations gzipped)
        folder = tmp_path / "evidence" / name
        shutil.copytree(simulated_run.path, folder, ignore=shutil.ignore_patterns(".*", "observations.jsonl"))
        (folder / "observations.jsonl.gz").write_bytes(gzip.compress(simulated_run.observations.read_bytes()))
    runs = (("main", 40), ("sweep", 40), ("other", 20))
    evidence = C.GridChoice("evidence", "grid-evidence.yaml", "main", ("main", "sweep"), runs)
    paper = C.GridChoice("paper-cpu", "grid-paper-cpu.yaml", "main", ("main", "sweep"), runs)
    assert C.grid_to_show(tmp_path, [evidence], "default") == ("evidence", {})
    # the first complete choice wins; the ones passed over say what they miss
    assert C.grid_to_show(tmp_path, [paper, evidence], "default") == ("evidence", {"paper-cpu": ["main", "sweep"]})
    text = C.shown_grid_sentence("evidence", [paper, evidence], "default", {"paper-cpu": ["main", "sweep"]})
    assert text.startswith(
        "Table 1 and Figures 1–2 come from the evidence grid (grid-evidence.yaml): its main run "
        "and K sweep (main, sweep) are complete"
    )
    assert "The paper-cpu grid's main run and K sweep (grid-paper-cpu.yaml) are not all complete" in text
    assert "missing: main, sweep" in text and text.endswith("The page switches to it once they are.")
    for f in ("observations.jsonl.gz", "metrics.json"):  # the sweep keeps only its manifest and a shards/ folder
        (tmp_path / "evidence" / "sweep" / f).unlink(missing_ok=True)
    (tmp_path / "evidence" / "sweep" / "shards").mkdir()
    assert C.grid_to_show(tmp_path, [evidence], "default") == ("default", {"evidence": ["sweep"]})
    assert C.grid_to_show(tmp_path, [paper, evidence], "default") == (
        "default",
        {"paper-cpu": ["main", "sweep"], "evidence": ["sweep"]},
    )
    assert [r.name for r in C.collect_runs(tmp_path)] == ["main"]  # never shown
    nothing = C.GridChoice("evidence", "grid-evidence.yaml", "main", (), runs)
    assert C.grid_to_show(tmp_path, [nothing], "default") == ("default", {"evidence": []})
    assert C.grid_to_show(tmp_path, [], "default") == ("default", {})
    text = C.shown_grid_sentence("default", [evidence], "default", {"evidence": ["sweep"]})
    assert "from the default grid" in text and "missing: sweep" in text
    itself = C.shown_grid_sentence("evidence", [evidence], "evidence", {"evidence": ["sweep"]})
    assert itself == (
        "Table 1 and Figures 1–2 come from the evidence grid. Its main run and K sweep are not all "
        "complete under results/evidence/ (missing: sweep); the page shows its finished runs."
    )
    two = C.shown_grid_sentence(
        "default", [paper, evidence], "default", {"paper-cpu": ["main", "sweep"], "evidence": ["sweep"]}
    )
    assert two.count("are not all complete") == 2 and two.endswith("whose runs are all complete.")
    assert C.committed_queries(tmp_path, "evidence", "sweep") == 0  # an empty shards/ folder
    shard = tmp_path / "evidence" / "sweep" / "shards" / "00000-abc"
    shard.mkdir()
    (shard / "shard.json").write_text(json.dumps({"query_ids": ["u1", "u2", "u3"]}))
    assert C.committed_queries(tmp_path, "evidence", "sweep") == 0  # not a whole shard yet
    (shard / "records.jsonl").write_text("")
    (shard / "volatile.json").write_text("{}")
    assert C.committed_queries(tmp_path, "evidence", "sweep") == 3
    progress = C.shard_progress(tmp_path, [evidence], {"evidence": ["sweep"]})
    assert progress == {"evidence": {"sweep": (3, 40)}}
    text = C.shown_grid_sentence("default", [evidence], "default", {"evidence": ["sweep"]}, progress)
    assert "missing: sweep (3 of 40 queries committed in shards)" in text


def test_a_run_without_the_claims_methods_says_why_it_has_no_verdict(simulated_run):
    """The K = 50 run (zero-shot and bootstrapping) said "no paired comparisons of the claims' methods" above a claims
    table with two verdicts: it has comparisons, and no claim's pairs; the sentence names its methods."""
    two = copy.deepcopy(simulated_run)
    two.methods = ["zero_shot", "bootstrapping"]
    for by_a in two.metrics["comparisons"].values():  # only the two methods' comparisons
        for a in list(by_a):
            by_a[a] = {b: v for b, v in by_a[a].items() if {a, b} <= {"zero_shot", "bootstrapping"}}
    text = C.resolution_sentence(two)
    assert "this run alone judges none of the paper's method claims (it has zero-shot, bootstrapping;" in text
    assert "no verdicts" not in text


@pytest.mark.parametrize(
    ("p", "value", "sentence"),
    [
        (1.0, "1.000", "Holm\u00a0p\u00a0=\u00a01.000"),
        (0.0343, "0.034", "Holm\u00a0p\u00a0=\u00a00.034"),
        (0.001, "0.001", "Holm\u00a0p\u00a0=\u00a00.001"),
        (0.0006, "< 0.001", "Holm\u00a0p\u00a0<\u00a00.001"),
        (1 / 10_001, "< 0.001", "Holm\u00a0p\u00a0<\u00a00.001"),
    ],
)
def test_every_p_value_is_written_with_one_precision(p, value, sentence):
    """... and with non-breaking spaces, so that "Holm p <" never ends a line."""
    assert C._labels.p_value(p) == value and C._labels.p_equals(p, "Holm p") == sentence


def test_no_page_text_writes_a_p_value_in_another_precision(simulated_run):
    """Every p in the claims' sentences and the pairs' table goes through ``p_value``: three decimals or "< 0.001"
    (the pages once mixed "Holm p 1", "0.0003" and "0.000305")."""
    import re

    pairs = C.pairwise_table(simulated_run, styled=False)
    for column in ("p", "Holm p"):
        assert all(re.fullmatch(r"\d\.\d{3}|< 0\.001", v) for v in pairs[column]), list(pairs[column])
    text = " ".join(C._section5._pair_text(p) for v in C.run_claims(simulated_run).values() for p in v["pairs"])
    text = text.replace(C._labels.NBSP, " ")
    found = re.findall(r"Holm p( = | < |\s)(\S+?)[;)]", text)
    assert found and all(re.fullmatch(r"( = \d\.\d{3})|( < 0\.001)", sep + v) for sep, v in found), found
