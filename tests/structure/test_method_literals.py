"""No method is special-cased by name outside its registry: a string literal equal to a registered method's name
appears only in ``invarirank/methods/`` (where the methods and their registry live) and in the home of the paper's
claims about them (``invarirank/evaluation/_claims.py`` and the book's §5 judge, ``invarirank/compendium/
section5.py``: orderings such as SGS > bootstrapping are findings a run is checked against). Everything else asks
the registry what a method needs (``calibrator``, ``options``, ``shares``), so that adding a calibrated method, or
renaming one, touches one file."""

from __future__ import annotations

import ast
from pathlib import Path

from invarirank.methods.registry import METHODS
from tests.support import ROOT

#: where a method's name may be written out (relative to the repository root)
HOMES = ("invarirank/methods/", "invarirank/evaluation/_claims.py", "invarirank/compendium/_section5.py")


def method_literals(path: Path, names: set[str]) -> list[int]:
    """Line numbers of the string constants in ``path`` equal to one of ``names`` (an f-string's literal parts
    included; a docstring or message that mentions a method among other words is not such a constant)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in names)


def literals_outside_homes(package: Path) -> list[str]:
    """``file:line`` of every method-name literal under ``package`` (a folder named ``invarirank``) outside the
    :data:`HOMES`."""
    found = []
    for path in sorted(package.rglob("*.py")):
        where = path.relative_to(package.parent).as_posix()
        if any(where.startswith(home) for home in HOMES):
            continue
        found += [f"{where}:{line}" for line in method_literals(path, set(METHODS))]
    return found


def test_no_method_name_outside_the_registry_and_the_claims():
    found = literals_outside_homes(ROOT / "invarirank")
    assert found == [], (
        f"{len(found)} method name literal(s) outside methods/ and the claims (ask the registry): {found}"
    )


def test_the_count_finds_a_special_case(tmp_path):
    package = tmp_path / "invarirank"  # never written into the repository
    (package / "runner").mkdir(parents=True)
    (package / "methods").mkdir()
    (package / "runner" / "_phases.py").write_text(
        '"""Mentions stella in prose: not a literal."""\nif "stella" in methods:\n    opts = {"matrix": m}\n'
    )
    (package / "methods" / "registry.py").write_text('NAME = "stella"\n')
    assert literals_outside_homes(package) == ["invarirank/runner/_phases.py:2"]
