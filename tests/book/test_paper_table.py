"""book/data/paper_table1.csv: the paper's own Table 1, typed from the paper. Checked against the
orderings the paper states about it, and against the table's lines as they appear in the paper's text, kept with
their source in tests/fixtures/paper_table1_source.tsv (so every clone checks them). Opt-in: with
``INVARIRANK_PAPER_TEXT`` set to the paper's text, that excerpt is also checked against the whole text."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from invarirank.compendium import paper_table
from tests.support import ROOT

CSV = ROOT / "book" / "data" / "paper_table1.csv"
METRICS = ["hr@5", "ndcg@5", "ppi", "gpi", "loc"]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return paper_table(CSV)


def test_header_cites_the_paper():
    head = "".join(line for line in CSV.read_text().splitlines(True) if line.startswith("#"))
    assert "10.1145/3773078.3831801" in head and "Table 1" in head


def test_complete_grid_of_cells(table):
    assert len(table) == 24
    assert set(table.dataset) == {"movielens-32m", "amazon-books"}
    assert set(table.method) == {"zero_shot", "bootstrapping", "stella", "sgs"}
    assert table.groupby(["dataset", "model"]).size().eq(4).all()
    assert (table.k == 25).all() and (table.m == 20).all()
    assert table[METRICS].ge(0).all().all() and table[METRICS].le(1).all().all()
    assert table.gpi.le(0.5).all()


def test_orderings_the_paper_states(table):
    """SGS > bootstrapping > zero-shot > STELLA_LW on LOC, the same best first on PPI and GPI (lower is
    better), in all six model-dataset cells; STELLA_LW has the highest HR@5 in all six; all its LOC < 0.13."""
    for _, cell in table.groupby(["dataset", "model"]):
        by = cell.set_index("method")
        assert list(by.loc[["sgs", "bootstrapping", "zero_shot", "stella"], "loc"]) == sorted(by["loc"], reverse=True)
        for metric in ("ppi", "gpi"):
            assert list(by.loc[["sgs", "bootstrapping", "zero_shot", "stella"], metric]) == sorted(by[metric])
        assert by["hr@5"].idxmax() == "stella"
        assert by.loc["stella", "loc"] < 0.13


SOURCE = ROOT / "tests" / "fixtures" / "paper_table1_source.tsv"


def _source_lines() -> list[str]:
    return [line for line in SOURCE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]


def test_source_excerpt_names_the_paper_and_is_in_its_text_when_given():
    head = SOURCE.read_text(encoding="utf-8")
    assert "10.1145/3773078.3831801" in head and "Table 1" in head
    assert len(_source_lines()) == 13  # the header line and 3 models x 4 methods
    path = os.environ.get("INVARIRANK_PAPER_TEXT")
    if path:  # opt-in: the excerpt is verbatim from the paper's text
        text = Path(path).read_text(encoding="utf-8")
        assert "\n".join(_source_lines()) in text


def test_values_equal_the_papers_text(table):
    text = "\n".join(_source_lines())
    models = {
        "Llama-3B": "llama-3.2-3b-instruct",
        "Mistral-7B": "mistral-7b-instruct-v0.3",
        "Qwen-7B": "qwen2.5-7b-instruct",
    }
    methods = {"Zero-shot": "zero_shot", "Bootstrapping": "bootstrapping", "STELLALW": "stella", "SGS": "sgs"}
    seen = 0
    model = None
    for line in text.splitlines():
        cols = [c.strip() for c in line.split("\t")]
        if len(cols) == 12 and (cols[0] in models or (cols[0] == "" and model)) and cols[1] in methods:
            model = models.get(cols[0], model)
            values = [float(v) for v in cols[2:]]
            for dataset, vals in (("movielens-32m", values[:5]), ("amazon-books", values[5:])):
                row = table[(table.dataset == dataset) & (table.model == model) & (table.method == methods[cols[1]])]
                assert len(row) == 1
                assert list(row.iloc[0][METRICS]) == pytest.approx(vals, abs=1e-9), (dataset, model, cols[1])
                seen += 1
    assert seen == 24
