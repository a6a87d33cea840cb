"""The paper-scale chapter's cost table, as its code cell renders it: thousands separators on passes and tokens,
one decimal on hours, three significant digits on seconds per pass (two Styler.format calls used to reset the
first one, leaving "280000" and "0.016100")."""

from __future__ import annotations

import ast
import re

from tests.support import ROOT


def _cost_cell() -> str:
    text = (ROOT / "book" / "paper_scale.md").read_text(encoding="utf-8")
    cells = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", text, flags=re.S)
    cell = next(c for c in cells if "grid_cost_table" in c)
    return "\n".join(line for line in cell.splitlines() if not line.startswith(":tags:"))


def test_cost_table_formats_every_number_column(monkeypatch):
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: None)
    monkeypatch.chdir(ROOT / "book")
    tree = ast.parse(_cost_cell())
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), "the cell ends with the table it shows"
    scope: dict[str, object] = {}
    exec(compile(tree, "paper_scale.md", "exec"), scope)
    html = eval(compile(ast.Expression(last.value), "paper_scale.md", "eval"), scope).to_html()
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    assert cells and not any(re.fullmatch(r"\d{4,}", c) for c in cells), cells[:12]  # 280000 → 280,000
    assert not any(re.fullmatch(r"\d+\.\d{5,}", c) for c in cells), cells[:12]  # no 0.016100
    assert any(re.fullmatch(r"\d{1,3}(,\d{3})+", c) for c in cells)
