"""Hostile input, round 3: F5 (a grid checks every output place before it computes; the book checks its build
folder before it executes a page) and F16 (paths are resolved once, at the command; the project root comes from the
grid file's checkout or the working directory's, never from the installed package's folder). A rejected grid or book
exits 2 with one line naming the place and creates nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from invarirank.cli import main
from invarirank.errors import InvariRankError
from invarirank.store import checkout_root, project_root
from tests.support import ROOT
from tests.support.hostile import expect_rejected, read_only

GRID = (
    "grid: places\nruns:\n  - {name: r1, dataset: synthetic, scorer: simulated, model: simulated, retriever: none,"
    " M: 2, n_queries: 2, K: 6}\n"
)


def _grid(folder: Path) -> Path:
    path = folder / "g.yaml"
    path.write_text(GRID, encoding="utf-8")
    return path


def _places(tmp_path: Path) -> dict[str, Path]:
    return {"--results-dir": tmp_path / "results", "--work-dir": tmp_path / "work"}


def _argv(grid: Path, places: dict[str, Path], *extra: str) -> list[Any]:
    return ["grid", grid, *[x for kv in places.items() for x in kv], *extra]


def _rule(grid: Path) -> Path:
    """A book rule that renders only ``grid`` (its results page may show simulated runs)."""
    grid.write_text(grid.read_text(encoding="utf-8") + "include_simulated: true\n", encoding="utf-8")
    rule = grid.with_name("book.yaml")
    rule.write_text(f"grids:\n  - {{file: {grid}}}\n", encoding="utf-8")
    return rule


def _a_file(tmp_path: Path) -> Path:
    f = tmp_path / "afile"
    f.write_text("not a folder\n")
    return f


#: (id, which place is broken, how, fragments of the error line)
CASES = [
    ("results-dir-is-a-file", "--results-dir", lambda t: _a_file(t), ["--results-dir", "exists and is not a folder"]),
    ("work-dir-is-a-file", "--work-dir", lambda t: _a_file(t), ["--work-dir", "exists and is not a folder"]),
    (
        "results-dir-under-a-file",
        "--results-dir",
        lambda t: _a_file(t) / "sub",
        ["--results-dir", "is a file, expected a folder"],
    ),
]


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
@pytest.mark.parametrize("name,which,make,needles", CASES, ids=[c[0] for c in CASES])
def test_f5_output_places_are_checked_before_computing(name, which, make, needles, dry, tmp_path, capsys):
    places = _places(tmp_path)
    places[which] = make(tmp_path)
    expect_rejected(capsys, _argv(_grid(tmp_path), places, *(["--dry-run"] if dry else [])), needles)
    for flag, path in places.items():
        if flag != which:
            assert not path.exists(), f"{flag} {path} was created before the check"


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
def test_f5_an_unusable_cache_is_refused_before_computing(dry, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(_a_file(tmp_path)))
    places = _places(tmp_path)
    expect_rejected(
        capsys,
        _argv(_grid(tmp_path), places, *(["--dry-run"] if dry else [])),
        ["$INVARIRANK_CACHE", "afile", "exists and is not a folder"],
    )
    assert not any(p.exists() for p in places.values())


def test_f5_a_read_only_results_dir_is_refused_before_computing(tmp_path, capsys, monkeypatch):
    places = _places(tmp_path)
    places["--results-dir"].mkdir()
    read_only(monkeypatch, places["--results-dir"])
    expect_rejected(capsys, _argv(_grid(tmp_path), places), ["--results-dir", "not writable"])
    assert not places["--work-dir"].exists()


def test_f5_the_book_refuses_a_build_dir_that_is_a_file_before_executing(tmp_path, capsys):
    rule = _rule(_grid(tmp_path))
    argv = ["book", rule, "--build-dir", _a_file(tmp_path), "--results-dir", tmp_path / "results"]
    expect_rejected(capsys, argv, ["--build-dir", "exists and is not a folder"])
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "real-run"])
def test_f16_outside_a_checkout_a_grid_is_refused(dry, tmp_path, capsys, monkeypatch):
    """Neither the grid file nor the working directory lies in a checkout: one line, nothing written (the old
    fallback, the folder above the package, would publish into an installed package's tree)."""
    monkeypatch.chdir(tmp_path)
    grid = _grid(tmp_path)
    argv = ["grid", grid, *(["--dry-run"] if dry else [])]
    expect_rejected(capsys, argv, [str(tmp_path), "not inside an invarirank checkout", "run it from the checkout"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


def test_f16_outside_a_checkout_a_run_needs_its_out(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "run.yaml"
    cfg.write_text(
        "dataset: synthetic\nscorer: simulated\nmodel: simulated\nretriever: none\nM: 2\nn_queries: 2\n"
        "K: 6\ngrid: mine\nname: r1\n",
        encoding="utf-8",
    )
    expect_rejected(
        capsys,
        ["rerank", "--config", cfg, "--no-progress"],
        ["not inside an invarirank checkout", "give --out RUN_DIR"],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.yaml"]


def test_f16_the_root_comes_from_the_grid_file(tmp_path, capsys, monkeypatch):
    """A committed grid, priced from a working directory outside the checkout: its runs are found in the grid
    file's checkout (the default grid's runs are all committed and complete)."""
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["grid", str(ROOT / "configs" / "grid-default.yaml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "complete" in out and "missing" not in out
    assert project_root(grid_file=ROOT / "configs" / "grid-default.yaml") == ROOT
    assert checkout_root(tmp_path) is None
    with pytest.raises(InvariRankError, match="not inside an invarirank checkout"):
        project_root()


@pytest.mark.slow
def test_f16_relative_folders_are_resolved_once_at_the_command(tmp_path, capsys, monkeypatch):
    """Relative --results-dir / --work-dir given to `invarirank grid` and --results-dir / --build-dir to
    `invarirank book`, from the checkout's root: the grid computes the run once, in those folders, and executes no
    page; the book executes the page its grid file declares (executed in notebooks/), which reads the run there
    instead of computing it a second time under notebooks/."""
    monkeypatch.chdir(ROOT)
    rel = {flag: os.path.relpath(path, ROOT) for flag, path in _places(tmp_path).items()}
    grid = _grid(tmp_path)
    rule = _rule(grid)
    before = sorted(p.name for p in (ROOT / "notebooks").iterdir())
    assert main([str(a) for a in ["grid", grid, *[x for kv in rel.items() for x in kv]]]) == 0
    assert (tmp_path / "results" / "places" / "r1" / "metrics.json").is_file()
    assert not (tmp_path / "build").exists()  # the grid executes no page
    computed = sorted(p.relative_to(tmp_path) for p in (tmp_path / "results").rglob("*"))
    build = os.path.relpath(tmp_path / "build", ROOT)
    assert main([str(a) for a in ["book", rule, "--results-dir", rel["--results-dir"], "--build-dir", build]]) == 0
    assert [p.name for p in (tmp_path / "build" / "places" / "rerank").glob("*.ipynb")] == ["k006-r1.ipynb"]
    assert (tmp_path / "build" / "results.ipynb").is_file()
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "results").rglob("*")) == computed  # nothing computed
    assert sorted(p.name for p in (ROOT / "notebooks").iterdir()) == before
    for given in [*rel.values(), build]:  # nothing under notebooks/<relative>
        assert not (ROOT / "notebooks" / given).exists()


def test_f16_a_grid_file_s_relative_paths_are_made_absolute_against_the_root(tmp_path):
    """raw_dir, data_dir and candidates of a grid file are relative to the project root, made absolute when the
    grid is loaded (the notebooks then read the same files from notebooks/); a candidates run has no data page."""
    from invarirank.grid import load_grid

    grid = tmp_path / "g.yaml"
    grid.write_text(
        "grid: rel\nruns:\n  - {name: a, candidates: some/c.jsonl, scorer: simulated, model: simulated}\n"
        "  - {name: b, dataset: movielens, raw_dir: ../raw, K: 5}\n"
        "  - {name: c, dataset: movielens, data_dir: ~/prepared, K: 5}\n",
        encoding="utf-8",
    )
    as_given = load_grid(grid)
    assert [c.candidates for c in as_given.runs][0] == "some/c.jsonl"
    runs = load_grid(grid, root=tmp_path / "root").runs
    assert runs[0].candidates == str(tmp_path / "root" / "some" / "c.jsonl")
    assert runs[1].raw_dir == str(tmp_path / "raw")
    assert runs[2].data_dir == str(Path("~/prepared").expanduser())
    assert [d["dataset"] for d in as_given.data] == ["movielens"]  # no data page for the candidates run


@pytest.mark.slow
def test_f16_a_candidates_run_of_a_grid_is_computed_once_and_its_page_reads_it(tmp_path, capsys, monkeypatch):
    """A grid run on a candidates file given relative to the project root: computed once, its run page executed by
    the book (it used to fail on a data page with K = None, a traceback), and the published manifest holds no
    machine path."""
    import json

    from invarirank._io import read_json
    from invarirank.candidates import query_to_json
    from invarirank.data._synthetic import synthetic_queries

    cands = tmp_path / "c.jsonl"
    cands.write_text(
        "".join(json.dumps(query_to_json(q)) + "\n" for q in synthetic_queries(n_test=2, n_validation=0, k=6, seed=1)),
        encoding="utf-8",
    )
    grid = tmp_path / "g.yaml"
    rel = os.path.relpath(cands, ROOT)
    grid.write_text(
        f"grid: cands\nruns:\n  - {{name: r1, candidates: {rel}, scorer: simulated, model: simulated, "
        f"M: 2, methods: [zero_shot], n_bootstrap: 0}}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(ROOT)
    places = _places(tmp_path)
    assert main([str(a) for a in _argv(grid, places)]) == 0
    build = tmp_path / "build"
    book = ["book", _rule(grid), "--results-dir", places["--results-dir"], "--build-dir", build]
    assert main([str(a) for a in book]) == 0
    run = places["--results-dir"] / "cands" / "r1"
    manifest = read_json(run / "manifest.json")
    assert manifest["grid_run"]["candidates"] is None and manifest["config"]["candidates"] is None
    assert set(manifest["inputs"]) == {"candidates"}
    assert [p.name for p in (build / "cands" / "rerank").glob("*.ipynb")] == ["r1.ipynb"]
    assert not (build / "cands" / "data").exists()
