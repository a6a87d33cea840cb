"""The Python API page's stability table is the one ``scripts/stability_table.py`` writes from the code's
``Stability:`` lines (run the script after changing a stable name or its line)."""

from __future__ import annotations

import re

from tests.support import ROOT
from tests.support.scripts import load_script

table = load_script("stability_table")


def test_the_committed_table_is_the_generated_one():
    page = (ROOT / "book" / "reference" / "api.md").read_text(encoding="utf-8")
    assert table.page_with_table(page) == page, "stale: run python scripts/stability_table.py"


def test_the_table_lists_each_stable_name_once_with_its_stability():
    text = table.table()
    rows = [line for line in text.splitlines() if line.startswith("| `invarirank.")]
    names = [n for row in rows for n in re.findall(r"`(invarirank\.[\w.]+)`", row.split(" | ")[0])]
    assert len(names) == len(set(names))
    assert {e.qualname for e in table.entries() if e.stability} == set(names)
    assert "| `invarirank.evaluate` | observations → the `metrics.json` dictionary | full |" in rows
    assert any(r.startswith("| `invarirank.types.Scorer` |") and r.endswith("| caller |") for r in rows)
