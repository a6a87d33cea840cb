"""Scorer options are declared once (:mod:`invarirank.llm._options`): every option a config may give, of every
registered scorer kind, is accepted by the scorer's constructor, a ``RunConfig``, ``invarirank rerank
--scorer-option`` and a grid file, and nothing else is; ``max_batch_tokens`` with ``--query-window`` runs end to end
on a real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from invarirank.candidates import write_candidates
from invarirank.cli import main
from invarirank.commands._rerank import config_from_args
from invarirank.data._synthetic import synthetic_queries
from invarirank.errors import InvariRankError
from invarirank.evaluation.observations import read_observations
from invarirank.grid._spec import load_grid
from invarirank.llm._options import config_examples
from invarirank.llm.factory import SCORER_KINDS, SCORER_OPTIONS, check_scorer_options, make_scorer
from invarirank.runner import RunConfig

KINDS = list(SCORER_KINDS)


def _candidates(tmp_path: Path, n_test: int = 2, k: int = 6) -> Path:
    path = tmp_path / "cands.jsonl"
    write_candidates(path, synthetic_queries(n_test=n_test, n_validation=1, k=k, seed=1))
    return path


def test_every_registered_kind_has_one_table_with_valid_examples():
    assert tuple(SCORER_OPTIONS) == SCORER_KINDS
    for kind in KINDS:
        examples = config_examples(SCORER_OPTIONS[kind])
        assert examples, kind
        for name, opt in SCORER_OPTIONS[kind].items():
            if opt.config:
                assert opt.check(opt.example) and opt.example != opt.default, (kind, name)
                assert json.loads(json.dumps(opt.example)) == opt.example, (kind, name)
        check_scorer_options(kind, examples)


@pytest.mark.parametrize("kind", KINDS)
def test_every_option_is_accepted_by_run_config(kind):
    examples = config_examples(SCORER_OPTIONS[kind])
    config = RunConfig.from_mapping({"scorer": kind, "scorer_options": examples})
    assert config.scorer_options == dict(sorted(examples.items()))
    with pytest.raises(InvariRankError, match="unknown option 'bogus'"):
        RunConfig.from_mapping({"scorer": kind, "scorer_options": {**examples, "bogus": 1}})


@pytest.mark.parametrize("kind", KINDS)
def test_every_option_is_accepted_on_the_command_line(kind, tmp_path):
    """The CLI's own path: ``--scorer-option KEY=VALUE`` (VALUE read as YAML) into the run config."""
    from invarirank.cli import build_parser

    examples = config_examples(SCORER_OPTIONS[kind])
    flags = [x for name, value in examples.items() for x in ("--scorer-option", f"{name}={json.dumps(value)}")]
    args = build_parser().parse_args(
        ["rerank", "--candidates", str(_candidates(tmp_path)), "--scorer", kind, "--out", str(tmp_path / "run"), *flags]
    )
    assert config_from_args(args).scorer_options == dict(sorted(examples.items()))


@pytest.mark.parametrize("kind", KINDS)
def test_every_option_is_accepted_in_a_grid_file(kind, tmp_path):
    examples = config_examples(SCORER_OPTIONS[kind])
    grid = {
        "grid": "options",
        "defaults": {
            "candidates": str(_candidates(tmp_path)),
            "scorer": kind,
            "scorer_options": examples,
            "M": 2,
            "n_queries": 1,
        },
        "runs": [{"K": 6, "methods": ["zero_shot"]}],
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(grid))
    (config,) = load_grid(path).runs
    assert config.scorer_options == dict(sorted(examples.items()))


def test_the_simulated_scorer_runs_with_every_option(tmp_path, capsys):
    """A tiny real call of ``invarirank rerank`` with every simulated option (the constructor reads the table)."""
    examples = config_examples(SCORER_OPTIONS["simulated"])
    flags = [x for name, value in examples.items() for x in ("--scorer-option", f"{name}={json.dumps(value)}")]
    out = tmp_path / "run"
    assert (
        main(
            [
                "rerank",
                "--candidates",
                str(_candidates(tmp_path)),
                "--scorer",
                "simulated",
                "--m",
                "2",
                "--methods",
                "zero_shot",
                "--n-bootstrap",
                "0",
                "--no-progress",
                "--out",
                str(out),
                *flags,
            ]
        )
        == 0
    )
    model = json.loads((out / "manifest.json").read_text())["model"]
    for name in ("bias_shape", "bias_strength", "noise_sd", "relevance", "utility_sd"):
        assert model[name] == examples[name], name
    assert make_scorer("simulated", "shown-name", **examples).identity()["model"] == "shown-name"


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "simulated"])
def test_every_option_is_accepted_by_the_real_constructors(kind):
    """The constructor reads the same table: every example value builds a scorer (on a tiny model) that scores,
    and each option's own effect shows where the scorer reports it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from invarirank.llm._testing import tiny_model, toy_query, train_tokenizer

    lm = tiny_model("llama", train_tokenizer("bytelevel"), seed=5)
    examples = config_examples(SCORER_OPTIONS[kind])
    # backend 'vllm' runs a worker in vLLM's own venv on a model folder: tests/llm/test_backend_option.py and
    # tests/llm/test_vllm_backend.py build it
    assert examples.pop("backend") == "vllm"
    scorer = make_scorer(kind, lm, **examples)
    ident = scorer.identity()
    assert (ident["batch_size"], ident["max_batch_tokens"], ident["max_length"]) == (4, 32768, 2048)
    assert ident["naive"] and ident["truncate_history"] and ident["pass_cache"] is None  # naive: no cache
    assert scorer.logits_mode == "all" and not scorer.prefix_reuse
    q = toy_query(k=4, history=3, seed=2)
    assert len(scorer.score(q, q.candidates).scores) == 4
    with pytest.raises(InvariRankError, match=f"{kind} scorer: unknown option 'bogus'"):
        make_scorer(kind, lm, bogus=1)
    with pytest.raises(InvariRankError, match="'max_batch_tokens' = 0"):
        make_scorer(kind, lm, max_batch_tokens=0)


def test_constructors_reject_what_the_table_rejects():
    with pytest.raises(InvariRankError, match="simulated scorer: option 'noise_sd' = -1.0, expected"):
        make_scorer("simulated", noise_sd=-1.0)
    with pytest.raises(InvariRankError, match="unknown option 'seed'"):
        check_scorer_options("simulated", {"seed": 3})  # make_scorer's own argument, never an option
    with pytest.raises(InvariRankError, match="'max_batch_tokens' = 0"):
        check_scorer_options("span", {"max_batch_tokens": 0})
    with pytest.raises(InvariRankError, match="unknown option 'model'"):
        check_scorer_options("simulated", {"model": "x"})  # the config's own 'model' setting
    with pytest.raises(InvariRankError, match="unknown option 'template'"):
        check_scorer_options("span", {"template": "x"})  # a Python object, never a config's


@pytest.mark.slow
def test_max_batch_tokens_with_a_query_window_on_a_real_model(tmp_path, capsys):
    """What the README and ``--query-window``'s help tell users to do: two queries packed by a token budget on
    SmolLM2 (K = 4, M = 2, zero-shot: 4 passes), the same observations as one query at a time."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from invarirank.llm.models import is_prepared

    if not is_prepared("smollm2-135m"):
        pytest.skip("SmolLM2 is not prepared (python -m invarirank.llm.models prepare)")
    cands = _candidates(tmp_path, n_test=2, k=4)
    common = [
        "rerank",
        "--candidates",
        str(cands),
        "--scorer",
        "span",
        "--model",
        "smollm2-135m",
        "--m",
        "2",
        "--methods",
        "zero_shot",
        "--n-bootstrap",
        "0",
        "--no-progress",
        "--device",
        "cpu",
        "--exposure-k",
        "2",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    assert (
        main(
            [
                *common,
                "--out",
                str(tmp_path / "window"),
                "--scorer-option",
                "max_batch_tokens=32768",
                "--scorer-option",
                "pass_cache=false",
                "--query-window",
                "4",
            ]
        )
        == 0
    )
    assert main([*common, "--out", str(tmp_path / "alone"), "--scorer-option", "pass_cache=false"]) == 0
    manifest = json.loads((tmp_path / "window" / "manifest.json").read_text())
    assert manifest["model"]["max_batch_tokens"] == 32768
    run = json.loads((tmp_path / "window" / "run.json").read_text())
    assert run["execution"]["query_window"] == 4
    assert run["scorer_stats"]["prefix_passes"] == 2 and run["scorer_stats"]["forward_passes"] < 4

    window, alone = (
        read_observations(next((tmp_path / name).glob("observations.jsonl*"))) for name in ("window", "alone")
    )
    assert [r["output"] for r in window] == [r["output"] for r in alone]
    for a, b in zip(window, alone):
        assert max(abs(x - y) for x, y in zip(a["scores"], b["scores"])) <= 1e-4
