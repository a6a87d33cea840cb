"""The book's one rule (``configs/book.yaml``, :mod:`invarirank.grid._book`): which grid sets the main results, and
which runs get pages.

A stand-in for the paper's grid (named ``paper``, simulated scorer, synthetic data, computed here into a temporary
results folder in seconds, without torch) takes over the main results once its main run and K sweep are complete
and gives them back when its folder is removed; the runs a grid file declares in ``pages`` get a page, a run added
outside the grid file a row only, and a declared run still in progress stops the book. The committed rule is checked
against the committed runs: `make book` computes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from invarirank import compendium
from invarirank.compendium._run_summary import runs_summary
from invarirank.errors import InvariRankError
from invarirank.grid import ensure_run, load_grid, run_folder
from invarirank.grid._book import book_runs, load_book_config
from invarirank.runner import RunConfig, run_status
from tests.support import ROOT

#: the tests that compute runs write into a private cache; the two that read the committed runs use the user's, where
#: `make setup` prepared the models whose tokenizers the committed runs' status checks load (a private one would
#: convert Qwen2.5's GGUF file again: minutes)
computes = pytest.mark.usefixtures("private_cache")

_DEFAULTS = (
    "defaults: {dataset: synthetic, retriever: none, scorer: simulated, M: 3, n_queries: 6, sample_k: 6, seed: 4, "
    "calibration_queries: 4, calibration_repeats: 1, scorer_options: {bias_shape: primacy, bias_strength: 1.0}}\n"
)
#: the paper grid's stand-in: its main K is 8 (given by the rule), a K sweep at 6 and 8, and a run at K = 6 with
#: all four methods that would be the main run without the rule's main_K
PAPER = (
    "grid: paper\n" + _DEFAULTS + "runs:\n"
    "  - {name: pp-k6-all, K: 6, methods: [zero_shot, bootstrapping, stella, sgs]}\n"
    "  - {name: pp-k8, K: 8, methods: [zero_shot, bootstrapping, stella, sgs]}\n"
    "pages: []\n"  # as the committed paper grid: no page until a run is committed
)
#: the grid it takes over from (the paper-cpu grid's stand-in)
CPU = "grid: paper-cpu\n" + _DEFAULTS + "runs:\n  - {name: cpu-k6, K: 6, methods: [zero_shot, bootstrapping]}\n"


def _rule(tmp: Path) -> Path:
    (tmp / "grid-paper.yaml").write_text(PAPER)
    (tmp / "grid-paper-cpu.yaml").write_text(CPU)
    rule = tmp / "book.yaml"
    rule.write_text(
        f"grids:\n  - {{file: {tmp / 'grid-paper.yaml'}, main_K: 8}}\n  - {{file: {tmp / 'grid-paper-cpu.yaml'}}}\n"
    )
    return rule


def _shown(rule: Path, results: Path) -> tuple[str, dict[str, list[str]]]:
    """The grid the results page takes its main results from, as the results notebook chooses it."""
    book = load_book_config(rule, root=ROOT)
    choices = [compendium.grid_choice(g.grid, g.sweep()) for g in book.grids]
    return compendium.grid_to_show(results, choices, "none")


def _compute(grid_file: Path, results: Path, work: Path) -> None:
    for config in load_grid(grid_file).runs:
        ensure_run(config, results, work, progress=False)


@computes
def test_a_complete_paper_grid_takes_over_the_main_results_and_gives_them_back(tmp_path):
    rule = _rule(tmp_path)
    results, work = tmp_path / "results", tmp_path / "work"
    _compute(tmp_path / "grid-paper-cpu.yaml", results, work)
    assert _shown(rule, results) == ("paper-cpu", {"paper": ["pp-k8", "pp-k6-all"]})
    # the paper grid's main run alone is not enough: its K sweep must be complete too
    ensure_run(load_grid(tmp_path / "grid-paper.yaml").run("pp-k8"), results, work, progress=False)
    assert _shown(rule, results) == ("paper-cpu", {"paper": ["pp-k6-all"]})
    ensure_run(load_grid(tmp_path / "grid-paper.yaml").run("pp-k6-all"), results, work, progress=False)
    shown, missing = _shown(rule, results)
    assert (shown, missing) == ("paper", {})
    book = load_book_config(rule, root=ROOT)
    assert book.grids[0].sweep()[0].run_name == "pp-k8"  # main_K 8 chose it over the K = 6 run with as many methods
    # what the results page then shows: the paper grid's runs, Table 1 at K = 8 from its main run
    runs = compendium.collect_runs(results)
    main = compendium.main_run([r for r in runs if r.grid == shown], book.grids[0].sweep()[0].run_name)
    assert (main.grid, main.name, main.K) == ("paper", "pp-k8", 8)
    assert [r.K for r in compendium.sweep_runs([r for r in runs if r.grid == shown], main)] == [6, 8]
    table = compendium.table1([r for r in runs if r.grid == shown], K=main.K, styled=False)
    assert len(table) >= len(main.methods)
    # removed: the paper-cpu grid is the main results again
    shutil.rmtree(results / "paper" / "pp-k6-all")
    assert _shown(rule, results) == ("paper-cpu", {"paper": ["pp-k6-all"]})


@computes
def test_the_declared_runs_get_pages_a_run_outside_the_grid_file_a_row_and_a_declared_run_in_progress_an_error(
    tmp_path,
):
    rule = _rule(tmp_path)
    results, work = tmp_path / "results", tmp_path / "work"
    _compute(tmp_path / "grid-paper-cpu.yaml", results, work)
    # a run the grid file does not name (as papermill notebooks/rerank.ipynb -p grid paper-cpu -p name … makes one)
    added = load_grid(tmp_path / "grid-paper-cpu.yaml").run("cpu-k6").replace(name="cpu-k8-added", K=8)
    ensure_run(added, results, work, progress=False)
    cpu = load_grid(tmp_path / "grid-paper-cpu.yaml")
    pages = book_runs(cpu, results, ROOT)
    assert [c.run_name for c in pages] == ["cpu-k6"]  # declared (by default every run of the file); not the added one
    for config in pages:  # the page's settings, read from the folder, reuse the run: its page computes nothing
        assert run_status(config, run_folder(config, results)) == "complete"
    assert book_runs(load_grid(tmp_path / "grid-paper.yaml"), results, ROOT) == []  # `pages: []`: none
    # a declared run in progress (shards only) is refused, naming it and the command that computes it
    (tmp_path / "grid-paper-cpu.yaml").write_text(CPU + "  - {name: cpu-k10, K: 10, methods: [zero_shot]}\n")
    (results / "paper-cpu" / "cpu-k10" / "shards" / "000").mkdir(parents=True)
    with pytest.raises(InvariRankError, match=r"field 'pages': 1 declared run\(s\) not complete .*: cpu-k10;") as err:
        book_runs(load_grid(tmp_path / "grid-paper-cpu.yaml"), results, ROOT)
    assert "--only cpu-k10" in str(err.value) and "\n" not in str(err.value)
    summary = runs_summary(compendium.collect_runs(results, ["paper-cpu"]), styled=False)
    assert set(summary.index.get_level_values("run")) == {"cpu-k6", "cpu-k8-added"}
    added_rows = summary.xs("cpu-k8-added", level="run")
    assert len(added_rows) == 2 and set(added_rows["K"]) == {8}
    assert load_book_config(rule, root=ROOT).grids[1].grid.name == "paper-cpu"


def test_the_committed_rule_lists_the_papers_grid_first_and_every_page_is_a_committed_complete_run():
    """`make book` on a fresh clone computes nothing: every run a grid of the rule declares a page for is committed
    complete (runs in progress, with shards only, are not declared)."""
    book = load_book_config(ROOT / "configs" / "book.yaml", root=ROOT)
    assert [g.grid.name for g in book.grids][:3] == ["paper", "paper-cpu", "evidence"]
    paper = book.grids[0].sweep()
    assert paper[0].effective_k == 25 and sorted(c.effective_k for c in paper) == [15, 25, 50]
    assert len({c.data_label for c in paper}) == 1
    pages = 0
    for entry in book.grids:
        declared = book_runs(entry.grid, ROOT / "results", ROOT)
        assert sorted(c.run_name for c in declared) == sorted(entry.grid.pages)
        for config in declared:
            assert run_status(config, run_folder(config, ROOT / "results")) == "complete", config.run_name
            pages += 1
    assert pages >= 13  # default 4, evidence 6, paper-cpu 3 (committed complete)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("grids: []\n", "non-empty list"),
        ("grid: [x]\n", "expected one field 'grids'"),
        ("grids:\n  - {file: configs/grid-default.yaml, main_k: 10}\n", "unknown field 'main_k'"),
        ("grids:\n  - {file: configs/grid-default.yaml, main_K: 99}\n", "no run at K = 99"),
        ("grids:\n  - {file: configs/no-such-grid.yaml}\n", "grid file not found"),
        ("grids:\n  - configs/grid-default.yaml\n  - configs/grid-default.yaml\n", "listed twice"),
    ],
)
def test_a_bad_rule_is_one_line_naming_the_file_and_field(tmp_path, text, message):
    rule = tmp_path / "book.yaml"
    rule.write_text(text)
    with pytest.raises(InvariRankError, match=message) as err:
        load_book_config(rule, root=ROOT)
    assert str(rule) in str(err.value) and "\n" not in str(err.value)


@computes
def test_the_grid_main_run_honours_the_main_k(tmp_path):
    (tmp_path / "g.yaml").write_text(PAPER)
    grid = load_grid(tmp_path / "g.yaml")
    from invarirank.grid import main_run, main_sweep

    assert main_run(grid).run_name == "pp-k6-all" and main_run(grid, 8).run_name == "pp-k8"
    assert [c.run_name for c in main_sweep(grid, 8)] == ["pp-k8", "pp-k6-all"]
    assert isinstance(grid.runs[0], RunConfig)


@computes
def test_build_book_writes_a_page_per_complete_run_of_every_grid_and_computes_nothing(tmp_path, monkeypatch):
    """``invarirank book``'s page plan, with papermill replaced by a stand-in that records each page: a page per
    complete run under ``<build>/<grid>/rerank/`` (none for a run in shards, none for a grid without runs), the
    results page once with the rule, and stale pages removed; the results folder is left as it was."""
    import invarirank.grid._book as book_module

    rule = _rule(tmp_path)
    results, work, build = tmp_path / "results", tmp_path / "work", tmp_path / "build"
    _compute(tmp_path / "grid-paper-cpu.yaml", results, work)
    (results / "paper-cpu" / "cpu-k10" / "shards" / "000").mkdir(parents=True)  # begun, not finished
    for stale in (build / "paper-cpu" / "rerank" / "k009-gone.ipynb", build / "rerank" / "old.ipynb"):
        stale.parent.mkdir(parents=True, exist_ok=True)
        stale.write_text("{}")
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    executed: dict[str, dict] = {}

    def fake_execute(source, output, parameters, **kwargs):
        executed[str(Path(output).relative_to(build))] = dict(parameters)
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text("{}")
        return True

    monkeypatch.setattr(book_module, "execute_notebook", fake_execute)
    summary = book_module.build_book(rule, build_dir=build, results_dir=results, work_dir=work, root=ROOT)
    assert summary["grids"] == {"paper": [], "paper-cpu": ["cpu-k6"]}
    assert sorted(executed) == ["paper-cpu/rerank/k006-cpu-k6.ipynb", "results.ipynb"]  # synthetic data: no data page
    assert executed["results.ipynb"]["book_config"] == str(rule.resolve()) and executed["results.ipynb"]["grid"] is None
    assert not (build / "paper-cpu" / "rerank" / "k009-gone.ipynb").exists() and not list((build / "rerank").glob("*"))
    assert sorted(p.relative_to(results) for p in results.rglob("*")) == before  # nothing computed


def test_the_committed_rules_page_plan_is_the_declared_runs_and_their_data_sets(tmp_path, monkeypatch):
    """`invarirank book` with configs/book.yaml on the committed results (papermill replaced by a recorder): a page
    per run each grid file declares, a data page per data set that has one (none for the paper's grid, which declares
    no page yet: its raw files are not here), the results page once."""
    import invarirank.grid._book as book_module

    executed: list[str] = []
    monkeypatch.setattr(
        book_module,
        "execute_notebook",
        lambda src, out, params, **kw: executed.append(str(Path(out).relative_to(tmp_path))),
    )
    summary = book_module.build_book(build_dir=tmp_path, results_dir=ROOT / "results", root=ROOT)
    declared = {g.grid.name: g.grid.pages for g in load_book_config(root=ROOT).grids}
    for grid, runs in summary["grids"].items():
        assert sorted(runs) == sorted(declared[grid]), grid
        assert sum(page.startswith(f"{grid}/rerank/") for page in executed) == len(runs)
        assert sum(page.startswith(f"{grid}/data/") for page in executed) == (1 if runs else 0)
    assert summary["grids"]["paper"] == [] and executed.count("results.ipynb") == 1
