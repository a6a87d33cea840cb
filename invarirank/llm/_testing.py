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
  validation queries whose relevant items sit at known retrieval ranks (:mod:`invarirank.llm._toy_queries`).
* :func:`reference_logits`: a plain forward of a real scorer's model (no cache, no batching), the reference of the
  tests.
* The scorer contract, as checks that raise ``AssertionError`` naming what broke (``check_*``;
  :mod:`invarirank.llm._scorer_contract`): a new scorer passes them all (:func:`check_scorer` runs every one).

This module is the kit's one import path: it re-exports the toy queries and the contract checks.
"""

from __future__ import annotations

from typing import Any

# re-exported as ``name as name``: this module is the kit's one import path (the tests', the device check's)
from ._scorer_contract import (
    check_aligned_under_permutation as check_aligned_under_permutation,
)
from ._scorer_contract import (
    check_declares_batching as check_declares_batching,
)
from ._scorer_contract import (
    check_deterministic as check_deterministic,
)
from ._scorer_contract import (
    check_prefix_stable as check_prefix_stable,
)
from ._scorer_contract import (
    check_requests_across_queries as check_requests_across_queries,
)
from ._scorer_contract import (
    check_scorer as check_scorer,
)
from ._scorer_contract import (
    contract_orders as contract_orders,
)
from ._toy_queries import (
    TOY_GENRES as TOY_GENRES,
)
from ._toy_queries import (
    TOY_WORDS as TOY_WORDS,
)
from ._toy_queries import (
    toy_items as toy_items,
)
from ._toy_queries import (
    toy_query as toy_query,
)
from ._toy_queries import (
    toy_split_queries as toy_split_queries,
)

ARCHS = ("llama", "mistral", "qwen2", "gemma3")


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

    text = _TRAIN_TEXT * 3 + " ".join(TOY_WORDS) + " " + " ".join(TOY_GENRES) + " 0123456789 (),:'-.\n"
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
