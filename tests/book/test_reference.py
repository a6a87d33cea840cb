"""The book's reference pages (``book/reference/``) built on their own, in seconds: the Python API page renders every
front-door name from its docstring (autodoc through ``_config.yml``'s ``extra_extensions``) with its stability,
and the pages build without warnings of their own. The whole book is built by ``tests/book/test_build.py``."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import invarirank
from tests.support import ROOT

JB = Path(sys.executable).with_name("jupyter-book")
PAGES = ("api", "cli", "formats", "setup", "benchmarks", "reproducibility", "paper-tokenizers")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reference_html(tmp_path_factory) -> tuple[Path, str]:
    if not JB.is_file():
        pytest.skip("jupyter-book is not installed (the `book` extra)")
    src = tmp_path_factory.mktemp("reference")
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    (src / "_config.yml").write_text(config.replace("execute_notebooks: auto", 'execute_notebooks: "off"'))
    (src / "book").mkdir()
    for name in ("_ext", "_static", "reference"):
        shutil.copytree(ROOT / "book" / name, src / "book" / name, ignore=shutil.ignore_patterns("mathjax"))
    shutil.copy2(ROOT / "book" / "references.bib", src / "book" / "references.bib")
    (src / "_toc.yml").write_text(
        "format: jb-book\nroot: book/reference/api\nchapters:\n"
        + "".join(f"  - file: book/reference/{p}\n" for p in PAGES[1:])
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    build = subprocess.run(
        [str(JB), "build", "--all", str(src)], cwd=src, env=env, capture_output=True, text=True, timeout=900
    )
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    return src / "_build" / "html", build.stdout + build.stderr


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_every_reference_page_is_in_the_toc_and_builds(reference_html):
    out, log = reference_html
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for page in PAGES:
        assert f"file: book/reference/{page}\n" in toc
        assert (out / "book" / "reference" / f"{page}.html").is_file()
    # the only warnings: links to the book's chapters, which this build leaves out
    warnings = [w for w in re.findall(r"WARNING: (.*)", log) if not re.match(r"unknown document: '\.\./\w+'", w)]
    assert not warnings, warnings


def test_the_api_page_renders_each_front_door_docstring_with_its_stability(reference_html):
    out, _ = reference_html
    text = _text(out / "book" / "reference" / "api.html")
    for name in invarirank.__all__:
        if name != "__version__":
            assert f"invarirank.{name}" in text, name
    assert "rerank_query(scorer: Scorer, query: Query, *, methods" in text  # the signature, from the code
    assert text.count("Stability: full") >= 6  # the docstrings' own lines
    assert "Built-in immutable sequence" not in text  # METHODS: not tuple's docstring
    stated = re.search(r"order of presentation: \(([^)]*)\)", text)
    assert stated and tuple(re.findall(r'"(\w+)"', stated.group(1))) == invarirank.METHODS
    rows = [
        line
        for line in (ROOT / "book" / "reference" / "api.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| `invarirank.")
    ]
    for name in set(invarirank.__all__) - {"__version__"}:  # each front-door name: a row, stability full
        assert [r for r in rows if f"`invarirank.{name}`" in r and r.endswith("| full |")], name
    assert all(re.search(r"\| (full|caller|internal) \|$", r) for r in rows)
