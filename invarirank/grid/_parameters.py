"""The notebooks' parameters as papermill injected them, checked in one line (issue 39).

Papermill assigns every parameter it is given in a cell after the notebook's ``parameters`` cell and, for a name the
notebook does not declare, only logs a warning of its own: a misspelt ``n_querys=50`` would run the default. Each
notebook therefore calls :func:`check_parameters` first thing after its parameters cell: the declared parameters and
their defaults are read from the notebook's source (``notebooks/<name>.py``, the jupytext percent file: its cell
tagged ``parameters``), and the names and values in the kernel's namespace are held to them.

Rules: a name that is not declared is an error; a value must have its default's type (``bool`` for a bool default,
an integer for an int default, a number for a float default, a string, a list, a mapping) or be ``None`` (which
the notebooks read as "the default" or "all"); a ``None`` default admits any value (checked where it is used: e.g.
the run schema, ``RunConfig``); a parameter named
``*_dir`` that names an existing file (not a folder) is an error. One :class:`~invarirank.errors.InvariRankError`
line names the notebook, the parameter and what was expected.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvariRankError

#: names IPython puts in a kernel's namespace (never parameters)
_KERNEL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


def declared_parameters(source: str | Path) -> dict[str, Any]:
    """The parameters a jupytext percent notebook declares: name → default (a literal; a default that is not a
    literal reads as None) of the assignments in its cell tagged ``parameters``."""
    text = Path(source).read_text(encoding="utf-8")
    cells = text.split("\n# %%")
    cell = next((c for c in cells[1:] if c.split("\n", 1)[0].count('"parameters"')), None)
    if cell is None:
        raise InvariRankError(f"{source}: no cell tagged 'parameters'")
    out: dict[str, Any] = {}
    for node in ast.parse(cell.split("\n", 1)[1] if "\n" in cell else "").body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = None
    return out


def _expected(default: Any) -> tuple[tuple[type, ...], str] | None:
    if default is None:
        return None
    if isinstance(default, bool):
        return (bool,), "True or False"
    if isinstance(default, int):
        return (int,), "an integer"
    if isinstance(default, float):
        return (int, float), "a number"
    if isinstance(default, str):
        return (str,), "a string"
    if isinstance(default, (list, tuple)):
        return (list, tuple), "a list"
    if isinstance(default, Mapping):
        return (Mapping,), "a mapping"
    return None


def check_parameters(namespace: Mapping[str, Any], notebook: str, source: str | Path | None = None) -> None:
    """Check the parameters in ``namespace`` (a notebook's ``globals()``, right after its parameters cell) against
    those ``notebooks/<notebook>.py`` declares (``source`` overrides the file); see the module docstring."""
    if source is None:
        from ..store import project_root

        try:
            source = project_root() / "notebooks" / f"{notebook}.py"
        except InvariRankError:  # a notebook saved outside a checkout (the lab's student copy) runs by hand, not
            return  # through papermill: there is no declared parameters cell to check against
    declared = declared_parameters(source)
    where = f"notebooks/{notebook}"
    for name, value in namespace.items():
        if name.startswith("_") or name in _KERNEL_NAMES or name in declared:
            continue
        if callable(value) or type(value).__name__ == "module":
            continue
        raise InvariRankError(
            f"{where}: unknown parameter {name!r} (given to papermill); expected some of {', '.join(declared)}"
        )
    for name, default in declared.items():
        if name not in namespace:
            continue
        value, expected = namespace[name], _expected(default)
        if expected is None or value is None:
            continue
        types, what = expected
        if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
            raise InvariRankError(f"{where}: parameter {name!r} = {value!r}, expected {what} (default {default!r})")
    for name, value in namespace.items():
        if name in declared and name.endswith("_dir") and isinstance(value, str) and Path(value).is_file():
            raise InvariRankError(f"{where}: parameter {name!r} = {value!r} is a file, expected a folder")
