"""Model loading: the embedded GGUF models, local folders and Hugging Face ids (the registry and the GGUF
conversion live in :mod:`invarirank.llm._gguf`, the weight checks and identity hashes in
:mod:`invarirank.llm._weights`, device, dtype and threads in :mod:`invarirank.llm._devices`; their public names are
importable from here too).

Names that :func:`load_model` accepts
-------------------------------------
* ``"smollm2-135m"`` (default): ``SmolLM2-135M-Instruct.Q4_1.gguf`` from :func:`invarirank.assets.smollm2_gguf`,
  de-quantised **once** into a float32 safetensors folder ``cache_dir()/models/smollm2-135m/hf-fp32`` (≈ 40 s);
  later loads read that folder in seconds. Instruct model with a ChatML chat template.
* ``"gemma3-270m"``: ``gemma-3-270m-q4_k_m.gguf`` from :func:`invarirank.assets.gemma3_gguf`, converted the same
  way into ``cache_dir()/models/gemma3-270m/hf-fp32`` (≈ 105 s once). A *base* model without a chat template
  (the choice prompt then uses the documented plain turn format of :mod:`invarirank.llm._prompts`).
* a local folder holding a Hugging Face model (``config.json`` + weights + tokenizer);
* a Hugging Face Hub id ``org/name`` (e.g. ``meta-llama/Llama-3.2-3B-Instruct``). This is the only case in which a
  download may happen, and only because the user named the model; gated models take the usual ``HF_TOKEN``. With
  ``HF_HUB_OFFLINE=1`` only the local Hub cache is used.

:func:`load_tokenizer` takes the same names and loads only the tokenizer (what the token-id tests need).

Precision and device: ``device="auto"`` picks CUDA when available, else the CPU; the dtype defaults to
bfloat16 on CUDA and float32 on the CPU (bfloat16 is ~5x slower on CPUs without bf16 hardware).
Safety: weights are read from safetensors only; pickle-based weights (``*.bin``, ``*.pt``, ``*.pth``) are refused
unless pickle weights are allowed, and a model's own Python code (``trust_remote_code``) never runs unless remote
code is allowed — both only through :func:`allow` (the ``--trust-remote-code`` / ``--allow-pickle-weights`` flags of
``invarirank rerank``; never a grid, config file or scorer option) or the keyword arguments of :func:`load_model`
in Python. Remote code prints a warning line naming the folder. A truncated or corrupt ``*.safetensors`` file is an
error naming the file before transformers reads it.

Command line (for ``make setup``)::

    invarirank models prepare smollm2-135m gemma3-270m

converts the GGUFs once (idempotent: a prepared folder is left alone).

Every prepared folder carries ``invarirank-model.json`` with the GGUF's and the weights' sha256, so the pass cache
key (:mod:`invarirank.llm._persistent_cache`) never has to re-hash the weights at load time.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invarirank.errors import InvariRankError

from ._devices import resolve_device, resolve_dtype, set_threads
from ._gguf import REGISTRY, is_prepared, prepare, prepared_dir  # noqa: F401  (re-exported)
from ._weights import check_weights, hash_tokenizer, weights_sha256

_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


#: what the command line allowed for this process (see :func:`allow`); both off by default
_ALLOWED = {"trust_remote_code": False, "allow_pickle_weights": False}


def allow(*, trust_remote_code: bool = False, allow_pickle_weights: bool = False) -> None:
    """Allow, for this process, a model's own Python code and/or pickle-based weights. Called by the command line
    for the explicit ``--trust-remote-code`` / ``--allow-pickle-weights`` flags only."""
    _ALLOWED["trust_remote_code"] = bool(trust_remote_code)
    _ALLOWED["allow_pickle_weights"] = bool(allow_pickle_weights)


def quiet_loading() -> None:
    """Silence the model-loading progress bars of transformers / huggingface_hub (``--no-progress``)."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


# ---------------------------------------------------------------------------------------------------------------
# loading


@dataclass
class LoadedModel:
    """A causal LM ready for scoring. ``max_length`` is the model's own context limit (positions)."""

    name: str
    model: Any
    tokenizer: Any
    device: Any
    dtype: Any
    folder: Path | None
    weights_sha256: str
    tokenizer_sha256: str
    max_length: int
    has_chat_template: bool
    info: dict[str, Any] = field(default_factory=dict)

    def identity(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "weights_sha256": self.weights_sha256,
            "tokenizer_sha256": self.tokenizer_sha256,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device": self.device.type,
            "architecture": type(self.model).__name__,
        }


def _model_max_length(config: Any) -> int:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(text, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return 1 << 30


def wrap_model(model: Any, tokenizer: Any, *, name: str = "in-memory", folder: Path | None = None) -> LoadedModel:
    """Wrap an already built model + tokenizer (e.g. a tiny model built from a config in tests)."""
    import torch

    check_vocabulary(name, tokenizer, model)
    model.eval()
    param = next(model.parameters())
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tokenizer,
        device=param.device,
        dtype=param.dtype,
        folder=folder,
        weights_sha256=weights_sha256(model, folder),
        tokenizer_sha256=hash_tokenizer(tokenizer),
        max_length=_model_max_length(model.config),
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        info={"torch": torch.__version__},
    )


_LOADED: dict[tuple, LoadedModel] = {}


def _resolve_source(
    name: str, *, allow_download: bool, trust_remote_code: bool = False, allow_pickle: bool = False
) -> tuple[Path, str]:
    """Registry name / local folder / Hub id → (local folder, display name)."""
    if not isinstance(name, str) or not name.strip():
        raise InvariRankError(
            f"model name {name!r} is empty; expected one of {', '.join(REGISTRY)}, a local model folder or a Hugging "
            f"Face id"
        )
    if name in REGISTRY:
        return prepare(name), name
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise InvariRankError(f"model folder {path}: no config.json (expected a Hugging Face model folder)")
        _check_own_code(path, trust_remote_code)
        return path.resolve(), str(path.resolve())
    if _HUB_ID.match(name) and not path.exists():
        try:
            from huggingface_hub import snapshot_download
        except ImportError as exc:  # pragma: no cover
            raise InvariRankError(f"model {name!r}: huggingface_hub is not installed") from exc
        patterns = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
        if trust_remote_code:
            patterns.append("*.py")
        offline = not allow_download or _hub_offline()
        try:
            local = snapshot_download(name, allow_patterns=patterns, local_files_only=offline)
            if allow_pickle and not list(Path(local).glob("*.safetensors")):  # PyTorch .bin weights only
                local = snapshot_download(name, allow_patterns=patterns + ["*.bin"], local_files_only=offline)
        except Exception as exc:  # network, gated, not found, offline without a cached copy
            raise InvariRankError(
                f"model {name!r}: cannot get it from the Hugging Face Hub ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); with HF_HUB_OFFLINE=1 only models already "
                f"in the local Hub cache load; gated models need HF_TOKEN"
            ) from exc
        return Path(local), name
    raise InvariRankError(
        f"unknown model {name!r}: expected one of {', '.join(REGISTRY)}, a local model folder, "
        f"or a Hugging Face id like 'meta-llama/Llama-3.2-3B-Instruct'"
    )


def _check_own_code(folder: Path, trust_remote_code: bool) -> None:
    """A model folder whose ``config.json`` names its own Python classes (``auto_map``) is meant to run that code:
    without ``trust_remote_code`` transformers would silently load a stock class in its place (another model than
    the folder's author wrote), so it is refused, naming the folder."""
    if trust_remote_code:
        return
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # an unreadable config.json is reported by the loader itself
    if isinstance(config, dict) and config.get("auto_map"):
        raise InvariRankError(
            f"model folder {folder}: its config.json names its own Python code (auto_map); pass --trust-remote-code "
            f"(scorer option trust_remote_code) to run it, after reading it"
        )


def check_vocabulary(display: str, tokenizer: Any, model: Any) -> None:
    """Refuse a tokenizer whose ids reach past the model's input embeddings (an ``IndexError`` inside the first
    forward pass otherwise): the tokenizer and weights are from different models."""
    embeddings = model.get_input_embeddings()
    rows = getattr(embeddings, "num_embeddings", None)
    if isinstance(rows, int) and len(tokenizer) > rows:
        raise InvariRankError(
            f"model {display!r}: its tokenizer has {len(tokenizer)} tokens, more than the {rows} rows of the model's "
            f"embeddings; expected the tokenizer of these weights"
        )


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") or os.environ.get(
        "TRANSFORMERS_OFFLINE", "0"
    ).lower() in ("1", "true", "yes")


def load_model(
    name: str = "smollm2-135m",
    *,
    device: str | None = "auto",
    dtype: Any = None,
    trust_remote_code: bool = False,
    allow_download: bool = True,
    threads: int | None = None,
    attn_implementation: str | None = None,
    reuse: bool = True,
    allow_pickle_weights: bool = False,
) -> LoadedModel:
    """Load a causal LM for scoring (see the module docstring for the accepted names and the safety rules).

    Loaded models are shared within the process (keyed by name, device, dtype) unless ``reuse=False``.
    """
    import torch

    trust_remote_code = bool(trust_remote_code) or _ALLOWED["trust_remote_code"]
    allow_pickle_weights = bool(allow_pickle_weights) or _ALLOWED["allow_pickle_weights"]
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if dev.type == "cpu":
        set_threads(threads)
    key = (name, str(dev), str(dt), trust_remote_code, attn_implementation)
    if reuse and key in _LOADED:
        return _LOADED[key]
    folder, display = _resolve_source(
        name, allow_download=allow_download, trust_remote_code=trust_remote_code, allow_pickle=allow_pickle_weights
    )
    weights = check_weights(folder, allow_pickle=allow_pickle_weights)
    if trust_remote_code:
        print(f"invarirank: warning: trust_remote_code is on: the Python code in {folder} may run", file=sys.stderr)
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {
        "dtype": dt,
        "trust_remote_code": trust_remote_code,
        "use_safetensors": weights[0].suffix == ".safetensors",
    }
    if attn_implementation:
        kwargs["attn_implementation"] = attn_implementation
    if dev.type == "cuda":
        kwargs["device_map"] = {"": str(dev)}
    try:
        tokenizer = _load_tokenizer(folder, trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(str(folder), **kwargs)
    except _load_errors() as exc:  # unreadable files; corrupt weights (safetensors' or torch's own errors)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvariRankError(f"model {display!r}: cannot load from {folder}: {first}") from None
    check_vocabulary(display, tokenizer, model)
    if dev.type != "cuda":
        model.to(dev)
    model.eval()
    loaded = LoadedModel(
        name=display,
        model=model,
        tokenizer=tokenizer,
        device=dev,
        dtype=dt,
        folder=folder,
        weights_sha256=weights_sha256(model, folder),
        tokenizer_sha256=hash_tokenizer(tokenizer),
        max_length=_model_max_length(model.config),
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        info={"torch": torch.__version__, "folder": str(folder)},
    )
    if reuse:
        _LOADED[key] = loaded
    return loaded


def _load_errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (OSError, ValueError, RuntimeError)
    try:
        from safetensors import SafetensorError
    except ImportError:  # pragma: no cover
        return errors
    return errors + (SafetensorError,)


def _load_tokenizer(folder: Path, trust_remote_code: bool) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=trust_remote_code)


def load_tokenizer(name: str = "smollm2-135m", *, trust_remote_code: bool = False, allow_download: bool = True) -> Any:
    """The tokenizer of a model (the names of :func:`load_model`) without loading its weights: the same object
    :func:`load_model` puts in :attr:`LoadedModel.tokenizer` (a registry model is prepared first if needed)."""
    folder, display = _resolve_source(name, allow_download=allow_download, trust_remote_code=trust_remote_code)
    try:
        return _load_tokenizer(folder, trust_remote_code)
    except (OSError, ValueError) as exc:
        raise InvariRankError(
            f"model {display!r}: cannot load its tokenizer from {folder}: {str(exc).splitlines()[0]}"
        ) from exc


if __name__ == "__main__":  # ``python -m invarirank.llm.models`` = ``invarirank models`` (a deprecated alias)
    from invarirank._deprecation import deprecated_command
    from invarirank.cli import main

    deprecated_command(
        "python -m invarirank.llm.models", "invarirank models (or python -m invarirank models)", removed_in="0.3.0"
    )
    raise SystemExit(main(["models", *sys.argv[1:]]))
