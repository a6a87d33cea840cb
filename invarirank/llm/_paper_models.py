"""The paper's three models as local folders: their real tokenizers, public chat templates and tiny random weights.

The weights of Llama-3.2-3B-Instruct, Mistral-7B-Instruct-v0.3 and Qwen2.5-7B-Instruct cannot be had here, but their
tokenizers can, as data files of three pip packages (:data:`invarirank.assets.PAPER_TOKENIZERS`). :func:`build`
turns each into a Hugging Face model folder under ``cache_dir()/models/paper-tiny/<name>/`` that loads like any
other (``invarirank rerank --model <folder>``):

* the real tokenizer as a fast (Rust) tokenizer (``tokenizer.json``) with the model's special tokens;
* the model's public chat template (``invarirank/llm/chat_templates/*.jinja``);
* a tiny random-weight model of the right architecture (Llama, Mistral, Qwen 2) with the real vocabulary size
  (hidden 32, 2 layers, 4 heads, 2 key/value heads; every matrix drawn from N(0, 0.2²) by a seeded generator, norms
  at 1), saved as safetensors. The scores it gives are meaningless; the ids it reads are the real model's.

``invarirank models paper`` (run by ``make setup``) builds all three once; a folder is complete when its
``invarirank-model.json`` (written last) records this :data:`BUILDER_VERSION`.

How faithful each tokenizer is, and how each is built: :mod:`invarirank.llm._paper_tokenizers`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from invarirank.errors import InvariRankError

from ._paper_tokenizers import TOKENIZER_BUILDERS, write_json

#: bump when a rebuilt folder would differ (tokenizer files, template, config or weights)
BUILDER_VERSION = 2
MANIFEST_NAME = "invarirank-model.json"

#: name of the folder -> (tokenizer key in invarirank.assets.PAPER_TOKENIZERS, the model it stands for)
PAPER_MODELS: dict[str, tuple[str, str]] = {
    "llama3.2-3b-instruct-tiny": ("llama3", "meta-llama/Llama-3.2-3B-Instruct"),
    "mistral-7b-instruct-v0.3-tiny": ("mistral", "mistralai/Mistral-7B-Instruct-v0.3"),
    "qwen2.5-7b-instruct-tiny": ("qwen", "Qwen/Qwen2.5-7B-Instruct"),
}

_INIT_STD = 0.2


def paper_dir(name: str) -> Path:
    """The folder of paper model ``name`` (one of :data:`PAPER_MODELS`; may not be built yet)."""
    if name not in PAPER_MODELS:
        raise InvariRankError(f"paper model {name!r}: expected one of {', '.join(PAPER_MODELS)}")
    from invarirank.assets import cache_dir

    return cache_dir() / "models" / "paper-tiny" / name


def is_built(name: str) -> bool:
    """Whether the folder of ``name`` is complete and made by this builder version."""
    try:
        manifest = json.loads((paper_dir(name) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("builder_version") == BUILDER_VERSION


def _save_weights(folder: Path, config: Any, seed: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=gen) * _INIT_STD)
    model.save_pretrained(folder, safe_serialization=True)


def build(name: str, *, force: bool = False, quiet: bool = False, seed: int = 0) -> Path:
    """Build the folder of paper model ``name`` once (idempotent; written under a temporary name and renamed, so
    an interrupted build leaves nothing half-written). Fetches its tokenizer file first if needed."""
    target = paper_dir(name)
    if is_built(name) and not force:
        return target
    from invarirank.assets import paper_tokenizer_files

    key, stands_for = PAPER_MODELS[name]
    source = paper_tokenizer_files()[key]
    if not quiet:
        print(
            f"invarirank: building {name} ({stands_for}'s tokenizer, tiny random weights)", file=sys.stderr, flush=True
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        config = TOKENIZER_BUILDERS[key](tmp, source)
        _save_weights(tmp, config, seed)
        from invarirank._io import sha256_file

        from .models import weights_sha256

        manifest = {
            "name": name,
            "stands_for": stands_for,
            "builder_version": BUILDER_VERSION,
            "seed": seed,
            "tokenizer_source": key,
            "tokenizer_source_sha256": sha256_file(source),
            "weights_sha256": weights_sha256(None, tmp),
            "dtype": "float32",
            "architecture": config.architectures[0]
            if getattr(config, "architectures", None)
            else type(config).__name__.replace("Config", "ForCausalLM"),
            "has_chat_template": True,
        }
        write_json(tmp / MANIFEST_NAME, manifest)  # last: a folder with a manifest is complete
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    finally:  # nothing half-written stays behind (gone already on success)
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def build_all(*, force: bool = False, quiet: bool = False) -> dict[str, Path]:
    """Build the three folders (see :func:`build`)."""
    return {name: build(name, force=force, quiet=quiet) for name in PAPER_MODELS}
