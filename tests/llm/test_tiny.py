"""Real scorers on tiny randomly initialised Llama / Mistral / Qwen2 / Gemma 3 models built locally from configs.

Everything here is exact arithmetic checks on CPU float32 (tolerance 1e-4): prefix reuse, pass cache, batching,
logits-only-where-needed against plain full forwards; span boundaries; label checks; errors.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.errors import InvariRankError  # noqa: E402
from invarirank.llm import make_scorer  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import ARCHS, reference_logits, tiny_model, toy_items, toy_query, train_tokenizer  # noqa: E402
from invarirank.llm.models import load_model  # noqa: E402
from invarirank.types import HistoryEntry, Item, Query, rank_by_scores  # noqa: E402

TOL = 1e-4


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer("bytelevel")


@pytest.fixture(scope="module")
def sp_tok():
    return train_tokenizer("metaspace")


@pytest.fixture(scope="module")
def models(tok):
    return {arch: tiny_model(arch, tok, seed=zlib.crc32(arch.encode()) % 1000) for arch in ARCHS}


@pytest.fixture(scope="module")
def query():
    return toy_query(k=6, history=12, seed=3)


def _orders(q):
    c = list(q.candidates)
    return [c, c[::-1], [c[2], c[0], c[5], c[1]]]


@pytest.mark.parametrize("arch", ARCHS)
def test_span_prefix_reuse_and_pass_cache_equal_naive(arch, models, query, tmp_path):
    lm = models[arch]
    fast = SpanScorer(lm, cache_dir=tmp_path)
    naive = SpanScorer(lm, naive=True)
    prefix_len = len(fast.plan(query, query.candidates).prefix)
    if arch == "gemma3":
        assert prefix_len > 3 * lm.model.config.sliding_window  # the reuse crosses the sliding window
    first = {}
    for n, order in enumerate(_orders(query)):
        a, b = fast.score(query, order), naive.score(query, order)
        first[n] = a.scores
        assert a.scores.dtype == np.float32 and a.scores.shape == (len(order),)
        assert np.abs(a.scores - b.scores).max() <= TOL
        assert rank_by_scores(a.scores) == rank_by_scores(b.scores)  # the ranking, not only the scores, agrees
        assert not a.cached and 0 < a.tokens < b.tokens
    assert fast.stats["prefix_passes"] == 1 and fast.stats["prefix_reuses"] == 2
    assert fast.stats["tokens_computed"] < naive.stats["tokens_computed"]
    assert fast.stats["positions_projected"] < naive.stats["positions_projected"]
    again = fast.score(query, _orders(query)[1])
    assert again.cached and again.tokens == 0
    np.testing.assert_array_equal(again.scores, first[1])
    assert fast.stats["cache_hits"] == 1 and fast.stats["forward_passes"] == 3


@pytest.mark.parametrize("arch", ARCHS)
def test_choice_equals_log_softmax_of_plain_forward(arch, models, query):
    sc = ChoiceScorer(models[arch], pass_cache=False)
    for order in _orders(query)[:2]:
        res = sc.score(query, order)
        ids = sc.prompt_ids(query, order)
        ref = torch.log_softmax(reference_logits(sc, ids)[-1], dim=-1)[sc.label_ids[: len(order)]]
        assert np.abs(res.scores - ref.numpy()).max() <= TOL
    assert sc.stats["positions_projected"] == 1 + 2  # prefix (one row) + the last position of each pass


@pytest.mark.parametrize("kind", ["bytelevel", "metaspace"])
def test_scored_span_decodes_to_exactly_the_candidate_text(kind, tok, sp_tok):
    tokenizer = tok if kind == "bytelevel" else sp_tok
    lm = tiny_model("llama", tokenizer, seed=1)
    sc = SpanScorer(lm, pass_cache=False)
    items = toy_items(5, seed=9) + [
        Item("x1", "'Til There Was You", 1997, ("Drama", "Romance")),
        Item("x2", "Amélie", None, ()),
        Item("x3", "Das Boot (The Boat)", 1981, ("War",)),
    ]
    q = Query("u9", "9", (HistoryEntry(items[0], 4.0),), tuple(items), ("x1",))
    from invarirank.llm._prompts import render_item

    assert sc.scored_texts(q, items) == [render_item(it) for it in items]
    ex = sc.explain(q, items)
    for (a, b), it in zip(ex["spans"], items):
        assert sc.encoder.decode(ex["suffix_ids"][a:b]) == render_item(it)
    # the whole prompt decodes back to its text (BOS aside)
    bos = len(sc.encoder.bos_ids)
    assert sc.encoder.decode(ex["prefix_ids"][bos:] + ex["suffix_ids"]) == ex["text"]
    res = sc.score(q, items)
    assert np.isfinite(res.scores).all()


def test_batched_scoring_equals_one_by_one(models, query):
    lm = models["qwen2"]
    single = SpanScorer(lm, pass_cache=False)
    batched = SpanScorer(lm, pass_cache="memory", batch_size=3)
    orders = _orders(query) + [list(query.candidates)[1:], list(query.candidates)]  # last repeats the first
    got = batched.score_batch(query, orders)
    for order, res in zip(orders, got):
        assert np.abs(res.scores - single.score(query, order).scores).max() <= TOL
    assert got[-1].cached and batched.stats["cache_hits"] == 1
    assert batched.stats["forward_passes"] == 2  # 4 distinct orders in batches of 3 → 2 forwards
    cb = ChoiceScorer(lm, pass_cache=False, batch_size=4)
    cs = ChoiceScorer(lm, pass_cache=False)
    for order, res in zip(orders[:4], cb.score_batch(query, orders[:4])):
        assert np.abs(res.scores - cs.score(query, order).scores).max() <= TOL


@pytest.mark.parametrize("arch", ARCHS)
def test_batched_logits_with_one_dimensional_positions(arch, models, query):
    """Model code older than transformers' slice_logits_to_keep (5.17, a GPU machine's) takes only 1-D positions
    in logits_to_keep: the batched paths then project the union of the rows' positions and read each row's own
    out of it. Forced here on the installed transformers: the same scores as one by one, for both scorers and for
    batches of one prefix and of several (a token budget across queries)."""
    lm = models[arch]
    other = toy_query(k=len(query.candidates), history=3, seed=7, query_id="u-other")
    for cls in (SpanScorer, ChoiceScorer):
        single = cls(lm, pass_cache=False)
        for options in ({}, {"max_batch_tokens": 4096}):
            fallback = cls(lm, pass_cache=False, batch_size=4, **options)
            fallback.forwards.mask_rows = False
            requests = [(q, order) for q in (query, other) for order in _orders(q)[:3]]
            got = fallback.score_requests(requests)
            for (q, order), res in zip(requests, got):
                assert np.abs(res.scores - single.score(q, order).scores).max() <= TOL, (cls.__name__, options)
            assert fallback.stats["forward_passes"] < len(requests)
            assert fallback.stats["positions_projected"] >= sum(len(single.plan(q, o).needed) for q, o in requests)


def test_methods_in_lockstep_on_a_batching_scorer(models, query):
    """The runner's GPU path on CPU: all four methods over three orders in lockstep through a batch_size=3
    scorer rank like one call at a time on an unbatched one (scores within float tolerance)."""
    from invarirank.methods import METHODS, QueryPassCache, drive_many, method_steps, run_method

    lm = models["llama"]
    k = len(query.candidates)
    matrix = np.full((k, k), 1.0 / k)
    matrix[:, 0] += 0.5
    matrix /= matrix.sum(axis=1, keepdims=True)
    opts = {"stella": {"matrix": matrix}}
    pairs = [
        (t, order, name)
        for t, order in enumerate(_orders(query)[:2] + [list(query.candidates)[::2]])
        for name in METHODS
        if not (name == "stella" and len(order) != k)
    ]
    single = QueryPassCache(SpanScorer(lm, pass_cache=False))
    batched_scorer = SpanScorer(lm, pass_cache=False, batch_size=3)
    batched = QueryPassCache(batched_scorer)
    expected = [run_method(n, single, query, o, seed=1, t=t, **opts.get(n, {})) for t, o, n in pairs]
    got = drive_many([method_steps(n, query, o, seed=1, t=t, **opts.get(n, {})) for t, o, n in pairs], batched, query)
    for e, g in zip(expected, got):
        assert g.output == e.output and g.passes == e.passes
        assert np.abs(np.array(g.scores) - np.array(e.scores)).max() <= TOL
    assert batched.counters()["misses"] == single.counters()["misses"]
    assert batched_scorer.stats["forward_passes"] < single.scorer.stats["forward_passes"]


def test_persistent_pass_cache_across_scorers(models, query, tmp_path):
    lm = models["llama"]
    first = SpanScorer(lm, cache_dir=tmp_path)
    a = first.score(query, query.candidates)
    first.pass_cache.close()
    second = SpanScorer(lm, cache_dir=tmp_path)
    b = second.score(query, query.candidates)
    assert b.cached and b.tokens == 0 and second.stats["disk_hits"] == 1 and second.stats["forward_passes"] == 0
    np.testing.assert_array_equal(a.scores, b.scores)
    # another identity (other weights, other scorer kind, other delimiters) never reuses these scores
    other = SpanScorer(models["mistral"], cache_dir=tmp_path)
    assert not other.score(query, query.candidates).cached
    assert not ChoiceScorer(lm, cache_dir=tmp_path).score(query, query.candidates).cached
    assert (tmp_path / "passes.sqlite3").is_file()
    key_ident = first.key_identity()
    assert {"weights_sha256", "dtype", "device_type", "template_version", "scorer"} <= set(key_ident)


def test_ties_go_to_the_earlier_position(tok, query):
    lm = tiny_model("llama", tok, seed=2)
    with torch.no_grad():
        lm.model.lm_head.weight.zero_()  # every next-token distribution is uniform → every score ties
    for sc in (SpanScorer(lm, pass_cache=False), ChoiceScorer(lm, pass_cache=False)):
        order = list(query.candidates)[::-1]
        res = sc.score(query, order)
        assert np.all(res.scores == res.scores[0])
        assert rank_by_scores(res.scores) == list(range(len(order)))


def test_choice_label_check(tok, sp_tok, query):
    sp = ChoiceScorer(tiny_model("llama", sp_tok, seed=4), pass_cache=False)
    assert sp.max_k == 2  # the trained tokenizer merges "[C" into one token
    with pytest.raises(InvariRankError, match=r"query u1: .*largest K supported is 2"):
        sp.score(query, list(query.candidates)[:3])
    assert sp.score(query, list(query.candidates)[:2]).scores.shape == (2,)
    lm = tiny_model("llama", tok, seed=4)
    upper = ChoiceScorer(lm, pass_cache=False)
    assert upper.max_k == 26
    many = Query("u27", "27", query.history, tuple(toy_items(27, seed=5)), ("1",))
    with pytest.raises(InvariRankError, match=r"largest K supported is 26 \(labels='upper\+lower'"):
        upper.score(many, many.candidates)
    both = ChoiceScorer(lm, pass_cache=False, labels="upper+lower")
    assert both.score(many, many.candidates).scores.shape == (27,)
    with pytest.raises(InvariRankError, match="labels='digits'"):
        ChoiceScorer(lm, labels="digits")


def test_over_long_prompts(models, query):
    lm = models["llama"]
    full = SpanScorer(lm, pass_cache=False).plan(query, query.candidates).full_length
    strict = SpanScorer(lm, pass_cache=False, max_length=full - 1)
    with pytest.raises(InvariRankError, match=r"query u1: the span prompt has \d+ tokens, more than max_length"):
        strict.score(query, query.candidates)
    short = SpanScorer(lm, pass_cache=False, max_length=full - 1, truncate_history=True)
    res = [short.score(query, o) for o in _orders(query)]
    used = short.explain(query, query.candidates)["history_used"]
    assert 0 < used < len(query.history)
    assert short.stats["prefix_passes"] == 1  # every order (subset included) shares the shortened prefix
    ref = SpanScorer(lm, naive=True)
    q_short = Query(query.query_id, query.user_id, query.history[:used], query.candidates, query.ground_truth)
    assert np.abs(res[0].scores - ref.score(q_short, query.candidates).scores).max() <= TOL
    tiny = SpanScorer(lm, pass_cache=False, max_length=20, truncate_history=True)
    with pytest.raises(InvariRankError, match="even after dropping"):
        tiny.score(query, query.candidates)
    with pytest.raises(InvariRankError, match="exceeds the model's limit"):
        SpanScorer(lm, max_length=10**7)


def test_special_delimiters_variant(tok, query):
    lm = tiny_model("llama", tok, seed=6)
    n_vocab = lm.model.get_input_embeddings().weight.shape[0]
    sc = SpanScorer(lm, special_delimiters=True, pass_cache=False)
    assert lm.model.get_input_embeddings().weight.shape[0] == n_vocab  # the shared model is untouched
    emb = sc.loaded.model.get_input_embeddings().weight
    assert emb.shape[0] == n_vocab + 4
    torch.testing.assert_close(emb[-1], lm.model.get_input_embeddings().weight.mean(0))
    assert len(sc.encoder.tokenize("[ITEM]").ids) == 1
    from invarirank.llm._prompts import render_item

    assert sc.scored_texts(query, query.candidates) == [render_item(it) for it in query.candidates]
    naive = SpanScorer(sc.loaded, naive=True)
    assert np.abs(sc.score(query, query.candidates).scores - naive.score(query, query.candidates).scores).max() <= TOL
    assert sc.key_identity()["options"]["special_delimiters"] is True
    assert sc.key_identity()["weights_sha256"] != SpanScorer(lm, pass_cache=False).key_identity()["weights_sha256"]


def test_local_folder_and_unknown_models(models, tok, query, tmp_path, monkeypatch):
    lm = models["qwen2"]
    folder = tmp_path / "tiny-qwen2"
    lm.model.save_pretrained(folder)
    tok.save_pretrained(folder)
    sc = make_scorer("span", str(folder), cache_dir=tmp_path / "passes", device="cpu")
    assert sc.loaded.folder == folder.resolve() and sc.loaded.dtype == torch.float32
    # (transformers may rebuild a saved tokenizer with the model type's own class: compare with that tokenizer)
    from invarirank.llm.models import wrap_model

    ref = SpanScorer(wrap_model(lm.model, sc.loaded.tokenizer), pass_cache=False).score(query, query.candidates).scores
    assert np.abs(sc.score(query, query.candidates).scores - ref).max() <= TOL
    with pytest.raises(InvariRankError, match="unknown model 'no-such-model'"):
        make_scorer("span", "no-such-model")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InvariRankError, match="Hugging Face Hub"):
        load_model("invarirank-test/definitely-not-cached")
    with pytest.raises(InvariRankError, match="unknown option"):
        make_scorer("span", lm, bogus_option=1)
    with pytest.raises(InvariRankError, match="no config.json"):
        make_scorer("choice", str(tmp_path))


def test_unforkable_cache_falls_back_to_full_forwards(models, query, monkeypatch):
    import invarirank.llm._prefix as prefix

    monkeypatch.setattr(prefix, "_forkable_types", lambda: ())
    sc = SpanScorer(models["llama"], pass_cache=False)
    with pytest.warns(UserWarning, match="prefix reuse disabled"):
        got = [sc.score(query, o).scores for o in _orders(query)]
    assert not sc.prefix_reuse and "not forkable" in sc.identity()["prefix_reuse_note"]
    naive = SpanScorer(models["llama"], naive=True)
    for order, scores in zip(_orders(query), got):
        assert np.abs(scores - naive.score(query, order).scores).max() <= TOL


def test_pass_cache_key_is_stable_across_processes(tok):
    import subprocess
    import sys

    from invarirank.llm._persistent_cache import pass_key

    code = (
        "from invarirank.llm._testing import tiny_model, train_tokenizer\n"
        "from invarirank.llm._span import SpanScorer\n"
        "from invarirank.llm._persistent_cache import pass_key\n"
        "sc = SpanScorer(tiny_model('llama', train_tokenizer('bytelevel'), seed=7), pass_cache=False)\n"
        "print(pass_key(sc.key_identity(), 'prompt'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    here = SpanScorer(tiny_model("llama", tok, seed=7), pass_cache=False)
    assert out.stdout.strip().splitlines()[-1] == pass_key(here.key_identity(), "prompt")


def test_an_explicit_thread_count_is_kept_by_later_scorers(models):
    from invarirank.llm.models import set_threads

    before = torch.get_num_threads()
    try:
        assert set_threads(1) == 1
        SpanScorer(models["llama"], pass_cache=False)  # no threads option: must not reset the choice
        assert torch.get_num_threads() == 1
        SpanScorer(models["llama"], pass_cache=False, threads=2)
        assert torch.get_num_threads() == 2
    finally:
        set_threads(before)
