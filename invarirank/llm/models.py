"""Model registry and loading: the embedded GGUF models, local folders and Hugging Face ids.

Names that :func:`load_model` accepts
-------------------------------------
* ``"smollm2-135m"`` (default): ``SmolLM2-135M-Instruct.Q4_1.gguf`` from :func:`invarirank.assets.smollm2_gguf`,
  de-quantised **once** into a float32 safetensors folder ``cache_dir()/models/smollm2-135m/hf-fp32`` (≈ 40 s);
  later loads read that folder in seconds. Instruct model with a ChatML chat template.
* ``"gemma3-270m"``: ``gemma-3-270m-q4_k_m.gguf`` from :func:`invarirank.assets.gemma3_gguf`, converted the same
  way into ``cache_dir()/models/gemma3-270m/hf-fp32`` (≈ 105 s once). A *base* model without a chat template
  (the choice prompt then uses the documented plain turn format of :mod:`invarirank.llm.prompts`).
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
key (:mod:`invarirank.llm.cache`) never has to re-hash the weights at load time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from invarirank.errors import InvariRankError
from invarirank.io import sha256_file

__all__ = [
    "REGISTRY",
    "LoadedModel",
    "prepare",
    "prepared_dir",
    "is_prepared",
    "resolve_device",
    "resolve_dtype",
    "load_model",
    "load_tokenizer",
    "weights_sha256",
    "set_threads",
]

MANIFEST_NAME = "invarirank-model.json"
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


REGISTRY: dict[str, RegistryEntry] = {
    "smollm2-135m": RegistryEntry("smollm2-135m", _smollm2_gguf,
                                  "SmolLM2-135M-Instruct (Llama architecture, Q4_1 GGUF de-quantised to fp32)", True),
    "gemma3-270m": RegistryEntry("gemma3-270m", _gemma3_gguf,
                                 "Gemma 3 270M base (sliding-window layers, Q4_K_M GGUF de-quantised to fp32)", False),
}

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


_PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth")


def check_weights(folder: Path, *, allow_pickle: bool = False) -> list[Path]:
    """The weight files of a model folder, checked before loading: safetensors files whose header and data are
    complete (a truncated download is an error naming the file), or — only with ``allow_pickle`` — pickle-based
    files; raises :class:`InvariRankError` otherwise."""
    safe = sorted(folder.glob("*.safetensors"))
    if safe:
        for f in safe:
            _check_safetensors(f)
        return safe
    pickled = [f for pattern in _PICKLE_PATTERNS for f in sorted(folder.glob(pattern))]
    if not pickled:
        raise InvariRankError(f"model folder {folder}: no weight files (*.safetensors) found")
    if not allow_pickle:
        raise InvariRankError(f"model folder {folder}: only pickle-based weights ({pickled[0].name}), which can run "
                              f"code when loaded; convert them to safetensors, or pass --allow-pickle-weights if you "
                              f"trust their source")
    return pickled


def _check_safetensors(path: Path) -> None:
    """A safetensors file: 8-byte little-endian header length, a JSON header, then the tensors' bytes; every
    tensor's ``data_offsets`` must lie inside the file."""
    size = path.stat().st_size
    bad = f"model file {path}: not a complete safetensors file"
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise InvariRankError(f"{bad} ({size} bytes; truncated?)")
        n = int.from_bytes(head, "little")
        if n <= 0 or 8 + n > size:
            raise InvariRankError(f"{bad} (header of {n} bytes in a file of {size}; truncated?)")
        try:
            header = json.loads(fh.read(n).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise InvariRankError(f"{bad} (unreadable header)") from None
    if not isinstance(header, dict):
        raise InvariRankError(f"{bad} (unreadable header)")
    end = max((int(t["data_offsets"][1]) for k, t in header.items() if k != "__metadata__"
               and isinstance(t, dict) and isinstance(t.get("data_offsets"), list) and len(t["data_offsets"]) == 2),
              default=0)
    if 8 + n + end > size:
        raise InvariRankError(f"{bad} (its tensors need {8 + n + end} bytes, the file has {size}; truncated?)")


def _cache_root() -> Path:
    from invarirank.assets import cache_dir

    return cache_dir()


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
        print(f"invarirank: converting {gguf.name} to a float32 folder (once; about 1-2 minutes)",
              file=sys.stderr, flush=True)
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
        weights = _hash_weight_files(tmp)
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


# ---------------------------------------------------------------------------------------------------------------
# weights hashing


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        files = sorted(folder.glob("*.bin")) + sorted(folder.glob("*.pt")) + sorted(folder.glob("*.pth"))
    return files


_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _file_sha256_memo(path: Path) -> str:
    """sha256 of one weight file; Hub-cache blobs are named by their sha256 (read from the name), others are
    hashed once and memoised in ``cache_dir()/weights-sha256.json`` keyed by (real path, size, mtime)."""
    real = Path(os.path.realpath(path))
    if _HEX64.match(real.name):  # huggingface_hub stores LFS blobs under their sha256
        return real.name
    st = real.stat()
    memo_path = _cache_root() / "weights-sha256.json"
    key = f"{real}|{st.st_size}|{st.st_mtime_ns}"
    try:
        memo = json.loads(memo_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    digest = sha256_file(real)
    memo[key] = digest
    from invarirank.io import atomic_write_json

    atomic_write_json(memo_path, memo)
    return digest


def _hash_weight_files(folder: Path) -> str:
    files = _weight_files(folder)
    if not files:
        raise InvariRankError(f"model folder {folder}: no weight files (*.safetensors or *.bin) found")
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode())
        h.update(b"\0")
        h.update(_file_sha256_memo(f).encode())
        h.update(b"\n")
    return h.hexdigest()


def weights_sha256(model: Any, folder: Path | None = None) -> str:
    """sha256 that identifies the weights: of the weight files in ``folder`` when there are some, else of the
    model's parameters and buffers themselves (for models built in memory, e.g. tiny test models)."""
    if folder is not None:
        manifest = folder / MANIFEST_NAME
        if manifest.is_file():
            try:
                return str(json.loads(manifest.read_text(encoding="utf-8"))["weights_sha256"])
            except (ValueError, KeyError):
                pass
        if _weight_files(folder):
            return _hash_weight_files(folder)
    import torch

    h = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous()
        h.update(key.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _hash_tokenizer(tokenizer: Any) -> str:
    """sha256 of the tokenizer's vocabulary, added tokens and chat template (what decides the token ids)."""
    h = hashlib.sha256()
    vocab = tokenizer.get_vocab()
    for tok, idx in sorted(vocab.items(), key=lambda kv: kv[1]):
        h.update(f"{idx}\t{tok}\n".encode("utf-8", "surrogatepass"))
    h.update(repr(getattr(tokenizer, "bos_token_id", None)).encode())
    template = getattr(tokenizer, "chat_template", None)
    h.update((template if isinstance(template, str) else json.dumps(template, sort_keys=True, default=str))
             .encode("utf-8"))
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        try:
            h.update(backend.to_str().encode("utf-8"))
        except Exception:  # pragma: no cover - slow tokenizers
            pass
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------------
# device, dtype, threads


def resolve_device(device: str | None = "auto") -> "Any":
    """``"auto"``/None → CUDA if available else CPU; otherwise ``torch.device(device)``."""
    import torch

    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise InvariRankError(f"device {device!r}: not a torch device ({exc})") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InvariRankError(f"device {device!r}: CUDA is not available on this machine")
    return dev


_DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
           "float16": "float16", "fp16": "float16"}


def resolve_dtype(dtype: Any, device: Any) -> "Any":
    """None/"auto" → bfloat16 on CUDA, float32 elsewhere; strings ``float32|bfloat16|float16`` accepted."""
    import torch

    if dtype in (None, "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    name = _DTYPES.get(str(dtype).lower())
    if name is None:
        raise InvariRankError(f"dtype {dtype!r}: expected one of auto, float32, bfloat16, float16")
    return getattr(torch, name)


_THREADS_SET: int | None = None


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads and return the number in force.

    An explicit ``threads`` (or ``$INVARIRANK_THREADS``) always applies. Without one, the default (the CPUs this
    process may use) is applied only once per process, so that building another scorer never undoes an explicit
    choice made earlier.
    """
    global _THREADS_SET
    import torch

    env = os.environ.get("INVARIRANK_THREADS")
    if threads is None and env:
        threads = int(env)
    if threads is None:
        if _THREADS_SET is not None:
            return torch.get_num_threads()
        try:
            threads = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - non-Linux
            threads = os.cpu_count() or 1
    threads = max(1, int(threads))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    _THREADS_SET = threads
    return threads


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

    model.eval()
    param = next(model.parameters())
    return LoadedModel(
        name=name, model=model, tokenizer=tokenizer, device=param.device, dtype=param.dtype, folder=folder,
        weights_sha256=weights_sha256(model, folder), tokenizer_sha256=_hash_tokenizer(tokenizer),
        max_length=_model_max_length(model.config),
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        info={"torch": torch.__version__},
    )


_LOADED: dict[tuple, LoadedModel] = {}


def _resolve_source(name: str, *, allow_download: bool, trust_remote_code: bool = False,
                    allow_pickle: bool = False) -> tuple[Path, str]:
    """Registry name / local folder / Hub id → (local folder, display name)."""
    if name in REGISTRY:
        return prepare(name), name
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise InvariRankError(f"model folder {path}: no config.json (expected a Hugging Face model folder)")
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
                f"in the local Hub cache load; gated models need HF_TOKEN") from exc
        return Path(local), name
    raise InvariRankError(
        f"unknown model {name!r}: expected one of {', '.join(REGISTRY)}, a local model folder, "
        f"or a Hugging Face id like 'meta-llama/Llama-3.2-3B-Instruct'")


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes") or \
        os.environ.get("TRANSFORMERS_OFFLINE", "0").lower() in ("1", "true", "yes")


def load_model(name: str = "smollm2-135m", *, device: str | None = "auto", dtype: Any = None,
               trust_remote_code: bool = False, allow_download: bool = True, threads: int | None = None,
               attn_implementation: str | None = None, reuse: bool = True,
               allow_pickle_weights: bool = False) -> LoadedModel:
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
    folder, display = _resolve_source(name, allow_download=allow_download, trust_remote_code=trust_remote_code,
                                      allow_pickle=allow_pickle_weights)
    weights = check_weights(folder, allow_pickle=allow_pickle_weights)
    if trust_remote_code:
        print(f"invarirank: warning: trust_remote_code is on: the Python code in {folder} may run", file=sys.stderr)
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": dt, "trust_remote_code": trust_remote_code,
                              "use_safetensors": weights[0].suffix == ".safetensors"}
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
    if dev.type != "cuda":
        model.to(dev)
    model.eval()
    loaded = LoadedModel(
        name=display, model=model, tokenizer=tokenizer, device=dev, dtype=dt, folder=folder,
        weights_sha256=weights_sha256(model, folder), tokenizer_sha256=_hash_tokenizer(tokenizer),
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


def load_tokenizer(name: str = "smollm2-135m", *, trust_remote_code: bool = False,
                   allow_download: bool = True) -> Any:
    """The tokenizer of a model (the names of :func:`load_model`) without loading its weights: the same object
    :func:`load_model` puts in :attr:`LoadedModel.tokenizer` (a registry model is prepared first if needed)."""
    folder, display = _resolve_source(name, allow_download=allow_download, trust_remote_code=trust_remote_code)
    try:
        return _load_tokenizer(folder, trust_remote_code)
    except (OSError, ValueError) as exc:
        raise InvariRankError(f"model {display!r}: cannot load its tokenizer from {folder}: "
                              f"{str(exc).splitlines()[0]}") from exc


if __name__ == "__main__":   # ``python -m invarirank.llm.models`` = ``invarirank models`` (an alias)
    from invarirank.cli import main
    raise SystemExit(main(["models", *sys.argv[1:]]))
