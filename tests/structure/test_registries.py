"""One list each: methods live in ``invarirank/methods/registry.py``, scorer kinds in ``invarirank/llm/factory.py``.
No other source literal (a tuple, list, set or dict of names, or a comma-joined string) names two or more of them.
The one exception is the home of the paper's *findings* about its methods (``invarirank/evaluation/_claims.py``:
orderings such as SGS > bootstrapping > zero-shot > STELLA_LW are results a run is checked against, not a list of
methods); everything else reads those from there."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from invarirank.llm.factory import SCORER_KINDS
from invarirank.methods.registry import METHODS
from tests.support import ROOT

HOMES = {
    "methods": {ROOT / "invarirank" / "methods" / "registry.py", ROOT / "invarirank" / "evaluation" / "_claims.py"},
    "scorers": {ROOT / "invarirank" / "llm" / "factory.py"},
}
NAMES = {"methods": set(METHODS), "scorers": set(SCORER_KINDS)}


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if isinstance(node, ast.Dict):
        return [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[\w,]+", node.value):
        return node.value.split(",")
    return []


def literals_naming_several(path: Path, names: set[str]) -> list[str]:
    """``file:line`` of every literal in ``path`` that names two or more of ``names``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exports = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
    }  # names of functions
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{where}:{node.lineno}"
        for node in ast.walk(tree)
        if id(node) not in exports and len(set(_strings(node)) & names) >= 2
    ]


def test_no_second_list_of_methods_or_scorers():
    bad = []
    for path in sorted((ROOT / "invarirank").rglob("*.py")):
        for kind, names in NAMES.items():
            if path in HOMES[kind]:
                continue
            bad += literals_naming_several(path, names)
    assert not bad, f"a second list of methods or scorers (read them from their registry): {bad}"


def test_the_check_finds_a_list(tmp_path):
    p = tmp_path / "probe.py"  # never written into the package
    p.write_text('X = ("zero_shot", "sgs")\nY = "span,choice"\n__all__ = ["zero_shot", "sgs"]\n')
    assert literals_naming_several(p, NAMES["methods"]) == [f"{p}:1"]  # __all__ names functions: not a list
    assert literals_naming_several(p, NAMES["scorers"]) == [f"{p}:2"]


def test_registries_hold_what_the_paper_compares():
    assert METHODS == ("zero_shot", "bootstrapping", "stella", "sgs")
    assert set(SCORER_KINDS) == {"span", "choice", "simulated"}


def test_the_registry_declares_what_each_method_needs():
    from invarirank.methods.registry import REGISTRY, calibrated_method, method, shared_passes, uncalibrated

    # at most one method has a calibrator: a run's calibration files and calibrations[K] hold one method's
    assert [m.name for m in REGISTRY if m.calibrator is not None] == ["stella"]
    assert calibrated_method(["sgs", "stella"]) is method("stella") and calibrated_method(["sgs"]) is None
    assert uncalibrated() == ("zero_shot", "bootstrapping", "sgs")
    matrix = object()
    assert method("stella").options(matrix) == {"matrix": matrix} and method("sgs").options(None) == {}
    # STELLA_LW's updates 1-2 present bootstrapping's two shuffles: shared only when both run
    assert shared_passes({"bootstrapping": 3, "stella": 10}) == 2
    assert shared_passes({"bootstrapping": 3, "stella": 2}) == 1  # stopped after one shuffle
    assert shared_passes({"sgs": 6, "stella": 10}) == 0
