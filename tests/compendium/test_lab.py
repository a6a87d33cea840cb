"""The teaching lab works in a torch-free install: its notebook (the precomputed sweep it shows, the live run and
``evaluate``) run with torch, transformers and implicit made unimportable."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jupytext
import pytest

from invarirank import compendium as C
from invarirank.compendium._labels import p_value
from tests.support import ROOT

BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    class _Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in {"torch", "transformers", "implicit", "accelerate", "gguf", "safetensors"}:
                raise ImportError(f"{name} is blocked: the lab must be torch-free")
            return None
    sys.meta_path.insert(0, _Block())
""")


def _script(results_dir: Path) -> str:
    nb = jupytext.read(ROOT / "notebooks" / "lab.py")
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        src = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("%"))
        if "parameters" in cell.metadata.get("tags", []):
            src += f"\nresults_dir = {str(results_dir)!r}\nn_queries = 6\nM = 4\nK = 6\n"
        cells.append(src)
    return "\n\n".join(cells)


def test_observed_versus_resolved_helpers(simulated_run):
    """The lab's exercise 5: the planned size is the pilot's 80%-power estimate, never below the 6 queries the exact
    test needs, never above the cap; the table reads each run's own comparison."""
    from invarirank.compendium import _lab as lab
    from invarirank.evaluation import comparison

    record = comparison(simulated_run.metrics["comparisons"], "loc", "sgs", "zero_shot")
    planned = lab.planned_queries(simulated_run, "loc", "sgs", "zero_shot", cap=10**9)
    assert planned == max(record["queries_80"], 6)
    assert lab.planned_queries(simulated_run, "loc", "sgs", "zero_shot", cap=6) == 6
    table = lab.resolution_table({2.0: {"five": simulated_run}}, "loc", "sgs", "zero_shot", styled=False)
    row = table.loc[(2.0, "five")]
    assert row["queries"] == 5 and row["p"] == f"{p_value(record['p'])} (not resolved)"
    assert row["SGS − zero-shot"].startswith(f"{record['mean_diff']:+.3f} [".replace("-", "−"))
    assert "-" not in row["SGS − zero-shot"]  # true minus signs
    # a pair never plans fewer queries than the exact test needs to reach p < 0.05 at all (6)
    if record["queries_80"]:
        assert int(row["queries for 80% power"].replace(",", "")) == max(record["queries_80"], 6)
    resolved = copy.deepcopy(simulated_run)  # a resolved pilot still shows the size it plans
    resolved.metrics["comparisons"]["loc"]["zero_shot"]["sgs"]["p"] = 0.001  # stored A before B, file order
    row = lab.resolution_table({2.0: {"pilot": resolved}}, "loc", "sgs", "zero_shot", styled=False).loc[(2.0, "pilot")]
    assert row["p"].endswith("(resolved)") and row["queries for 80% power"] != "–"


@pytest.mark.slow  # executes the lab notebook's sweep in a subprocess: 115 s on 2 busy cores
def test_lab_notebook_runs_without_torch(tmp_path: Path):
    results = tmp_path / "results"
    sweep = textwrap.dedent(f"""
        from invarirank.grid import ensure_run, lab_runs
        _lab = {{"K": 6, "M": 4, "n_queries": 6, "dataset": "synthetic", "retriever": "none",
               "methods": ["zero_shot", "bootstrapping", "stella", "sgs"], "calibration_queries": 6,
               "calibration_repeats": 1, "shapes": ["primacy", "none"], "strengths": [0.0, 2.0]}}
        for _spec in lab_runs(_lab):  # names with '_': the notebook's parameter check reads this script's globals
            ensure_run(_spec, {str(results)!r}, {str(tmp_path / "runs")!r})
        from invarirank.evaluation import evaluate, read_observations
        _m = evaluate({str(results / "lab" / "primacy-s2" / "observations.jsonl.gz")!r}, n_bootstrap=10)
        assert set(_m["methods"]) == {{"zero_shot", "bootstrapping", "stella", "sgs"}}
    """)
    script = BLOCKER + sweep + _script(results) + "\nassert 'torch' not in sys.modules\nprint('LAB-OK')\n"
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        INVARIRANK_CACHE=str(tmp_path / "cache"),  # this checkout's package
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LAB-OK" in proc.stdout


def test_student_notebook_has_no_worked_answers():
    import json

    from invarirank.compendium import _lab as lab

    nb = json.loads((ROOT / "notebooks" / "lab.ipynb").read_text(encoding="utf-8"))
    student = lab.student_notebook(nb)
    text = json.dumps(student)
    assert "Worked answer" in json.dumps(nb) and "Worked answer" not in text
    assert not any("hide-cell" in c["metadata"].get("tags", []) for c in student["cells"])
    # every exercise stays, each with a place for the answer
    exercises = sum("**Exercise" in "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert exercises >= 6 and text.count("**Exercise") == exercises and text.count("*Your answer:*") == exercises
    assert all(not c.get("outputs") for c in student["cells"] if c["cell_type"] == "code")


def test_student_notebook_carries_what_it_needs_outside_a_clone(monkeypatch):
    """The student version names its one-line install when a package is missing, carries the sweep's settings in
    its parameters cell (so the sweep can be computed outside a clone) and fills the book's substitutions."""
    import importlib.util
    import json

    import yaml

    from invarirank.compendium import _lab as lab

    nb = json.loads((ROOT / "notebooks" / "lab.ipynb").read_text(encoding="utf-8"))
    settings = yaml.safe_load((ROOT / "configs" / "grid-default.yaml").read_text())["lab"]
    install = 'pip install "invarirank[lab] @ git+https://example.org/r"'
    student = lab.student_notebook(nb, settings=settings, install=install, substitutions={"get_the_code": "CODE-BOX"})
    sources = ["".join(c["source"]) for c in student["cells"]]
    assert any("{{ get_the_code }}" in "".join(c["source"]) for c in nb["cells"])
    assert "CODE-BOX" in "\n".join(sources) and "{{" not in "\n".join(sources)
    params = next(c for c in student["cells"] if "parameters" in c["metadata"].get("tags", []))
    scope: dict = {}
    exec("".join(params["source"]), scope)
    assert scope["lab_settings"] == settings
    check = next(c for c in student["cells"] if c["cell_type"] == "code")  # the first code cell
    exec("".join(check["source"]), {})  # everything is installed here: no error
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jinja2" else object())
    with pytest.raises(ModuleNotFoundError, match=r"^jinja2 missing: run  " + re.escape(install)):
        exec("".join(check["source"]), {})


def test_exercise_5_has_a_scaffold_cell_in_both_versions():
    """Exercise 5 asks the students to run zero-shot and SGS on five queries: a visible code cell starts it."""
    import json

    from invarirank.compendium import _lab as lab

    nb = json.loads((ROOT / "notebooks" / "lab.ipynb").read_text(encoding="utf-8"))
    for version in (nb, lab.student_notebook(nb)):
        cells = version["cells"]
        at = next(i for i, c in enumerate(cells) if "**Exercise 5" in "".join(c["source"]))
        scaffold = cells[at + 1]
        assert scaffold["cell_type"] == "code" and "hide-cell" not in scaffold["metadata"].get("tags", [])
        assert "n_queries=5" in "".join(scaffold["source"]) and "resolution_table" in "".join(scaffold["source"])


def test_sweep_settings_and_the_inversion_table():
    """σ and r are read from the committed sweep's runs; the inversion table compares their bootstrapping and SGS."""
    from invarirank.compendium import _lab as lab

    runs = C.collect_runs(ROOT / "results", grids=["lab"], exclude=())
    if not runs:
        pytest.skip("no committed lab sweep")
    model = runs[0].manifest["model"]
    assert lab.sweep_settings(ROOT / "results") == {"noise_sd": model["noise_sd"], "relevance": model["relevance"]}
    frame = lab.sweep_frame(ROOT / "results")
    table = lab.inversion_table(frame, "primacy")
    for run in runs:
        opts = run.spec.get("scorer_options") or {}
        if opts.get("bias_shape") != "primacy":
            continue
        ppi = {m: run.metrics["methods"][m]["overall"]["ppi"] for m in ("bootstrapping", "sgs")}
        row = table.loc[float(opts["bias_strength"])]
        better = "bootstrapping" if ppi["bootstrapping"] < ppi["sgs"] else "SGS"
        assert row["PPI: bootstrapping / SGS"] == f"{ppi['bootstrapping']:.3f} / {ppi['sgs']:.3f} ({better} better)"
