"""The results page's verdicts are computed, never typed, and its switch to the evidence grid follows the runs.

The results notebook is executed with papermill on results folders of simulated runs (made by the grid's own
machinery, in seconds, without torch) and rendered to HTML:

- a results folder doctored so that an ordering is reversed (two methods' names swapped in a run's observations,
  then re-evaluated) flips that claim's verdict on the rendered page, and every verdict shown is the run's own
  ``metrics.json`` claim;
- Table 1 and the figures come from the evidence grid once its main run and its K sweep are complete under
  ``results/evidence/``, else from the default grid; a run folder without all its files (only ``shards/``) is
  never shown.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from invarirank.grid import ensure_run, load_grid
from invarirank.runner import RunConfig
from invarirank.store import refresh_metrics
from tests.support import ROOT

METHODS = ["zero_shot", "bootstrapping", "stella", "sgs"]

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("private_cache")]

#: the default grid's stand-in: all four methods, 16 queries (exact sign-flip test), a strong primacy bias
DEFAULT_RUN = {
    "dataset": "synthetic",
    "retriever": "none",
    "scorer": "simulated",
    "K": 6,
    "M": 6,
    "n_queries": 16,
    "methods": METHODS,
    "calibration_queries": 8,
    "calibration_repeats": 1,
    "seed": 3,
    "scorer_options": {"bias_shape": "primacy", "bias_strength": 2.0},
    "name": "sim-k6",
}

#: the evidence grid's stand-in: a main run and its K sweep, of other sizes than the default run
EVIDENCE_GRID = """\
grid: evidence
defaults: {dataset: synthetic, retriever: none, scorer: simulated, M: 4, n_queries: 10, sample_k: 6, seed: 5,
           calibration_queries: 6, calibration_repeats: 1, scorer_options: {bias_shape: primacy, bias_strength: 1.0}}
runs:
  - {name: ev-main-k6, K: 6, methods: [zero_shot, bootstrapping, stella, sgs]}
  - {name: ev-sweep-k8, K: 8, methods: [zero_shot, bootstrapping]}
"""


def _execute(
    results: Path,
    evidence_file: Path | str,
    out: Path,
    grid: str | None = "default",
    before: Path | None = None,
    **more: str,
) -> str:
    """Execute notebooks/results.ipynb for ``grid`` on ``results`` with papermill (the book's rule: ``before``, then
    ``evidence_file``, written beside ``out``; ``more``: further parameters) and return the page rendered to HTML."""
    env = dict(
        os.environ,
        MPLBACKEND="Agg",
        PYTHONHASHSEED="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    rule = out.with_suffix(".book.yaml")
    rule.write_text("grids:\n" + "".join(f"  - {{file: {f}}}\n" for f in (before, evidence_file) if f))
    params = {"grid": grid, "results_dir": str(results), "include_simulated": True, "book_config": str(rule), **more}
    args = [sys.executable, "-m", "papermill", "results.ipynb", str(out), "--no-progress-bar", "-y", json.dumps(params)]
    proc = subprocess.run(args, cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return _outputs_html(out)


def _outputs_html(notebook: Path) -> str:
    """The executed notebook's outputs as the book renders them: HTML outputs as they are (tables), Markdown
    outputs as their text (sentences; ``###`` headings as ``<h3>``), text outputs escaped (printed lines)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = []
    for cell in cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                parts.append("".join(data["text/html"]))
            elif "text/markdown" in data:  # displayed sentences; headings as the book renders them
                text = "".join(data["text/markdown"])
                parts.append(re.sub(r"^### (.*)$", r"<h3>\1</h3>", text, flags=re.M))
            elif "text" in output or "text/plain" in data:
                parts.append(f"<pre>{html.escape(''.join(output.get('text') or data['text/plain']))}</pre>")
    return "\n".join(parts)


def _verdicts(html: str) -> dict[tuple[str, str], str]:
    """``{(run, claim): verdict}`` of the page's verdict list."""
    found = re.findall(r'data-run="([^"]+)" data-claim="([^"]+)" data-verdict="([^"]+)"', html)
    return {(run, claim): verdict for run, claim, verdict in found}


def _stored(run_dir: Path) -> dict[tuple[str, str], str]:
    from invarirank.evaluation import judge_claims  # the one judge: the page must show what it decides

    claims = judge_claims(json.loads((run_dir / "metrics.json").read_text(encoding="utf-8"))["comparisons"])
    return {(run_dir.name, name): c["verdict"] for name, c in claims.items()}


def _swap_methods(run_dir: Path, a: str, b: str) -> None:
    """Doctor a finished run: swap the names of methods ``a`` and ``b`` in its observations, then re-evaluate."""
    path = run_dir / "observations.jsonl.gz"
    rows = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines() if line]
    for r in rows:
        r["method"] = {a: b, b: a}.get(r["method"], r["method"])
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")))
    refresh_metrics(run_dir)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """Two results folders (honest and doctored default runs, each with the evidence grid's main run complete and
    its K sweep only begun: a ``shards/`` folder), a third with the whole evidence grid complete."""
    base = tmp_path_factory.mktemp("verdicts")
    work = base / "runs"
    honest = base / "honest"
    ensure_run(RunConfig.from_mapping(DEFAULT_RUN, "test", grid="default"), honest, work, progress=False)
    evidence_file = base / "grid-evidence.yaml"
    evidence_file.write_text(EVIDENCE_GRID)
    complete = base / "complete"
    for config in load_grid(evidence_file).runs:
        ensure_run(config, complete, work, progress=False)
    shutil.copytree(honest / "default", complete / "default")
    shutil.copytree(complete / "evidence" / "ev-main-k6", honest / "evidence" / "ev-main-k6")
    (honest / "evidence" / "ev-sweep-k8" / "shards" / "000").mkdir(parents=True)  # begun, not finished
    (honest / "evidence" / "ev-sweep-k8" / "shards" / "000" / "observations.jsonl").write_text("")
    doctored = base / "doctored"
    shutil.copytree(honest, doctored)
    _swap_methods(doctored / "default" / "sim-k6", "zero_shot", "stella")
    return {"base": base, "honest": honest, "doctored": doctored, "complete": complete, "evidence": evidence_file}


def test_a_doctored_run_flips_the_verdict_on_the_rendered_page(made):
    run = "sim-k6"
    pages = {
        name: _execute(made[name], made["evidence"], made["base"] / f"{name}.ipynb") for name in ("honest", "doctored")
    }
    for name, page in pages.items():
        shown = _verdicts(page)
        assert shown == _stored(made[name] / "default" / run), name  # every verdict is the run's own
        assert "● vs" in page or "○ vs" in page or "✗ vs" in page  # Table 1 carries the claims' marks
    honest, doctored = _verdicts(pages["honest"]), _verdicts(pages["doctored"])
    # zero-shot's and STELLA_LW's names swapped: the mitigations' flatter exposure is now resolved the other way
    assert honest[(run, "exposure_flattened")] == "reproduced"
    assert doctored[(run, "exposure_flattened")] == "contradicted"
    # the doctored run's rows are read back as well (the page is not a cached copy of the honest one)
    assert honest != doctored
    for page in pages.values():
        assert "come from the default grid" in page and "missing: ev-sweep-k8" in page
        assert "K = 8" not in page  # the unfinished sweep run is not shown anywhere


def test_the_evidence_grid_sets_table_1_once_its_main_run_and_sweep_are_complete(made):
    page = _execute(made["complete"], made["evidence"], made["base"] / "complete.ipynb")
    assert "come from the evidence grid (grid-evidence.yaml)" in page
    assert "ev-main-k6, ev-sweep-k8" in page
    # Table 1, the K sweep and the verdicts are the evidence runs' (M = 4, 10 queries, K = 6 and 8) ...
    assert "at K = 6, 8:" in page  # Figure 2's sentence: the sweep's list lengths
    assert re.search(r"Table 1 \(ours\)\. [^<]*M = 4; queries = 10", page)
    assert _verdicts(page) == _stored(made["complete"] / "evidence" / "ev-main-k6")
    # ... and the default grid's run moves to "Other grids"
    assert "<strong>Grid default</strong>" in page or "**Grid default**" in page


def test_a_second_models_run_at_the_main_k_is_judged_on_its_own_runs_on_the_page(made):
    """The default grid with a second model's run beside the main run at the same K (a copy of the main run under
    another model, two of its methods swapped and re-evaluated): the page shows each model's verdicts with its own
    run, the headline counts each model apart, Table 1 has both models' rows and reference rows, Figure 1 has both,
    and a paragraph says what the second model can and cannot say."""
    results = made["base"] / "two-models"
    shutil.copytree(made["honest"], results)
    second = results / "default" / "qwen-k6"
    shutil.copytree(results / "default" / "sim-k6", second)
    manifest = json.loads((second / "manifest.json").read_text(encoding="utf-8"))
    for key in ("grid_run", "config"):
        manifest[key]["model"] = "qwen2.5-coder-0.5b"
    (second / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    _swap_methods(second, "zero_shot", "stella")
    page = _execute(results, made["evidence"], made["base"] / "two.ipynb", main_run="sim-k6")
    shown = _verdicts(page)
    assert shown == {**_stored(results / "default" / "sim-k6"), **_stored(second)}  # each model's own verdicts
    assert shown[("qwen-k6", "exposure_flattened")] == "contradicted" != shown[("sim-k6", "exposure_flattened")]
    assert re.search(r"On simulated \([^)]*\), of the \d+ claims", page)
    assert re.search(r"On Qwen2\.5-Coder-0\.5B \([^)]*\), of the \d+ claims", page)
    assert "Table 1 shows 2 models side by side (simulated, Qwen2.5-Coder-0.5B)" in page
    assert page.count("random order (reference)") >= 2  # each model's own reference rows in Table 1
    assert "The reference rows, Qwen2.5-Coder-0.5B." in page
    assert "What Qwen2.5-Coder-0.5B can and cannot say about the paper's 3–7 B models." in page
    assert "<strong>Qwen2.5-Coder-0.5B.</strong>" in page or "**Qwen2.5-Coder-0.5B.**" in page  # Figure 1's words


#: the paper grid's stand-in: named like the paper's, its own M (3) and list lengths (5, 7)
PAPER_GRID = """\
grid: paper
defaults: {dataset: synthetic, retriever: none, scorer: simulated, M: 3, n_queries: 12, sample_k: 5, seed: 9,
           calibration_queries: 6, calibration_repeats: 1, scorer_options: {bias_shape: primacy, bias_strength: 2.0}}
runs:
  - {name: pp-main-k7, K: 7, methods: [zero_shot, bootstrapping, stella, sgs]}
  - {name: pp-sweep-k5, K: 5, methods: [zero_shot, bootstrapping]}
"""


def test_a_complete_paper_grid_takes_over_table_1_the_figures_and_the_claims_and_gives_them_back(made):
    """`make book`'s results page (no grid of its own: the book's rule decides) on a results folder where a
    stand-in for the paper's grid, listed first, is complete: Table 1, Figures 1–2 and the claims are its runs';
    with its folder removed they are the evidence grid's again."""
    base = made["base"] / "paper-standin"
    results = base / "results"
    shutil.copytree(made["complete"], results)
    paper_file = base / "grid-paper.yaml"
    paper_file.write_text(PAPER_GRID)
    for config in load_grid(paper_file).runs:
        ensure_run(config, results, base / "runs", progress=False)
    page = _execute(results, made["evidence"], base / "with.ipynb", grid=None, before=paper_file)
    assert page.index("come from the paper grid (grid-paper.yaml)") < page.index("Table 1 (ours)")  # the first line
    assert re.search(r"Table 1 \(ours\)\. [^<]*K = 7; M = 3;", page)  # the stand-in main run's K and M
    assert "at K = 5, 7:" in page  # Figure 2's sentence: the stand-in's list lengths
    assert _verdicts(page) == _stored(results / "paper" / "pp-main-k7")
    assert "pp-sweep-k5" in page and "<h3>Grid evidence</h3>" not in page  # other grids: one line each, one table
    shutil.rmtree(results / "paper")
    back = _execute(results, made["evidence"], base / "without.ipynb", grid=None, before=paper_file)
    assert "come from the evidence grid (grid-evidence.yaml)" in back and "missing: pp-main-k7" in back
    assert re.search(r"Table 1 \(ours\)\. [^<]*M = 4; queries = 10", back)
    assert _verdicts(back) == _stored(results / "evidence" / "ev-main-k6")


def test_a_preferred_grid_executed_on_its_own_shows_itself(made):
    """`invarirank grid configs/grid-evidence.yaml` writes the evidence grid's own results page even when a grid
    before it in the chain is complete (here a stand-in for the paper-cpu grid: the default run's grid)."""
    ahead = made["base"] / "grid-ahead.yaml"
    entry = {k: v for k, v in DEFAULT_RUN.items()}
    ahead.write_text("grid: default\nruns:\n  - " + json.dumps(entry) + "\n")
    chained = _execute(made["complete"], made["evidence"], made["base"] / "chained.ipynb", before=ahead)
    assert "come from the default grid (grid-ahead.yaml): its main run and K sweep (sim-k6) are complete" in chained
    own = _execute(made["complete"], made["evidence"], made["base"] / "own.ipynb", grid="evidence", before=ahead)
    assert "come from the evidence grid (grid-evidence.yaml)" in own and "grid-ahead" not in own
    assert _verdicts(own) == _stored(made["complete"] / "evidence" / "ev-main-k6")


def test_the_evidence_grid_file_holds_the_issues_runs():
    """configs/grid-evidence.yaml parses with the grid's own reader; its main run and K sweep (what the switch
    waits for) are runs 1 and 2; `make book` runs the default grid, never this one."""
    from invarirank.grid import main_run

    grid = load_grid(ROOT / "configs" / "grid-evidence.yaml")
    runs = {c.run_name: c for c in grid.runs}
    assert grid.name == "evidence" and main_run(grid).run_name == "smollm2-span-k10"
    main = runs["smollm2-span-k10"]
    assert (main.effective_k, main.M, main.n_queries, main.calibration_queries, main.calibration_repeats) == (
        10,
        20,
        40,
        30,
        2,
    ) and list(main.methods) == METHODS
    sweep = [c for c in grid.runs if (c.model_name, c.scorer) == (main.model_name, main.scorer)]
    assert sorted(c.effective_k for c in sweep) == [5, 10, 15, 25]
    assert {(c.M, c.n_queries, c.sample_k, c.seed) for c in sweep} == {(20, 40, 5, 42)}  # the same 40 users
    gemma, choice = runs["gemma3-span-k10"], runs["smollm2-choice-k10"]
    assert (gemma.model_name, gemma.n_queries, list(gemma.methods)) == ("gemma3-270m", 20, METHODS)
    assert (choice.scorer, choice.n_queries, choice.sample_k, list(choice.methods)) == (
        "choice",
        40,
        5,
        ["zero_shot", "bootstrapping"],
    )
    assert all(c.dataset == "ml-100k" and c.retriever == "lightgcn" for c in grid.runs)
    assert "GRID ?= configs/grid-default.yaml" in (ROOT / "Makefile").read_text()


def test_the_results_page_prefers_the_paper_cpu_grid_then_the_evidence_grid():
    """The chain the results page switches along (configs/book.yaml, after the paper's grid, which has no committed
    run): the paper-cpu grid (Table 1 at K = 25, the sweep at 15/25/50) once its main run and K sweep are complete,
    else the evidence grid (K = 10)."""
    from invarirank import compendium
    from invarirank.grid._book import load_book_config

    book = {g.grid.name: g for g in load_book_config(root=ROOT).grids}
    paper, evidence = (compendium.grid_choice(book[n].grid, book[n].sweep()) for n in ("paper-cpu", "evidence"))
    assert (paper.name, paper.main_run, sorted(paper.needed)) == (
        "paper-cpu",
        "smollm2-span-k25",
        ["smollm2-span-k15", "smollm2-span-k25", "smollm2-span-k50"],
    )
    assert (evidence.main_run, sorted(evidence.needed)) == (
        "smollm2-span-k10",
        ["smollm2-span-k10", "smollm2-span-k15", "smollm2-span-k25", "smollm2-span-k5"],
    )
    shown, missing = compendium.grid_to_show(ROOT / "results", [paper, evidence], "default")
    complete = {p.name for p in compendium.collect_runs(ROOT / "results", ["paper-cpu"])}
    assert (shown == "paper-cpu") == (set(paper.needed) <= complete)
    assert shown in {"paper-cpu", "evidence"}  # the evidence grid's runs are committed complete
    assert set(missing.get("paper-cpu", [])) == set(paper.needed) - complete
