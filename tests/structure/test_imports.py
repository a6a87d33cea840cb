"""The house's import rules, read from the source with ``ast`` (module-level AND function-level imports; the
``if __name__ == "__main__":`` alias blocks of entry points are not imports of the package):

* core = ``types``, ``orders``, ``io`` (with ``yaml_reader``), ``errors``, ``locks``, ``candidates`` (the candidates
  file format every stage hands on) and ``assets`` (cache locations of the embedded data and models): they import
  only the core;
* ``data``, ``llm``, ``methods``, ``evaluation`` import only the core; ``retrieval`` also ``data``;
* ``store`` imports the core and ``evaluation``; ``runner`` every layer below plus ``store``;
* ``audit`` (adapters for outside rerankers, importers) imports the core, ``methods``, ``evaluation``, ``store`` and
  the prompt texts ``llm.prompts`` (a served model is shown the project's own prompt) — never the rest of ``llm``;
* ``grid`` imports the core, ``runner`` and ``store``; ``compendium`` (with the lab) the core, ``store``,
  ``evaluation`` and the method registry's labels — never ``runner``, ``llm`` or torch;
* ``cli``/``commands`` may import anything. No module import cycle anywhere.

And the torch-free parts stay torch-free: ``invarirank.evaluation``, ``invarirank.compendium`` and the lab import
with ``torch`` made unimportable.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import ROOT

PKG = ROOT / "invarirank"
CORE = {
    "types",
    "orders",
    "io",
    "yaml_reader",
    "errors",
    "deprecation",
    "candidates",
    "assets",
    "locks",
    "limits",
    "__init__",
}
#: modules that other layers may import on their own, without their layer: module → its layer
PARTS = {"invarirank.methods.registry": "methods", "invarirank.llm._prompts": "llm"}
ALLOWED = {
    "core": {"core"},
    "data": {"core"},
    "llm": {"core"},
    "methods": {"core"},
    "evaluation": {"core"},
    "retrieval": {"core", "data"},
    "store": {"core", "evaluation"},
    "runner": {"core", "data", "retrieval", "llm", "methods", "evaluation", "store"},
    "audit": {"core", "methods", "evaluation", "store", "llm.prompts"},
    "grid": {"core", "runner", "store"},
    "compendium": {"core", "store", "evaluation", "methods.registry"},
    "cli": {
        "core",
        "data",
        "retrieval",
        "llm",
        "methods",
        "evaluation",
        "store",
        "runner",
        "grid",
        "compendium",
        "audit",
        "cli",
    },
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def public_path(module: str) -> str:
    """``module`` without the ``_`` of its internal parts (``invarirank.llm._prompts`` → ``invarirank.llm._prompts``):
    a layer is named by what its modules do, whether or not they are internal."""
    return ".".join(p[1:] if p.startswith("_") and not p.startswith("__") else p for p in module.split("."))


def layer(module: str) -> str:
    module = public_path(module)
    parts = module.split(".")[1:] or ["__init__"]
    head = parts[0]
    if parts[-1] == "__main__":  # `python -m` entry points are the command line's aliases
        return "cli"
    if head in CORE:
        return "core"
    if head == "compendium":
        return "compendium"
    if head in ("cli", "commands"):
        return "cli"
    if module in {public_path(m) for m in PARTS}:
        return module.split(".", 1)[1]
    return head


def _is_main_block(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def from_target(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from X import ...`` in ``package`` imports from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path) -> set[str]:
    """Every invarirank module ``path`` imports (anywhere but an ``if __name__ == ...`` block), resolved to the
    module file that is imported (``from pkg import sub`` → ``pkg.sub`` when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: set[str] = set()
    front_door = me == "invarirank"  # its names load lazily; its TYPE_CHECKING imports never run

    def visit(node: ast.AST) -> None:
        if _is_main_block(node) or (front_door and _is_type_checking_block(node)):
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("invarirank"))
        elif isinstance(node, ast.ImportFrom):
            target = from_target(node, package)
            if target.startswith("invarirank"):
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    folder = ROOT.joinpath(*sub.split("."))
                    out.add(
                        sub if folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file() else target
                    )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    out.discard(me)
    return out


GRAPH = {module_name(p): imports_of(p) for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def test_every_import_follows_the_layer_rules():
    bad = []
    for mod, targets in GRAPH.items():
        src = layer(mod)
        for target in targets:
            dst = layer(target)
            parts = {public_path(name).split(".", 1)[1]: whole for name, whole in PARTS.items()}
            src = parts.get(src, src)  # a part belongs to its layer
            if dst == src or dst in ALLOWED[src] or parts.get(dst) == src or parts.get(dst) in ALLOWED[src]:
                continue
            bad.append(f"{mod} -> {target} ({src} may import {sorted(ALLOWED.get(src, ()))})")
    assert not bad, "\n".join(bad)


def test_no_import_cycle():
    graph = {m: {t for t in ts if t in GRAPH} for m, ts in GRAPH.items()}
    # a package's __init__ re-exporting its own modules is not a cycle of the design: drop parent -> child edges
    graph = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def dfs(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t) :] + [t])
            elif t not in state:
                dfs(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            dfs(m)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_rules_are_checked_on_real_imports():
    assert "invarirank.store" in GRAPH["invarirank.runner._run"]
    assert "invarirank.runner" in GRAPH["invarirank.grid._spec"]
    assert layer("invarirank.compendium._lab") == layer("invarirank.compendium") == "compendium"
    assert layer("invarirank.runner._lab") == "runner"


def runner_names_imported(source: str, module: str) -> list[str]:
    """What the module ``module`` (source ``source``) imports from the runner that is not the runner's facade for
    the layers above: a runner submodule (``from ..runner.run import x``, ``import invarirank.runner._shards``), or a
    name that ``invarirank/runner/__init__.py`` does not import (its ``__all__`` holds only the stable names)."""
    facade = {
        alias.asname or alias.name
        for node in ast.parse((PKG / "runner" / "__init__.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        for alias in node.names
    }
    package = module.rsplit(".", 1)[0]
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            target = from_target(node, package)
            names = [a.name for a in node.names]
            if target == "invarirank":
                bad += [f"invarirank.{n}" for n in names if n == "runner"]
            elif target == "invarirank.runner":
                bad += [f"invarirank.runner.{n}" for n in names if n not in facade]
            elif target.startswith("invarirank.runner."):
                bad += [f"{target}.{n}" for n in names]
        elif isinstance(node, ast.Import):
            bad += [a.name for a in node.names if a.name.startswith("invarirank.runner.")]
    return bad


def test_the_grid_imports_only_what_the_runner_exports():
    bad = {
        module_name(p): runner_names_imported(p.read_text(encoding="utf-8"), module_name(p))
        for p in sorted((PKG / "grid").rglob("*.py"))
    }
    assert not {m: b for m, b in bad.items() if b}
    # the check itself catches what the grid used to do
    # (a runner module that does not exist: the example stays as it is when modules are renamed)
    old = "from ..runner.gone import reuse_or_prepare\nfrom ..runner import RunConfig, status_of\n"
    assert runner_names_imported(old, "invarirank.grid._book_build") == [
        "invarirank.runner.gone.reuse_or_prepare",
        "invarirank.runner.status_of",
    ]


@pytest.mark.parametrize(
    "module",
    [
        "invarirank",
        "invarirank.evaluation",
        "invarirank.compendium",
        "invarirank.compendium._lab",
        "invarirank.runner._lab",
        "invarirank.store",
        "invarirank.methods",
        "invarirank.runner._config",
    ],
)
def test_torch_free_parts_import_without_torch(module):
    code = textwrap.dedent(f"""
        import importlib, sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "transformers"):
                    raise ImportError("torch is blocked in this test")
                return None
        sys.meta_path.insert(0, Block())
        importlib.import_module({module!r})
        assert "torch" not in sys.modules
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]


MAX_LINES = 400
#: TEMPORARY: the modules over the limit while they are being split by job; the list only shrinks, and the test
#: below fails both when another module crosses the limit and when a listed one no longer needs its place
STILL_TO_SPLIT: set[str] = set()


def test_no_module_over_400_lines():
    lines = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(PKG.rglob("*.py"))
        if "__pycache__" not in p.parts
    }
    over = {path for path, n in lines.items() if n > MAX_LINES}
    assert over - STILL_TO_SPLIT == set(), {p: lines[p] for p in sorted(over - STILL_TO_SPLIT)}
    assert STILL_TO_SPLIT - over == set(), f"split already: drop from STILL_TO_SPLIT {sorted(STILL_TO_SPLIT - over)}"
