"""The public line, read from the source (``scripts/stability_table.py`` reads it the same way):

* a module whose dotted path has a part starting with ``_`` (``invarirank/runner/_plan.py``) is internal, and an
  internal module has no ``__all__``;
* the names a public module lists in ``__all__`` are its stable names: each has a ``Stability: full (...)`` or
  ``Stability: caller (...)`` line (its docstring, or the ``#:`` comment above a constant), and the book's API page
  shows them in its stability table (``tests/book/test_api_table.py``);
* ruff's ``import-private-name`` rule (PLC2701) keeps internal modules and names out of reach from outside the
  package (``pyproject.toml``).
"""

from __future__ import annotations

import tomllib

from tests.support import ROOT
from tests.support.scripts import load_script

table = load_script("stability_table")


def _modules(root=ROOT) -> list[str]:
    return [".".join(p.relative_to(root).with_suffix("").parts) for p in sorted((root / "invarirank").rglob("*.py"))]


def test_no_internal_module_has_an_all():
    internal = [m.removesuffix(".__init__") for m in _modules() if not table.is_public(m)]
    assert internal, "no module is internal by name"
    assert [m for m in internal if table.exported(m) is not None] == []


def test_every_name_of_a_public_all_has_a_stability_line():
    entries = table.entries()
    assert {"invarirank.read_candidates", "invarirank.audit.from_order", "invarirank.types.Scorer"} <= {
        e.qualname for e in entries
    }
    assert [e.qualname for e in entries if e.stability not in ("full", "caller")] == []


def test_the_package_and_every_subpackage_export_only_stable_names():
    packages = [m.removesuffix(".__init__") for m in _modules() if m.endswith("__init__")]
    assert "invarirank" in packages and "invarirank.runner" in packages
    unstable = [
        f"{package}.{name}"
        for package in packages
        for name in table.exported(package) or []
        if table.stability(table.definition(package, name)[1])[0] not in ("full", "caller")
    ]
    assert unstable == []


def test_a_missing_stability_line_and_an_all_in_an_internal_module_are_found(tmp_path):
    pkg = tmp_path / "invarirank"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('from .sub._impl import helper, stable\n__all__ = ["stable", "helper"]\n')
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_impl.py").write_text(
        '__all__ = ["helper"]\n\n'
        'def stable():\n    """Doc.\n\n    Stability: caller (a thing\n    on two lines)."""\n\n\n'
        'def helper():\n    """No line."""\n'
    )
    entries = {e.qualname: (e.stability, e.what) for e in table.entries(tmp_path)}
    assert entries == {"invarirank.stable": ("caller", "a thing on two lines"), "invarirank.helper": (None, None)}
    assert table.exported("invarirank.sub._impl", tmp_path) == ["helper"]
    assert not table.is_public("invarirank.sub._impl") and table.is_public("invarirank.sub.__init__")


def test_ruff_checks_private_imports():
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert "PLC2701" in lint["select"] and lint["preview"] and lint["explicit-preview-rules"]
    assert all(
        "PLC2701" not in ignored for path, ignored in lint["per-file-ignores"].items() if path.startswith("invarirank")
    )
