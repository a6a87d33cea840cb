"""The model sees the canonical ids of its prompt (``tokenizer(prompt_text)``), for every registered model and both
scorers, on seeded random prompts with odd whitespace and unicode; the reused history prefix is the same in every
order and ends where the history text ends; a segmentation that differs from the canonical ids is an error.

Only the registered models' tokenizers are loaded (once per module); the scorers run their plans on a tiny random
model built around each tokenizer, so no forward pass of a real model is needed here.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from invarirank.errors import InvariRankError  # noqa: E402
from invarirank.llm._choice import ChoiceScorer  # noqa: E402
from invarirank.llm._prompts import render_item  # noqa: E402
from invarirank.llm._span import SpanScorer  # noqa: E402
from invarirank.llm._testing import tiny_model, train_tokenizer  # noqa: E402
from invarirank.llm._tokens import PromptTokenizer  # noqa: E402
from invarirank.llm.models import REGISTRY, load_tokenizer  # noqa: E402
from invarirank.types import HistoryEntry, Item, Query  # noqa: E402

MODELS = sorted(REGISTRY)
N_QUERIES = 30
TOL = 1e-4

_WORDS = (
    "Star",
    "Wars",
    "toy",
    "Amélie",
    "Léon",
    "e\u0301te\u0301",
    "Cafe\u0301",
    "東京物語",
    "千と千尋の神隠し",
    "기생충",
    "Жизнь",
    "שלום",
    "مرحبا",
    "🎬",
    "👨‍👩‍👧",
    "🇫🇷",
    "Ⅷ",
    "½",
    "ﬁn",
    "x²",
    "'Til",
    "(1996)",
    "[ITEM]",
    "[/ITEM]",
    "[A]",
    "...",
    "—",
    "«Léon»",
    "$9.99",
    "C++",
    "3:10",
    "zero\u200bwidth",
    "soft\u00adhyphen",
    "O'Brien",
    "Se7en",
    "2001:",
    "WALL·E",
    "M*A*S*H",
    "(no genres listed)",
    ")",
    "[",
    "]",
    ":",
    ",",
)
_GAPS = (" ", " ", " ", "  ", "\t", " \t ", "\n", "\r\n", "\u2028", "\xa0", "\u3000", " \n\n ", "\v", "\x85")
_EDGES = ("", "", "", " ", "  ", "\t", "\n", " \r\n", "\u3000", "\xa0")


def _text(rng: np.random.Generator, lo: int, hi: int) -> str:
    words = [_WORDS[i] for i in rng.integers(0, len(_WORDS), size=int(rng.integers(lo, hi + 1)))]
    out = words[0]
    for w in words[1:]:
        out += _GAPS[int(rng.integers(len(_GAPS)))] + w
    return _EDGES[int(rng.integers(len(_EDGES)))] + out + _EDGES[int(rng.integers(len(_EDGES)))]


def _item(rng: np.random.Generator, item_id: str) -> Item:
    year = None if rng.random() < 0.3 else int(rng.integers(1900, 2026))
    genres = tuple(_text(rng, 1, 2) for _ in range(int(rng.integers(0, 4))))
    return Item(item_id, _text(rng, 1, 4), year, genres)


def random_query(seed: int) -> Query:
    """A query with 0-12 history entries and 1-10 candidates whose titles and genres mix ASCII, accents (composed
    and combining), CJK, Hangul, RTL scripts, emoji (ZWJ sequences, flags), brackets and odd whitespace."""
    rng = np.random.default_rng(seed)
    ratings = (1.0, 2.0, 3.0, 4.0, 5.0, 0.5, 3.5, 4.25)
    history = tuple(
        HistoryEntry(_item(rng, f"h{i}"), ratings[int(rng.integers(len(ratings)))])
        for i in range(int(rng.integers(0, 13)))
    )
    cands = tuple(_item(rng, f"c{i}") for i in range(int(rng.integers(1, 11))))
    return Query(f"r{seed}", str(seed), history, cands, (cands[0].item_id,))


def _orders(q: Query, seed: int) -> list[list[Item]]:
    c = list(q.candidates)
    perm = np.random.default_rng(seed + 7).permutation(len(c))
    return [c, c[::-1], [c[int(i)] for i in perm]]


def _canonical(tokenizer, text: str) -> list[int]:
    """What the tokenizer gives for the whole text, BOS included once (a chat template may write it as text)."""
    bos = getattr(tokenizer, "bos_token", None)
    return list(tokenizer(text, add_special_tokens=not (bos and text.startswith(bos)))["input_ids"])


def _normal(tokenizer, text: str) -> str:
    """``text`` in the Unicode normal form the tokenizer applies before encoding (Qwen2.5's normalizer is NFC: it
    composes accents), which is what decoding its ids gives back; other tokenizers keep the text's own form."""
    import unicodedata

    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    form = str(normalizer).split("(")[0]
    return unicodedata.normalize(form, text) if form in ("NFC", "NFD", "NFKC", "NFKD") else text


@pytest.fixture(scope="module")
def registered():
    """name → (tokenizer, span scorer, choice scorer); each tokenizer is loaded once for the module."""
    got: dict[str, tuple] = {}

    def get(name: str):
        if name not in got:
            tok = load_tokenizer(name)
            lm = tiny_model("llama", tok, seed=0, name=f"tiny-{name}")
            got[name] = (tok, SpanScorer(lm, pass_cache=False), ChoiceScorer(lm, pass_cache=False))
        return got[name]

    return get


@pytest.mark.slow
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("kind", ["span", "choice"])
def test_plans_use_the_canonical_ids_of_random_prompts(name, kind, registered):
    tok, span, choice = registered(name)
    sc = span if kind == "span" else choice
    assert sc.use_chat_template == REGISTRY[name].has_chat_template if kind == "choice" else True
    for seed in range(N_QUERIES):
        q = random_query(seed)
        plans = []
        for order in _orders(q, seed):
            plan = sc.plan(q, order)
            assert plan.full_ids == _canonical(tok, plan.text), (name, kind, seed)
            plans.append(plan)
            if kind == "span":  # the scored tokens cover each line and nothing of the markers around it: at most
                # the line's own trailing whitespace before [/ITEM] (Qwen2.5's pre-tokenizer makes one token of a
                # punctuation mark and the newline after it, e.g. ")\n", so a line ending in ")" scores ")\n")
                for scored, line in zip(sc.scored_texts(q, order), [_normal(tok, render_item(it)) for it in order]):
                    assert scored.startswith(line) and not scored[len(line) :].strip(), (name, seed, scored, line)
        # the reused prefix: the same ids for every order, exactly the text before the first candidate
        assert len({p.prefix for p in plans}) == 1, (name, kind, seed)
        plan = plans[0]
        head_end = plan.segments[0][2]
        assert sc.encoder.decode(plan.prefix[len(plan.bos) :]) == _normal(tok, plan.text[:head_end]), (name, kind, seed)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,kind,segment",
    [
        (
            "smollm2-135m",
            "span",
            "the instruction and history",
        ),  # "\n\n" before [ITEM]: one token alone, two in context
        ("gemma3-270m", "choice", "the line of candidate"),  # "\n" + "\n": two tokens alone, one in context
    ],
)
def test_per_segment_encoding_is_caught(name, kind, segment, registered):
    """The defect of template version 1 (each segment encoded on its own) is an error naming model and place."""
    _, span, choice = registered(name)
    base = SpanScorer if kind == "span" else ChoiceScorer

    class PerSegment(base):  # type: ignore[valid-type, misc]
        def _plan(self, query, history, presented):
            plan = super()._plan(query, history, presented)
            encode = self.encoder.tokenizer.encode
            ids = list(plan.bos) + [
                t for _, a, b in plan.segments for t in encode(plan.text[a:b], add_special_tokens=False)
            ]
            n = len(plan.prefix)
            plan.prefix, plan.suffix, plan.tail = tuple(ids[:n]), ids[n:], []
            return plan

    good = span if kind == "span" else choice
    broken = PerSegment(good.loaded, pass_cache=False)
    q = random_query(3)
    good.plan(q, q.candidates)
    with pytest.raises(
        InvariRankError,
        match=rf"model tiny-{name}, {kind} prompt of query r3: .* token ids differ "
        rf"from the canonical tokenisation .* at token \d+ \(character offset "
        rf"\d+, in {segment}",
    ):
        broken.plan(q, q.candidates)


def _tokenizer_without_pretokenizer():
    """A byte-level BPE without the GPT-2 split pattern, trained until ``"]\\nToy"`` is one token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tok.train_from_iterator(["[ITEM]\nToy\n[/ITEM]\n\n" * 200], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")


def test_a_line_merged_with_its_delimiter_is_an_error():
    sc = SpanScorer(tiny_model("llama", _tokenizer_without_pretokenizer(), name="merging"), pass_cache=False)
    toy = Item("7", "Toy", None, ())
    q = Query("u7", "7", (), (toy,), ("7",))
    with pytest.raises(
        InvariRankError,
        match=r"model merging, span prompt of query u7: the tokens of the line of "
        r"the candidate at position 1 \(item 7\) .* reach into its delimiters",
    ):
        sc.plan(q, [toy])


def test_punctuation_merged_with_the_newline_is_scored_with_the_line():
    """Llama 3 / Qwen 2 pre-tokenizers write ``")\\n"`` as one token: it is scored with the line; scores still
    equal a full forward over the canonical ids."""
    lm = tiny_model("llama", train_tokenizer("llama3"), seed=5)
    fast, naive = SpanScorer(lm, pass_cache=False), SpanScorer(lm, naive=True)
    items = [Item("1", "Fargo", 1996, ()), Item("2", "Toy Story", 1995, ("Comedy",)), Item("3", "Untitled", 1999, ())]
    q = Query("u1", "1", (HistoryEntry(items[1], 4.0),), tuple(items), ("1",))
    for order in (items, items[::-1]):
        assert fast.scored_texts(q, order) == [render_item(it) + ("\n" if not it.genres else "") for it in order]
        assert fast.plan(q, order).full_ids == _canonical(lm.tokenizer, fast.plan(q, order).text)
        assert np.abs(fast.score(q, order).scores - naive.score(q, order).scores).max() <= TOL


@pytest.mark.parametrize("kind", ["bytelevel", "metaspace", "llama3"])
def test_tiny_tokenizers_give_canonical_plans(kind):
    tok = train_tokenizer(kind)
    lm = tiny_model("llama", tok, seed=1)
    for sc in (SpanScorer(lm, pass_cache=False), ChoiceScorer(lm, pass_cache=False, labels="upper")):
        for seed in range(5):
            q = random_query(100 + seed)
            k = min(len(q.candidates), max(1, getattr(sc, "max_k", 26)))
            order = list(q.candidates)[:k]
            assert sc.plan(q, order).full_ids == _canonical(tok, sc.plan(q, order).text)


def test_offsets_of_multi_byte_characters():
    enc = PromptTokenizer(train_tokenizer("bytelevel"))
    text = "ab 🎬 東京\n[x]"
    tt = enc.tokenize(text)
    i, j = tt.covering(text.index("🎬"), text.index("🎬") + 1)
    assert enc.decode(tt.ids[i:j]).strip() == "🎬" and j - i >= 2  # every byte piece of the emoji
    cut = tt.floor(text.index("["))
    assert enc.decode(tt.ids[:cut]) == text[: text.index("[")]
    assert enc.tokenize(text) is tt  # memoised


def test_a_slow_tokenizer_is_refused():
    class Slow:
        is_fast = False

    with pytest.raises(InvariRankError, match="model some-model: its tokenizer Slow is not a fast"):
        PromptTokenizer(Slow(), "some-model")
