"""Every entry point is `invarirank <verb>`, the `python -m` forms are aliases, and one exit-code rule holds:
0 success, 2 bad input, 1 a failed run."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from invarirank import cli
from invarirank.errors import InvariRankError, RunFailed
from tests.support import ROOT


def test_every_verb_is_registered():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert (
        set(sub.choices)
        == set(cli.COMMANDS)
        >= {"data", "retrieve", "rerank", "evaluate", "report", "grid", "models", "assets"}
    )


@pytest.mark.parametrize(
    "module, args, code",
    [
        ("invarirank", ["grid", "no-such-grid.yaml"], 2),
        ("invarirank.grid", ["no-such-grid.yaml"], 2),
        ("invarirank.assets", ["no-such-asset"], 2),
        ("invarirank.llm.models", ["prepare", "no-such-model"], 2),
        ("invarirank.llm.models", ["--bogus-flag"], 2),
        ("invarirank.grid", [str(ROOT / "configs" / "grid-default.yaml"), "--dry-run"], 0),
    ],
)
def test_module_aliases_share_the_exit_codes(module, args, code):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert res.returncode == code, res.stderr
    lines = res.stderr.strip().splitlines()
    if module != "invarirank":  # a deprecated alias says so in one line first, naming its removal release
        assert lines[0].startswith("invarirank: warning:") and "will be removed in invarirank" in lines[0]
        lines = lines[1:]
    if code == 2 and "--bogus-flag" not in args:
        assert len(lines) == 1 and lines[0].startswith("invarirank: error:")


@pytest.mark.parametrize(
    "error, code", [(InvariRankError("bad field x"), 2), (RunFailed("notebook failed"), 1), (None, 0)]
)
def test_one_exit_code_rule(monkeypatch, capsys, error, code):
    def func(args):
        if error is not None:
            raise error

    monkeypatch.setattr(cli, "build_parser", lambda: _parser_with(func))
    assert cli.main(["x"]) == code
    if error is not None:
        assert capsys.readouterr().err.strip() == f"invarirank: error: {error}"


def _parser_with(func):
    parser = argparse.ArgumentParser(prog="invarirank")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("x").set_defaults(func=func)
    return parser
