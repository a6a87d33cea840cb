"""The slim lab environment (binder/): the torch-free core of pyproject.toml, its `lab` extra and JupyterLab, the
package itself installed without dependencies; what the lab imports never needs torch (tests/compendium/test_lab.py
runs it so)."""

from __future__ import annotations

import re

import tomllib

from tests.support import ROOT


def _names(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", line)
            out[m.group(1).lower()] = m.group(2).replace(" ", "")
    return out


def test_binder_installs_the_torch_free_core_the_lab_extra_and_jupyterlab():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = _names(project["dependencies"]) | _names(project["optional-dependencies"]["lab"])
    binder = _names((ROOT / "binder" / "requirements.txt").read_text().splitlines())
    assert {k: v for k, v in binder.items() if k in core} == core  # the core and the lab extra, with the same bounds
    assert set(binder) - set(core) == {"jupyterlab"}
    for heavy in ("torch", "transformers", "ray", "jupyter-book", "accelerate", "implicit"):
        assert heavy not in binder


def test_binder_installs_the_package_itself_without_dependencies():
    post = (ROOT / "binder" / "postBuild").read_text()
    assert "pip install --no-deps" in post and post.rstrip().endswith("-e .")
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111  # executable, as Binder requires
