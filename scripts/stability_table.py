"""The Python API page's stability table, written from the code's own ``Stability:`` lines.

    python scripts/stability_table.py           # rewrite the table in book/reference/api.md
    python scripts/stability_table.py --check   # exit 1 when the committed table differs from the generated one

The public line: a module whose name (or a folder above it) starts with ``_`` is internal; the names a public
module lists in ``__all__`` are its stable names, and each carries a line ``Stability: full (what it is).`` or
``Stability: caller (...)`` — in its docstring, or for a constant in the ``#:`` comment above it. The table lists
them in the order they are met: the package's ``__all__``, then each public subpackage's, then each public module's
(by dotted path); a name re-exported from a place already met is listed once, where it was met first; consecutive
names with the same stability and text share a row. Read from the source with ``ast``: nothing is imported, so
the table can be checked without the package's dependencies.
"""

from __future__ import annotations

import argparse
import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "invarirank"
PAGE = ROOT / "book" / "reference" / "api.md"
BEGIN = "<!-- stability table: written by scripts/stability_table.py from the Stability: lines; do not edit -->"
END = "<!-- end of the stability table -->"
LAST_ROW = (
    "| everything else | the runner, the grid, the compendium, the scorers' internals "
    "(modules named `_x.py`) | internal |"
)
_STABILITY = re.compile(r"^(full|caller|internal) \((.*)\)\.?$")


@dataclass(frozen=True)
class Entry:
    """One name of a public ``__all__``: where it is listed (``qualname``), where it is defined (``origin``), and its
    stability and text (``None`` when it has no ``Stability:`` line)."""

    qualname: str
    origin: str
    stability: str | None
    what: str | None


def _file(module: str, root: Path) -> Path | None:
    base = root.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def is_public(module: str) -> bool:
    """A module is public when no part of its dotted path starts with ``_`` (``__init__``/``__main__`` aside)."""
    return not any(part.startswith("_") and not part.startswith("__") for part in module.split("."))


def public_modules(root: Path = ROOT) -> list[str]:
    """Every public module of the package: the package, its subpackages, then the other modules (dotted order)."""
    packages, modules = [], []
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            packages.append(".".join(parts[:-1]))
        elif parts[-1] != "__main__":
            modules.append(".".join(parts))
    packages.sort(key=lambda m: (m != PACKAGE, m))
    return [m for m in packages + sorted(modules) if is_public(m)]


@functools.cache
def _parsed(path: Path) -> tuple[str, ast.Module]:
    source = path.read_text(encoding="utf-8")
    return source, ast.parse(source)


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, with the bodies of ``if`` blocks (``if TYPE_CHECKING:``) spliced in."""
    out: list[ast.stmt] = []
    for node in tree.body:
        out += [node] + (_top_level(ast.Module(body=node.body, type_ignores=[])) if isinstance(node, ast.If) else [])
    return out


def stability(text: str | None) -> tuple[str | None, str | None]:
    """``(stability, what)`` of the ``Stability:`` line in ``text`` (a docstring or ``#:`` comment), or ``None``s."""
    if not text or "Stability:" not in text:
        return None, None
    paragraph = re.split(r"\n\s*\n", text.split("Stability:", 1)[1])[0]
    match = _STABILITY.match(" ".join(paragraph.replace("#:", " ").split()))
    return (match.group(1), match.group(2)) if match else (None, None)


def _comment_above(lines: list[str], lineno: int) -> str:
    above = []
    for line in reversed(lines[: lineno - 1]):
        if not line.lstrip().startswith("#:"):
            break
        above.insert(0, line)
    return "\n".join(above)


def definition(module: str, name: str, root: Path = ROOT, depth: int = 0) -> tuple[str, str | None]:
    """``(origin, text)``: where ``name`` of ``module`` is defined (``module.name``) and the text that may hold its
    ``Stability:`` line (a docstring, or the ``#:`` comment above a constant), following imports."""
    path = _file(module, root)
    if path is None or depth > 10:
        return f"{module}.{name}", None
    source, tree = _parsed(path)
    is_package = path.name == "__init__.py"
    for node in _top_level(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return f"{module}.{name}", ast.get_docstring(node, clean=True)
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return f"{module}.{name}", _comment_above(source.splitlines(), node.lineno)
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) != name:
                    continue
                parts = module.split(".") if is_package else module.split(".")[:-1]
                base = parts[: len(parts) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else str(node.module)
                submodule = _file(f"{target}.{alias.name}", root)
                if submodule is not None:  # a submodule: its docstring
                    return f"{target}.{alias.name}", ast.get_docstring(_parsed(submodule)[1])
                return definition(target, alias.name, root, depth + 1)
    return f"{module}.{name}", None


def exported(module: str, root: Path = ROOT) -> list[str] | None:
    """The names of ``module``'s ``__all__`` (a literal list), or ``None`` when it has none."""
    path = _file(module, root)
    assert path is not None, module
    for node in _parsed(path)[1].body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return list(ast.literal_eval(node.value))  # type: ignore[arg-type]
    return None


def entries(root: Path = ROOT) -> list[Entry]:
    """Every name of every public ``__all__``, once each (where first met), with its stability."""
    out, seen = [], set()
    for module in public_modules(root):
        for name in exported(module, root) or []:
            origin, text = definition(module, name, root)
            if origin in seen:
                continue
            seen.add(origin)
            out.append(Entry(f"{module}.{name}", origin, *stability(text)))
    return out


def _cell(text: str) -> str:
    return text.replace("``", "`").replace("|", "\\|")


def table(root: Path = ROOT) -> str:
    """The table (markdown, between its markers) of the names with a ``Stability:`` line."""
    rows: list[tuple[list[str], str, str]] = []
    for e in entries(root):
        if e.stability is None or e.what is None:
            continue
        if rows and rows[-1][1:] == (e.what, e.stability):
            rows[-1][0].append(e.qualname)
        else:
            rows.append(([e.qualname], e.what, e.stability))
    lines = [BEGIN, "", "| name | what | stability |", "| --- | --- | --- |"]
    lines += [f"| {', '.join(f'`{n}`' for n in names)} | {_cell(what)} | {st} |" for names, what, st in rows]
    return "\n".join([*lines, LAST_ROW, "", END])


def page_with_table(page: str, root: Path = ROOT) -> str:
    """``page`` with the text between its markers replaced by :func:`table`."""
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{PAGE}: the markers of the stability table are missing ({BEGIN!r} ... {END!r})")
    head, rest = page.split(BEGIN, 1)
    return head + table(root) + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed table is not the generated one")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = page_with_table(page)
    if args.check:
        if new != page:
            print(f"{PAGE.relative_to(ROOT)}: the stability table is stale; run python scripts/stability_table.py")
            return 1
        return 0
    if new != page:
        tmp = PAGE.with_suffix(".md.tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
