"""Builders for tests and device checks: tiny randomly initialised causal LMs from configs, tiny tokenizers trained
locally, and toy queries. Nothing here touches the network.

* :func:`tiny_model` builds a Llama, Mistral, Qwen2 or Gemma 3 model (2 layers, hidden 64) from a config with a
  seeded initialisation, around any tokenizer (its vocabulary size decides the embedding size). Gemma 3 gets a
  sliding window of 16 positions (layers alternate sliding / full), far shorter than the test prompts, so that
  prefix reuse is tested across the window.
* :func:`train_tokenizer` trains a small byte-level BPE (GPT-2 or Llama 3 pre-tokenizer) or a SentencePiece-style
  BPE that adds a dummy prefix space (Metaspace, like Llama 2 / Mistral tokenizers) on a built-in text in a few
  milliseconds.
* :func:`toy_query` makes a query with MovieLens-like items; :func:`toy_split_queries` a run's worth of test and
  validation queries whose relevant items sit at known retrieval ranks.
* :func:`reference_logits`: a plain forward of a real scorer's model (no cache, no batching), the reference of the
  tests.
* The scorer contract, as checks that raise ``AssertionError`` naming what broke (``check_*``): the
  :class:`~invarirank.types.BatchScorer` members, scores aligned under a permutation of the presented order,
  ``score_requests`` across queries equal to scoring each alone, determinism; a new scorer passes them all
  (:func:`check_scorer` runs every one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from invarirank.types import HistoryEntry, Item, Query

__all__ = [
    "ARCHS",
    "tiny_model",
    "train_tokenizer",
    "toy_query",
    "toy_items",
    "toy_split_queries",
    "reference_logits",
    "contract_orders",
    "check_declares_batching",
    "check_aligned_under_permutation",
    "check_prefix_stable",
    "check_requests_across_queries",
    "check_deterministic",
    "check_scorer",
]

ARCHS = ("llama", "mistral", "qwen2", "gemma3")

_GENRES = (
    "Action",
    "Adventure",
    "Animation",
    "Children's",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)
_WORDS = (
    "Star",
    "Wars",
    "Toy",
    "Story",
    "Fargo",
    "Return",
    "Jedi",
    "Contact",
    "English",
    "Patient",
    "Scream",
    "Liar",
    "Air",
    "Force",
    "One",
    "Independence",
    "Day",
    "Godfather",
    "Titanic",
    "Raiders",
    "Lost",
    "Ark",
    "Silence",
    "Lambs",
    "Pulp",
    "Fiction",
    "Twelve",
    "Monkeys",
    "Babe",
    "Heat",
    "Casino",
    "Sense",
    "Sensibility",
    "Empire",
    "Strikes",
    "Back",
    "Jerry",
    "Maguire",
    "Rock",
    "Saint",
    "Apt",
    "Pupil",
    "Kolya",
    "'Til",
    "There",
    "Was",
    "You",
    "City",
    "Lost",
    "Children",
    "Amélie",
    "Das",
    "Boot",
    "Léon",
)


def toy_items(n: int, *, seed: int = 0, offset: int = 0) -> list[Item]:
    """``n`` MovieLens-like items (titles, integer years, 1-3 genres), seeded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    items = []
    for i in range(n):
        words = rng.choice(len(_WORDS), size=int(rng.integers(1, 4)), replace=False)
        title = " ".join(_WORDS[w] for w in words)
        year = None if rng.random() < 0.1 else int(rng.integers(1930, 1999))
        genres = tuple(
            _GENRES[g] for g in sorted(rng.choice(len(_GENRES), size=int(rng.integers(1, 4)), replace=False))
        )
        items.append(Item(str(offset + i + 1), title, year, genres))
    return items


def toy_query(k: int = 5, history: int = 8, *, seed: int = 0, query_id: str = "u1") -> Query:
    """A query with ``history`` rated items (newest first) and ``k`` candidates; ground truth = first candidate."""
    hist_items = toy_items(history, seed=seed + 1000, offset=1000)
    ratings = [float(1 + (i * 7 + seed) % 5) for i in range(history)]
    cands = tuple(toy_items(k, seed=seed))
    return Query(
        query_id,
        query_id.lstrip("uv") or "1",
        tuple(HistoryEntry(it, r) for it, r in zip(hist_items, ratings)),
        cands,
        (cands[0].item_id,),
    )


def toy_split_queries(n_test: int = 8, n_validation: int = 3, k: int = 8) -> list[Query]:
    """``n_test`` test queries ``u0, u1, ...`` then ``n_validation`` validation queries ``v0, ...``, each with ``k``
    candidates; query j's relevant item sits at retrieval rank ``3j mod k`` (0-based; with k = 8: 0,3,6,1,4,7,2,5,
    so at K = 3 only u0, u3, u6 keep it), plus one ground-truth item that was never retrieved."""
    out = []
    for split, n, pre in (("test", n_test, "u"), ("validation", n_validation, "v")):
        for j in range(n):
            cands = tuple(Item(str(100 * j + i), f"Movie {j}-{i}", 1990 + i, ("Drama",)) for i in range(k))
            truth = (str(100 * j + (j * 3) % k), "unretrieved")
            hist = (HistoryEntry(Item("1", "Old Movie", 1980, ("Drama",)), 4.0),)
            out.append(Query(f"{pre}{j}", str(j), hist, cands, truth, split))
    return out


_TRAIN_TEXT = """[SPAN]
Given the user's interaction history, rank the candidate items according to the user's preferences.

User history:
title: Star Wars (1977), rating: 5, genres: Action, Adventure, Romance, Sci-Fi, War
title: Toy Story (1995), rating: 4, genres: Animation, Children's, Comedy
[/SPAN]

[ITEM]
Fargo (1996), genres: Crime, Drama, Thriller
[/ITEM]

Candidates:
[A] Contact (1997), genres: Drama, Sci-Fi
[B] Scream (1996), genres: Horror, Thriller
[C] Liar Liar (1997), genres: Comedy
Which candidate will the user prefer most? Answer with its label only.
User: Assistant: [
"""


#: The pre-tokenizer pattern of Llama 3 (and, with single digits, Qwen 2): punctuation takes the newlines after it.
_LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


def train_tokenizer(kind: str = "bytelevel", vocab_size: int = 400) -> Any:
    """A small fast tokenizer trained on a built-in text (milliseconds, no files, no network).

    ``kind="bytelevel"``: GPT-2 style byte-level BPE (every string encodable; no BOS).
    ``kind="llama3"``: byte-level BPE behind the Llama 3 pre-tokenizer pattern, which writes punctuation and the
    newlines after it as one token (``")\\n"``, ``"]\\n\\n"``); no BOS.
    ``kind="metaspace"``: SentencePiece-style BPE with a dummy prefix space and a BOS ``<s>`` (like Llama 2 and
    Mistral tokenizers), byte fallback for unseen characters.

    The metaspace training text repeats ``[C`` so that `` [C`` merges into one token: the choice scorer's label
    check then finds that only ``A`` and ``B`` are single tokens after ``[`` (used to test its error message).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    text = _TRAIN_TEXT * 3 + " ".join(_WORDS) + " " + " ".join(_GENRES) + " 0123456789 (),:'-.\n"
    if kind == "metaspace":  # make "▁[C" one token: then "C" is not a single token after "Assistant: ["
        text += " ".join(f"[C{c}" for c in "abdefghijklmnopqrstuvwxyz" * 4) + "\n"
    if kind == "llama3":  # lines that end in ")" right before a newline, so that ")\n" merges
        text += "Fargo (1996)\n[/ITEM]\n\nUntitled (1999)\n[/ITEM]\n\n" * 4
    if kind in ("bytelevel", "llama3"):
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = (
            pre_tokenizers.ByteLevel(add_prefix_space=False)
            if kind == "bytelevel"
            else pre_tokenizers.Sequence(
                [
                    pre_tokenizers.Split(Regex(_LLAMA3_PATTERN), behavior="isolated"),
                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
                ]
            )
        )
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            special_tokens=["<|endoftext|>"],
            show_progress=False,
        )
        tok.train_from_iterator([text], trainer)
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            eos_token="<|endoftext|>",
            pad_token="<|endoftext|>",
            clean_up_tokenization_spaces=False,
        )
    if kind == "metaspace":
        byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size + 256, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens, show_progress=False
        )
        tok.train_from_iterator([text], trainer)
        bos = tok.token_to_id("<s>")
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
            pad_token="</s>",
            clean_up_tokenization_spaces=False,
        )
    raise ValueError(f"tokenizer kind {kind!r}: expected 'bytelevel', 'llama3' or 'metaspace'")


def tiny_model(
    arch: str,
    tokenizer: Any,
    *,
    seed: int = 0,
    dtype: Any = None,
    device: str = "cpu",
    init_std: float = 0.2,
    name: str | None = None,
    **overrides: Any,
) -> Any:
    """A 2-layer randomly initialised ``arch`` model around ``tokenizer``, wrapped as a
    :class:`~invarirank.llm.models.LoadedModel`. ``init_std`` (larger than the usual 0.02) spreads the logits so
    that scores differ clearly between candidates (useful for ranking comparisons across precisions)."""
    import torch
    import transformers as tf

    from .models import wrap_model

    vocab = len(tokenizer)
    common = dict(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        initializer_range=init_std,
        tie_word_embeddings=False,
    )
    if arch == "llama":
        config = tf.LlamaConfig(**common)
        cls = tf.LlamaForCausalLM
    elif arch == "mistral":
        config = tf.MistralConfig(**common, sliding_window=None)
        cls = tf.MistralForCausalLM
    elif arch == "qwen2":
        config = tf.Qwen2Config(**common)
        cls = tf.Qwen2ForCausalLM
    elif arch == "gemma3":
        config = tf.Gemma3TextConfig(
            **{**common, "head_dim": 16},
            sliding_window=16,
            query_pre_attn_scalar=16,
            layer_types=["sliding_attention", "full_attention"],
        )
        cls = tf.Gemma3ForCausalLM
    else:
        raise ValueError(f"arch {arch!r}: expected one of {', '.join(ARCHS)}")
    for key, value in overrides.items():
        setattr(config, key, value)
    for tok_attr, cfg_attr in (
        ("bos_token_id", "bos_token_id"),
        ("eos_token_id", "eos_token_id"),
        ("pad_token_id", "pad_token_id"),
    ):
        setattr(config, cfg_attr, getattr(tokenizer, tok_attr, None))
    torch.manual_seed(seed)
    model = cls(config)
    with torch.no_grad():  # seeded, arch-independent initialisation with a wide spread
        gen = torch.Generator().manual_seed(seed)
        for _name, p in sorted(model.named_parameters()):
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * init_std)
    model = model.to(device=device, dtype=dtype or torch.float32).eval()
    return wrap_model(model, tokenizer, name=name or f"tiny-{arch}")


def reference_logits(scorer: Any, ids: Any, *, last_only: bool = False) -> Any:
    """float32 logits of a plain forward of ``scorer``'s model over ``ids`` (no cache, no batching) at every
    position, or at the last one only (``last_only``, as ``generate`` does): the reference the tests compare the
    scorers' optimised paths with."""
    import torch

    kwargs: dict[str, Any] = {"use_cache": False}
    if last_only and scorer.forwards.has_logits_to_keep:
        kwargs["logits_to_keep"] = 1
    with torch.inference_mode():
        out = scorer.loaded.model(
            input_ids=torch.tensor([list(ids)], dtype=torch.long, device=scorer.loaded.device), **kwargs
        )
    return out.logits[0].float()


# -- the scorer contract: checks that can fail, for any scorer (tests/llm/test_scorer_contract.py runs them) --------


def contract_orders(query: Query) -> list[list[Item]]:
    """Presented orders for the contract checks: the retrieval order, its reverse and a rotation."""
    c = list(query.candidates)
    return [c, c[::-1], c[2:] + c[:2]]


def _scores(result: Any) -> Any:
    import numpy as np

    return np.asarray(result.scores, dtype=np.float64)


def _close(a: Any, b: Any, atol: float, what: str) -> None:
    import numpy as np

    assert a.shape == b.shape, f"{what}: {a.shape} scores against {b.shape}"
    if atol == 0:
        assert np.array_equal(a, b), f"{what}: {a} != {b}"
    else:
        assert np.abs(a - b).max() <= atol, f"{what}: {a} vs {b} (atol {atol})"


def check_declares_batching(scorer: Any) -> None:
    """The :class:`~invarirank.types.BatchScorer` members are there and well-formed: an integer ``batch_size``
    >= 1, a ``stats`` mapping of numbers, a JSON ``key_identity()`` and ``identity()``."""
    import json
    import numbers

    from invarirank.types import BatchScorer

    assert isinstance(scorer, BatchScorer), f"{type(scorer).__name__} is no BatchScorer"
    size = scorer.batch_size
    assert isinstance(size, int) and not isinstance(size, bool) and size >= 1, f"batch_size {size!r}"
    assert all(isinstance(v, numbers.Number) for v in dict(scorer.stats).values()), scorer.stats
    for ident in (scorer.key_identity(), scorer.identity()):
        assert json.loads(json.dumps(ident)) == ident, ident


def check_aligned_under_permutation(
    scorer: Any, fresh: Any, query: Query, *, atol: float = 0.0, position_free: bool = False
) -> None:
    """Scores stay with their candidates when the presented order is permuted.

    Every order of :func:`contract_orders`, scored through ``scorer`` after the others (so that any cache it
    keeps has seen permutations of the same candidates) and in one ``score_batch``, equals the scores a scorer
    from ``fresh()`` gives that order alone, slot by slot (a cache keyed on the candidate set, or results handed
    back in the wrong order, fail here). ``position_free``: the scorer's score of a candidate does not depend on
    its slot, so the score of each candidate must follow the candidate: ``score(permuted)[i]`` is the score of
    ``permuted[i]`` in the first order."""
    import numpy as np

    orders = contract_orders(query)
    alone = [_scores(fresh().score(query, o)) for o in orders]
    seen = [_scores(scorer.score(query, o)) for o in orders]
    batched = [_scores(r) for r in scorer.score_batch(query, orders[::-1])][::-1]
    for o, a, s, b in zip(orders, alone, seen, batched):
        where = f"order {[it.item_id for it in o]}"
        _close(s, a, atol, f"{where} after its permutations")
        _close(b, a, atol, f"{where} in a batch of its permutations")
    if position_free:
        first = {it.item_id: float(x) for it, x in zip(orders[0], alone[0])}
        for o, a in zip(orders[1:], alone[1:]):
            expected = np.array([first[it.item_id] for it in o], dtype=np.float64)
            _close(a, expected, atol, f"candidates of order {[it.item_id for it in o]} (position-free scorer)")


def check_prefix_stable(scorer: Any, query: Query, *, atol: float) -> None:
    """For a scorer whose score of the candidate in slot ``i`` reads only the prompt up to that candidate (the
    span scorer: causal attention): swapping the last two candidates leaves the scores of the other slots as they
    are (scores handed back in another slot order, e.g. reversed, fail here)."""
    c = list(query.candidates)
    a = _scores(scorer.score(query, c))
    b = _scores(scorer.score(query, c[:-2] + [c[-1], c[-2]]))
    _close(a[:-2], b[:-2], atol, "the slots before a swap of the last two")


def check_requests_across_queries(scorer: Any, fresh: Any, queries: Sequence[Query], *, atol: float = 0.0) -> None:
    """``score_requests`` over the orders of several queries, interleaved, equals scoring each request alone on a
    scorer from ``fresh()``, in order."""
    per_query = [[(q, o) for o in contract_orders(q)] for q in queries]
    interleaved = [r for group in zip(*per_query) for r in group]
    got = scorer.score_requests(interleaved)
    assert len(got) == len(interleaved), f"{len(got)} results for {len(interleaved)} requests"
    for (q, o), res in zip(interleaved, got):
        _close(
            _scores(res),
            _scores(fresh().score(q, o)),
            atol,
            f"query {q.query_id}, order {[it.item_id for it in o]} in a window of {len(queries)} queries",
        )


def check_deterministic(scorer: Any, query: Query) -> None:
    """The same order twice gives the same scores, bit for bit."""
    import numpy as np

    for o in contract_orders(query):
        a, b = _scores(scorer.score(query, o)), _scores(scorer.score(query, o))
        assert np.array_equal(a, b), f"order {[it.item_id for it in o]}: {a} then {b}"


def check_scorer(fresh: Any, queries: Sequence[Query], *, atol: float = 0.0, position_free: bool = False) -> None:
    """Every contract check on scorers from ``fresh()`` (a function building a new scorer; at least two queries
    with at least four candidates each): what a new scorer kind must pass. ``atol``: 0 for a scorer that is exact
    in any batch, a small float32 tolerance for a model scored in batches."""
    assert len(queries) >= 2 and all(len(q.candidates) >= 4 for q in queries), "two queries of >= 4 candidates"
    check_declares_batching(fresh())
    check_deterministic(fresh(), queries[0])
    check_aligned_under_permutation(fresh(), fresh, queries[0], atol=atol, position_free=position_free)
    check_requests_across_queries(fresh(), fresh, queries, atol=atol)
