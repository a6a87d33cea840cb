"""The student notebook that the book serves runs where a student saves it: in a fresh virtual environment with
only the documented lab install (``pip install "<repository>[lab]"``: the torch-free core and the ``lab`` extra), from
an empty folder outside any checkout, headless with ``jupyter execute``. Outside a checkout it computes the lab's
sweep itself, so this takes minutes (pip install, then about a minute of CPU time for the sweep)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from tests.support import ROOT

pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("launch_source", ROOT / "book" / "_ext" / "launch_source.py")
ext = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ext)


def _student_notebook(out: Path) -> Path:
    """The student notebook exactly as the book build writes it (``write_student_lab`` at build-finished)."""
    app = SimpleNamespace(
        srcdir=str(ROOT),
        outdir=str(out),
        builder=SimpleNamespace(format="html"),
        config=SimpleNamespace(html_theme_options={"repository_url": ""}),
    )
    ext.write_student_lab(app, None)
    return out / ext.STUDENT_LAB


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def test_the_student_notebook_runs_outside_the_clone_in_a_fresh_lab_install(tmp_path):
    # the package's own files only (what pip builds from), so the install cannot lean on the checkout
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "invarirank", source / "invarirank", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    made = _run([sys.executable, "-m", "venv", str(venv)])
    assert made.returncode == 0, made.stderr[-2000:]
    installed = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{source}[lab]"], timeout=1200)
    assert installed.returncode == 0, f"pip install <repository>[lab] failed: {installed.stderr[-3000:]}"
    torch = _run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; print(u.find_spec('torch'))"])
    assert torch.stdout.strip() == "None"  # the lab needs no torch, and the lab install brings none

    student = tmp_path / "student"  # an empty folder outside any checkout, where the student saved the notebook
    student.mkdir()
    notebook = shutil.copy2(_student_notebook(tmp_path / "site"), student / "lab-student.ipynb")
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
        "INVARIRANK_CACHE": str(tmp_path / "cache"),
        "MPLBACKEND": "Agg",
    }
    ran = _run(
        [str(venv / "bin" / "jupyter"), "execute", "--inplace", notebook.name], cwd=student, env=env, timeout=1800
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    text = json.dumps(nb)
    assert "Worked answer" not in text
    lab = yaml.safe_load((ROOT / ext.LAB_GRID_FILE).read_text())["lab"]
    runs = len(lab["shapes"]) * len(lab["strengths"])
    assert f"precomputed sweep: {runs} (shape, strength) runs" in text  # computed here, the sweep of results/lab/
    assert "not inside an invarirank checkout" not in text
    tables = sum(
        "text/html" in o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
    )
    assert tables >= 3  # the styled tables rendered (jinja2 came with the lab extra)
    assert (tmp_path / "cache" / "lab-sweep").is_dir() and not (student / "results").exists()
