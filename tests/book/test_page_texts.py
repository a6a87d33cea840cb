"""What the book's hand-written pages say: the protocol chapter's deviations table credits the paper only with what
it states (the STELLA_LW calibration size it gives, 150 probing candidate sets with each placement repeated five
times, and no number format, which the paper never names; our own choices stay in the "here" column), and the
introduction's command to open the book is not macOS-only."""

from __future__ import annotations

import re

from tests.support import ROOT


def _deviations() -> dict[str, list[str]]:
    """``{setting: [the paper, the authors' code and configuration, here]}`` of the deviations table."""
    text = (ROOT / "book" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("## Deviations", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and not set(cells[0]) <= {"-", " "} and cells[0] != "setting":
            rows[cells[0]] = cells[1:]
    return rows


def test_the_calibration_size_is_the_papers_own():
    paper = _deviations()["STELLA_LW calibration: its size"][0]
    assert "150" in paper and "five" in paper and "not stated" not in paper


def test_the_paper_is_never_credited_with_a_number_format():
    rows = _deviations()
    paper = rows["number format"][0]
    assert paper == "not stated"
    assert not any(re.search(r"bfloat16|float32|float16|fp16", cells[0]) for cells in rows.values())
    assert "bfloat16" in rows["number format"][2]  # ours, said as ours


def test_the_intro_opens_the_book_on_any_system():
    """The introduction's command to open the built book works beyond macOS (``open`` is macOS-only)."""
    intro = (ROOT / "book" / "intro.md").read_text(encoding="utf-8")
    assert not re.search(r"^open ", intro, re.M)
    assert "python3 -m webbrowser" in intro
