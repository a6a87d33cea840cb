"""The registry of embedded models (GGUF files that ship with the project) and their one-time conversion into a
cached float32 safetensors folder (``cache_dir()/models/<name>/hf-fp32``), which :func:`invarirank.llm.models.
load_model` then reads in seconds. Torch and transformers are imported only to convert.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from invarirank._io import sha256_file
from invarirank.errors import InvariRankError

from ._weights import MANIFEST_NAME, _cache_root, hash_weight_files

CONVERTER_VERSION = 1


@dataclass(frozen=True)
class RegistryEntry:
    """A named model that ships with the project as a GGUF file."""

    name: str
    gguf: Callable[[], Path]
    description: str
    has_chat_template: bool


def _smollm2_gguf() -> Path:
    from invarirank.assets import smollm2_gguf

    return smollm2_gguf()


def _gemma3_gguf() -> Path:
    from invarirank.assets import gemma3_gguf

    return gemma3_gguf()


def _qwen25_gguf() -> Path:
    from invarirank.assets import qwen25_coder_gguf

    return qwen25_coder_gguf()


REGISTRY: dict[str, RegistryEntry] = {
    "smollm2-135m": RegistryEntry(
        "smollm2-135m",
        _smollm2_gguf,
        "SmolLM2-135M-Instruct (Llama architecture, Q4_1 GGUF de-quantised to fp32)",
        True,
    ),
    "gemma3-270m": RegistryEntry(
        "gemma3-270m",
        _gemma3_gguf,
        "Gemma 3 270M base (sliding-window layers, Q4_K_M GGUF de-quantised to fp32)",
        False,
    ),
    "qwen2.5-coder-0.5b": RegistryEntry(
        "qwen2.5-coder-0.5b",
        _qwen25_gguf,
        "Qwen2.5-Coder-0.5B-Instruct (Qwen2 architecture, the Qwen2.5 tokenizer and "
        "chat template; AWQ then Q4_K_M GGUF upstream, de-quantised to fp32)",
        True,
    ),
}


def prepared_dir(name: str) -> Path:
    """Folder of the converted fp32 copy of a registry model (may not exist yet)."""
    if name not in REGISTRY:
        raise InvariRankError(f"model {name!r}: not a registry model; expected one of {', '.join(REGISTRY)}")
    return _cache_root() / "models" / name / "hf-fp32"


def is_prepared(name: str) -> bool:
    """True when the fp32 folder of ``name`` exists and is complete (its manifest is written last)."""
    return (prepared_dir(name) / MANIFEST_NAME).is_file()


def prepare(name: str, *, force: bool = False, quiet: bool = False) -> Path:
    """Convert the GGUF of registry model ``name`` into a cached float32 safetensors folder (once).

    Idempotent: returns at once when the folder is complete. The folder is written under a temporary
    name and renamed, so an interrupted conversion leaves nothing half-written.
    """
    target = prepared_dir(name)
    if is_prepared(name) and not force:
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = REGISTRY[name].gguf()
    t0 = time.perf_counter()
    if not quiet:
        print(
            f"invarirank: converting {gguf.name} to a float32 folder (once; about 1-2 minutes)",
            file=sys.stderr,
            flush=True,
        )
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model while it still looks quantised (ENVIRONMENT.md)
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".hf-fp32.", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        weights = hash_weight_files(tmp)
        manifest = {
            "name": name,
            "converter_version": CONVERTER_VERSION,
            "gguf": gguf.name,
            "gguf_sha256": sha256_file(gguf),
            "weights_sha256": weights,
            "dtype": "float32",
            "architecture": type(model).__name__,
            "has_chat_template": bool(getattr(tokenizer, "chat_template", None)),
        }
        (tmp / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if not quiet:
        print(f"invarirank: {name} ready in {target} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    return target
