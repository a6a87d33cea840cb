"""The notebooks: jupytext percent sources (notebooks/*.py) and their paired .ipynb (committed without
outputs) must not drift apart; each has a ``parameters`` cell and holds narrative and calls only."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jupytext
import pytest

from tests.support import ROOT  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
EXPECTED = {"data", "rerank", "results", "lab", "audit"}


def _normalised(nb: dict) -> dict:
    """A notebook without cell ids (jupytext draws new random ids on every conversion)."""
    nb = json.loads(json.dumps(nb))
    for cell in nb["cells"]:
        cell.pop("id", None)
    return nb


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith("%") else line for line in source.splitlines())


def test_every_expected_notebook_has_a_source():
    assert EXPECTED <= {p.stem for p in NOTEBOOKS}


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_equals_jupytext_conversion_of_py(source: Path):
    paired = source.with_suffix(".ipynb")
    assert paired.is_file(), f"{paired.name} missing: run `make notebooks`"
    expected = json.loads(jupytext.writes(jupytext.read(source), fmt="ipynb"))
    actual = json.loads(paired.read_text(encoding="utf-8"))
    assert _normalised(actual) == _normalised(expected), (
        f"{paired.name} drifted from {source.name}: run `make notebooks` (jupytext --sync)"
    )


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_ipynb_has_no_outputs(source: Path):
    nb = json.loads(source.with_suffix(".ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_one_parameters_cell_and_a_title(source: Path):
    nb = jupytext.read(source)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and tagged[0].cell_type == "code"
    first_md = next(c for c in nb.cells if c.cell_type == "markdown")
    assert first_md.source.startswith("# "), "the first Markdown cell must hold the page title"


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_hold_narrative_and_calls_only(source: Path):
    """No function or class definitions, no lambdas and no imports of modelling libraries: the
    algorithms live in the package."""
    nb = jupytext.read(source)
    code = "\n".join(_without_magics(c.source) for c in nb.cells if c.cell_type == "code")
    tree = ast.parse(code)
    for node in ast.walk(tree):
        assert not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)), (
            f"{source.name}: defines {type(node).__name__} at line {node.lineno}"
        )
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top in {"invarirank", "myst_nb", "IPython", "pathlib"}, f"{source.name}: imports {name}"


@pytest.mark.parametrize("source", NOTEBOOKS, ids=lambda p: p.stem)
def test_figures_render_inline_whatever_mplbackend_says(source: Path):
    """`make` exports MPLBACKEND=Agg, under which a kernel shows no figure: notebooks with figures
    switch to the inline backend themselves."""
    code = "\n".join(c.source for c in jupytext.read(source).cells if c.cell_type == "code")
    if "figure" in code or "fig =" in code:
        assert "%matplotlib inline" in code


def test_lab_notebook_imports_nothing_torch_related():
    code = "\n".join(c.source for c in jupytext.read(ROOT / "notebooks" / "lab.py").cells if c.cell_type == "code")
    for word in ("torch", "transformers", "implicit", "retrieval", "llm.span", "llm.choice"):
        assert word not in code
