"""One version source, and every file format's version tied to CHANGELOG.md: the package version lives only in
``invarirank/__init__.py`` (``pyproject.toml`` reads it, ``CITATION.cff`` repeats it), and every format version in
the code (``*_VERSION`` constants, the records' ``*_version`` fields, ``run.json``'s ``run_version``) appears in
the changelog's table with the same value."""

from __future__ import annotations

import re

import invarirank
from tests.support import ROOT

CONSTANT = re.compile(r"^\s*([A-Z_]*VERSION)\s*=\s*\"?(\d+)\"?\s*$", re.M)  # SCHEMA_VERSION = 1
FIELD = re.compile(r"^\s+([a-z_]*_version)\s*:\s*int\s*=\s*(\d+)\s*$", re.M)  # manifest_version: int = 2
LITERAL = re.compile(r"\"(run_version)\":\s*(\d+)")  # {"run_version": 1, ...}


def versions_in_code() -> set[tuple[str, str, str]]:
    """``(path, name, value)`` of every format version the package states."""
    out = set()
    for path in sorted((ROOT / "invarirank").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = str(path.relative_to(ROOT))
        for pattern in (CONSTANT, FIELD, LITERAL):
            out |= {(rel, name, value) for name, value in pattern.findall(text)}
    return out


def versions_in_changelog() -> set[tuple[str, str, str]]:
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    section = text.split("\n## Format versions\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| [^|]+ \| `([^`]+)` `([^`]+)` \| (\d+) \|$", section, re.M)
    return set(rows)


def test_every_format_version_is_in_the_changelog_with_its_value():
    code, changelog = versions_in_code(), versions_in_changelog()
    assert len(code) >= 15  # the patterns find the versions (they could not fail)
    missing = sorted(code - changelog)
    stale = sorted(changelog - code)
    assert not missing, f"versions in the code but not in CHANGELOG.md's table (add a row or an entry): {missing}"
    assert not stale, f"rows of CHANGELOG.md's table that the code no longer states: {stale}"


def test_the_package_version_has_one_source():
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = pyproject.split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    assert not re.search(r"^version\s*=", project, re.M) and re.search(r'^dynamic = \["version"\]$', project, re.M)
    assert re.search(
        r'^\[tool\.setuptools\.dynamic\]\nversion = \{ attr = "invarirank\.__version__" \}$', pyproject, re.M
    )
    cff = re.search(r"^version:\s*\"?([^\s\"]+)\"?\s*$", (ROOT / "CITATION.cff").read_text(encoding="utf-8"), re.M)
    assert cff and cff.group(1) == invarirank.__version__
    assert f"\n## {invarirank.__version__}\n" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_the_readme_stays_short_and_undated_beside_the_guides():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= 10_000, f"README.md is {len(readme)} bytes; move reference material into the book"
    text = readme.decode("utf-8")
    assert not re.search(r"\bissue \d+|\b20\d\d-\d\d-\d\d\b", text, re.I), "README.md: no issue numbers or dates"
    for guide in ("CHANGELOG.md", "CONTRIBUTING.md"):
        assert (ROOT / guide).is_file() and guide in text
