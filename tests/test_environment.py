"""The conda environment (environment.yml) and pyproject.toml must list the same packages and bounds."""

from __future__ import annotations

import re

import tomllib
import yaml

from tests.support import ROOT  # noqa: E402


def _split(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    assert m, req
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def _pyproject() -> dict[str, str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(data["dependencies"])
    for extra in data["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith("invarirank")]
    return dict(_split(r) for r in reqs)


def _environment() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    out: dict[str, str] = {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for r in dep["pip"]:
                if not r.startswith("-e"):
                    out.update([_split(r)])
        elif not re.match(r"^(python|pip)\b", dep):
            out.update([_split(dep)])
    return out


def test_environment_yml_agrees_with_pyproject():
    py, env = _pyproject(), _environment()
    assert set(py) == set(env), (
        f"only in pyproject: {set(py) - set(env)}; only in environment.yml: {set(env) - set(py)}"
    )
    assert py == env


def test_environment_installs_the_package_itself():
    text = (ROOT / "environment.yml").read_text()
    assert "- -e ." in text


def test_makefile_pins_cpu_torch_and_sets_offline():
    mk = (ROOT / "Makefile").read_text()
    assert "TORCH_VERSION ?= 2.13.0" in mk
    assert "export HF_HUB_OFFLINE := 1" in mk
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in ci


def test_the_torch_pin_keeps_a_cuda_build_of_the_same_version():
    """`make` installs ``torch==$(TORCH_VERSION)``: a pin without a local label, which a CUDA build of the same
    version (``2.13.0+cu128``) satisfies, so pip keeps a CUDA torch installed by hand (book/paper_scale.md)."""
    from packaging.specifiers import SpecifierSet

    mk = (ROOT / "Makefile").read_text()
    version = re.search(r"^TORCH_VERSION \?= (\S+)$", mk, flags=re.M).group(1)
    assert "+" not in version
    assert '"torch==$(TORCH_VERSION)"' in mk and "--force-reinstall" not in mk and "--upgrade torch" not in mk
    pin = SpecifierSet(f"=={version}")
    assert pin.contains(f"{version}+cu128") and pin.contains(f"{version}+cpu")
    assert not pin.contains("2.4.0+cu121")  # another version is replaced: TORCH_VERSION=... says which
