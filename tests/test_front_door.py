"""The package's front door (``invarirank.__init__``): the README's example runs as it is written, every front-door
name resolves lazily (``import invarirank`` imports neither torch nor the runner), and ``rerank_query`` takes any
scorer and hands ``evaluate`` rows it accepts."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import invarirank as ir
from invarirank.candidates import write_candidates
from invarirank.llm._simulated import SimulatedScorer
from invarirank.llm._testing import toy_split_queries
from invarirank.methods import QueryPassCache
from invarirank.methods.stella import calibrate
from tests.support import ROOT  # noqa: E402

EXAMPLE = re.compile(r"<!-- front-door-example[^>]*-->\s*```python\n(.*?)```\s*<!-- /front-door-example -->", re.S)


def readme_example() -> str:
    found = EXAMPLE.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(found) == 1, "README.md must hold exactly one marked front-door example"
    return found[0]


def run_example(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter in ``cwd`` (with this checkout first on the path), as a reader runs it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def reader_folder(tmp_path: Path, k: int = 6) -> Path:
    """A folder as the example expects it: ``work/cand/candidates.jsonl`` from the first stage."""
    (tmp_path / "work" / "cand").mkdir(parents=True)
    write_candidates(tmp_path / "work" / "cand" / "candidates.jsonl", toy_split_queries(n_test=8, k=k))
    return tmp_path


def test_the_readme_example_is_short_and_runs_as_written(tmp_path):
    folder = reader_folder(tmp_path)
    code = readme_example()
    assert len(code.strip().splitlines()) <= 10
    res = run_example(code, folder)
    assert res.returncode == 0, res.stderr[-3000:]
    printed = eval(res.stdout.strip().splitlines()[-1])  # the dict the example prints
    assert list(printed) == ["zero_shot", "bootstrapping", "sgs"]
    assert all(-1.0 <= v <= 1.0 for v in printed.values())
    rows = ir.read_observations(folder / "observations.jsonl")
    assert len(rows) == 5 * 3 * 4  # 5 queries x 3 methods x M = 4
    assert ir.evaluate(rows, n_bootstrap=200) == ir.evaluate(folder / "observations.jsonl", n_bootstrap=200)


@pytest.mark.slow
def test_the_readme_example_with_smollm2(tmp_path):
    """The same example on the real model, kept to a few passes: one query of 3 candidates, 2 presented orders."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    folder = reader_folder(tmp_path, k=3)
    code = readme_example()
    for old, new in (
        ('ir.make_scorer("simulated")', 'ir.make_scorer("span", "smollm2-135m", pass_cache=False)'),
        ("[:5]", "[:1]"),
        ("M=4", "M=2"),
        ("n_bootstrap=200", "n_bootstrap=0"),
    ):
        assert old in code
        code = code.replace(old, new)
    res = run_example(code, folder)
    assert res.returncode == 0, res.stderr[-3000:]
    rows = ir.read_observations(folder / "observations.jsonl")
    assert [r["method"] for r in rows] == ["zero_shot"] * 2 + ["bootstrapping"] * 2 + ["sgs"] * 2
    assert len({r["model"] for r in rows}) == 1 and rows[0]["model"]
    assert all(len(r["scores"]) == 3 and all(np.isfinite(r["scores"])) and max(r["scores"]) <= 0 for r in rows)


def test_import_invarirank_loads_nothing_heavy():
    code = textwrap.dedent("""
        import sys, invarirank
        heavy = [m for m in ("torch", "transformers", "invarirank.runner", "invarirank.llm", "invarirank.evaluation",
                             "pandas") if m in sys.modules]
        assert not heavy, heavy
        invarirank.evaluate, invarirank.rerank_query, invarirank.make_scorer
        assert "torch" not in sys.modules
    """)
    res = run_example(code, ROOT)
    assert res.returncode == 0, res.stderr[-3000:]


def test_every_front_door_name_resolves_to_its_documented_object():
    from invarirank.audit.driver import rerank
    from invarirank.candidates import read_candidates
    from invarirank.errors import InvariRankError
    from invarirank.evaluation import evaluate, read_observations, write_observations
    from invarirank.llm import make_scorer
    from invarirank.methods import METHODS
    from invarirank.runner import rerank_query
    from invarirank.types import HistoryEntry, Item, Query

    expected = {
        "read_candidates": read_candidates,
        "make_scorer": make_scorer,
        "METHODS": METHODS,
        "rerank_query": rerank_query,
        "evaluate": evaluate,
        "read_observations": read_observations,
        "write_observations": write_observations,
        "InvariRankError": InvariRankError,
        "Query": Query,
        "Item": Item,
        "HistoryEntry": HistoryEntry,
        "audit": importlib.import_module("invarirank.audit"),  # the subpackage, callable (ir.audit(...))
        "rerank": rerank,
    }
    assert set(ir.__all__) == set(expected) | {"__version__"}
    for name, obj in expected.items():
        assert getattr(ir, name) is obj, name
        assert name in dir(ir)
    assert callable(ir.audit) and ir.audit.audit is ir.audit.driver.audit
    with pytest.raises(AttributeError, match="no attribute 'rerank_queries'"):
        ir.rerank_queries  # noqa: B018


def test_rerank_query_takes_any_scorer_and_evaluate_takes_its_rows():
    q = toy_split_queries(n_test=2, k=6)[0]

    class Plain:  # the Scorer protocol and nothing else: no clear(), no batches
        name = "plain"

        def __init__(self):
            self.inner, self.calls = SimulatedScorer(seed=3), 0

        def score(self, query, presented):
            self.calls += 1
            return self.inner.score(query, presented)

        def identity(self):
            return {"name": "plain"}

    plain = Plain()
    rows = ir.rerank_query(plain, q, M=3, seed=5)
    assert [(r.method, r.permutation) for r in rows] == [
        (m, t) for m in ("zero_shot", "bootstrapping", "sgs") for t in range(3)
    ]
    assert {r.model for r in rows} == {"plain"} and {r.dataset for r in rows} == {""}
    # passes are shared between the methods of the query: fewer scorer calls than requested passes
    assert plain.calls < sum(r.passes for r in rows)
    again = ir.rerank_query(SimulatedScorer(seed=3), q, M=3, seed=5)
    assert [r.to_json() | {"model": ""} for r in rows] == [r.to_json() | {"model": ""} for r in again]
    # the rows as objects, as dicts, or read back from a file: the same metrics
    assert ir.evaluate(rows, n_bootstrap=20) == ir.evaluate([r.to_json() for r in rows], n_bootstrap=20)


def test_rerank_query_keeps_a_given_pass_cache_and_its_counters():
    q = toy_split_queries(n_test=1, k=5)[0]
    cache = QueryPassCache(SimulatedScorer(seed=0))
    rows = ir.rerank_query(cache, q, methods=["sgs", "zero_shot"], M=2, model="m", dataset="d")
    assert [r.method for r in rows] == ["zero_shot", "zero_shot", "sgs", "sgs"]  # the registry's order
    assert cache.counters()["requests"] == sum(r.passes for r in rows) and cache.counters()["hits"] > 0
    assert {(r.model, r.dataset) for r in rows} == {("m", "d")}


def test_stella_runs_when_calibrations_are_given():
    queries = toy_split_queries(n_test=1, n_validation=3, k=5)
    q, validation = queries[0], [v for v in queries if v.split == "validation"]
    scorer = SimulatedScorer(seed=1)
    matrix = calibrate(scorer, validation, 5, n_queries=3, repeats=1)
    rows = ir.rerank_query(scorer, q, M=2, calibrations={5: matrix})
    assert [r.method for r in rows][::2] == ["zero_shot", "bootstrapping", "stella", "sgs"]
    assert all(4 <= r.passes <= 10 for r in rows if r.method == "stella")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(methods=["zero_shot", "borda"]), "unknown method 'borda'"),
        (dict(methods=[]), "'methods' is empty"),
        (dict(methods=["stella"]), r"needs calibrations\[5\]"),
        (dict(calibrations={4: np.eye(4)}), r"needs calibrations\[5\]"),
        (dict(calibrations={5: np.eye(4)}), r"calibrations\[5\] is a \(4, 4\) matrix, expected 5×5"),
        (dict(M=0), "M = 0, expected an integer >= 1"),
        (dict(M=2.5), "M = 2.5, expected an integer >= 1"),
    ],
)
def test_rerank_query_rejects_bad_arguments_with_one_clear_error(kwargs, message):
    q = toy_split_queries(n_test=1, k=5)[0]
    with pytest.raises(ir.InvariRankError, match=message):
        ir.rerank_query(SimulatedScorer(), q, **kwargs)


def test_evaluate_names_the_row_that_is_not_a_row():
    with pytest.raises(ir.InvariRankError, match=r"<rows>:2: expected a JSON object, got str"):
        ir.evaluate(
            [
                {"query_id": "u", "method": "m", "permutation": 0, "input": ["a"], "output": ["a"], "relevant": ["a"]},
                "not a row",
            ]
        )


def test_no_package_hides_a_module_behind_a_name_of_the_same_name():
    """``invarirank.methods._sgs`` is the module, not a function re-exported over it; no package re-exports a name
    over one of its own modules (``evaluation.positional_exposure`` holds ``exposure``, ``grid.book_build`` holds
    ``build``, ...)."""
    import ast

    found: dict[str, set[str]] = {}
    for init in sorted((ROOT / "invarirank").rglob("__init__.py")):
        pkg = init.parent
        modules = {p.stem for p in pkg.glob("*.py")} | {p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()}
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [a.asname or a.name for a in node.names if not (node.level == 1 and node.module is None)]
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            hidden = set(names) & (modules - {"__init__"})
            if hidden:
                found.setdefault(str(init.relative_to(ROOT)), set()).update(hidden)
    assert found == {}
    import invarirank.methods
    import invarirank.methods._sgs

    assert type(invarirank.methods._sgs).__name__ == "module"
    assert invarirank.methods.method("sgs").steps is invarirank.methods._sgs.sgs_steps  # the registry still works
