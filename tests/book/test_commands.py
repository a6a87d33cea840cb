"""The commands the book and the README give a researcher are true: every ``papermill notebooks/rerank.ipynb``
command written in them passes parameters that the reranking notebook has and that make a valid run (read as
papermill reads ``-p`` values, so a list written ``"[a, b]"`` arrives as one string and is caught here), and the
run it names lands where the text says. Nothing is computed."""

from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from invarirank.runner import RunConfig
from tests.support import ROOT

SOURCES = [ROOT / "README.md", *sorted((ROOT / "book").rglob("*.md")), *sorted((ROOT / "notebooks").glob("*.py"))]
# papermill's own options (e.g. --log-output) may come before the notebook
COMMAND = re.compile(
    r"papermill(?:\s+--[a-z-]+)*\s+notebooks/rerank\.ipynb\s+\S+((?:\s+-p\s+\S+\s+(?:\"[^\"]*\"|[^\s`]+))*)"
)


def _text(path: Path) -> str:
    """The prose of a source as one line per paragraph: comment markers of percent files and the shell's
    continuation backslashes removed, so a command that the text breaks over lines reads whole."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if path.suffix == ".py":
        lines = [re.sub(r"^#\s?", "", line) for line in lines]
    return re.sub(r"\s*\\\s*\n\s*|\n\s*", " ", "\n".join(lines))


def _commands() -> list[tuple[str, dict[str, object]]]:
    # the conversion papermill applies to every `-p NAME VALUE`
    from papermill.cli import _resolve_type

    found = []
    for path in SOURCES:
        for match in COMMAND.finditer(_text(path)):
            words = shlex.split(match.group(1))
            params = {
                name: _resolve_type(value)
                for flag, name, value in zip(words[::3], words[1::3], words[2::3])
                if flag == "-p"
            }
            found.append((f"{path.relative_to(ROOT)}: {match.group(0)}", params))
    return found


def _notebook_parameters() -> dict[str, object]:
    """The reranking notebook's parameters cell: name → default value."""
    source = (ROOT / "notebooks" / "rerank.py").read_text(encoding="utf-8")
    cell = source.split('# %% tags=["parameters"', 1)[1].split("# %%", 1)[0].split("\n", 1)[1]
    return {
        t.id: ast.literal_eval(node.value)
        for node in ast.parse(cell).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }


def _config(params: dict[str, object], where: str) -> RunConfig:
    """The run the notebook makes of these parameters (papermill's values over the cell's defaults)."""
    merged = {**_notebook_parameters(), **params}
    return RunConfig.from_mapping({k: v for k, v in merged.items() if k in RunConfig.field_names()}, where)


COMMANDS = _commands()


def test_the_book_gives_papermill_commands():
    assert len(COMMANDS) >= 3, COMMANDS  # rerank notebook, results chapter (two), paper-scale chapter


@pytest.mark.parametrize("where,params", COMMANDS, ids=[c[0][:60] for c in COMMANDS])
def test_each_papermill_command_makes_a_valid_run(where, params):
    unknown = set(params) - set(_notebook_parameters())
    assert not unknown, (where, unknown)
    config = _config(params, where)
    if "methods" in params:
        assert len(config.methods) >= 1 and "[" not in "".join(config.methods), where


def test_the_quick_variant_lands_where_the_results_chapter_says():
    text = _text(ROOT / "notebooks" / "results.py")
    where, params = next(c for c in COMMANDS if c[0].startswith("notebooks/results.py") and "grid" not in c[1])
    config = _config(params, where)
    assert f"results/{config.grid}/{config.run_name}/" in text, config.run_name
    assert config.methods == ["zero_shot", "bootstrapping"] and config.K == 15


GRID_COMMANDS = [c for c in COMMANDS if (ROOT / "configs" / f"grid-{c[1].get('grid')}.yaml").is_file()]


@pytest.mark.parametrize("where,params", GRID_COMMANDS, ids=[f"{c[1]['grid']}: {c[0][:50]}" for c in GRID_COMMANDS])
def test_a_command_for_a_grid_gives_that_grid_s_settings(where, params):
    """A papermill command that names a grid of ``configs/`` (``-p grid evidence``) gives that grid's defaults
    (the settings that select its users and set its calibration), so its run joins that grid's figures."""
    from invarirank.grid import load_grid

    grid = load_grid(ROOT / "configs" / f"grid-{params['grid']}.yaml")
    config = _config(params, where)
    wanted = {k: v for k, v in (grid.raw.get("defaults") or {}).items() if k in RunConfig.field_names()}
    got = {k: getattr(config, k) for k in wanted}
    assert got == wanted, where
