"""Deprecation keeps its promise: every deprecated form names a removal release later than the package's version
(a release that reaches it fails here until the form is gone), and each ``python -m`` alias still works while
warning that it goes."""

from __future__ import annotations

import ast
import re
import runpy
import sys

import pytest

import invarirank
from tests.support import ROOT

#: the ``python -m`` aliases of the command line, with the subcommand each stands for
ALIASES = {
    "invarirank.grid": "grid",
    "invarirank.assets": "assets",
    "invarirank.llm.models": "models",
    "invarirank.cli": None,
}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def removal_promises() -> list[tuple[str, str]]:
    """``(file:line, removed_in)`` of every ``deprecated(...)`` and ``deprecated_command(...)`` call in the
    package."""
    found = []
    for path in sorted((ROOT / "invarirank").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("deprecated", "deprecated_command"):
                kw = {k.arg: k.value for k in node.keywords}
                value = kw["removed_in"].value if isinstance(kw.get("removed_in"), ast.Constant) else ""
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", str(value)))
    return found


def test_every_deprecated_form_names_a_later_release():
    promises = removal_promises()
    assert len(promises) >= len(ALIASES)  # one per alias at least
    late = [(where, v) for where, v in promises if not v or _version(v) <= _version(invarirank.__version__)]
    assert not late, f"remove these deprecated forms (their release {invarirank.__version__} has come): {late}"


# runpy re-executes a module the package has already imported (the alias's own import path): harmless here
@pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")
@pytest.mark.parametrize("module", sorted(ALIASES))
def test_the_alias_still_works_and_warns(module, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [module, "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module(module, run_name="__main__", alter_sys=False)
    assert done.value.code == 0
    out = capsys.readouterr()
    warning = out.err.strip().splitlines()
    assert len(warning) == 1 and re.match(
        rf"invarirank: warning: python -m {re.escape(module)} is deprecated and will be removed in invarirank "
        r"\d+\.\d+\.\d+; use invarirank",
        warning[0],
    )
    usage = out.out
    assert usage.startswith("usage: invarirank")
    if ALIASES[module]:
        assert f"invarirank {ALIASES[module]}" in usage.splitlines()[0]


def test_a_deprecated_name_warns_with_its_replacement_and_release():
    from invarirank._deprecation import deprecated

    with pytest.warns(
        FutureWarning, match=r"^old_name is deprecated and will be removed in invarirank 9\.9\.9; use new"
    ):
        deprecated("old_name", "new_name", removed_in="9.9.9")
