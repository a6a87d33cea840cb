"""Where a model runs: the device (``"auto"`` picks CUDA when available, else the CPU), the dtype (bfloat16 on CUDA,
float32 on the CPU, where bfloat16 is ~5x slower without bf16 hardware) and the CPU threads torch uses, set once
per process.
"""

from __future__ import annotations

import os
from typing import Any

from invarirank.errors import InvariRankError
from invarirank.llm._precision import check_cpu_precision


def resolve_device(device: str | None = "auto") -> Any:
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


_DTYPES = {
    "float32": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "fp16": "float16",
}


def resolve_dtype(dtype: Any, device: Any) -> Any:
    """None/"auto" → bfloat16 on CUDA, float32 elsewhere; strings ``float32|bfloat16|float16`` accepted.
    bfloat16 on a CPU without bf16 instructions is refused (:func:`invarirank.llm._precision.check_cpu_precision`)."""
    import torch

    if dtype in (None, "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if isinstance(dtype, torch.dtype):
        resolved = dtype
    else:
        name = _DTYPES.get(str(dtype).lower())
        if name is None:
            raise InvariRankError(f"dtype {dtype!r}: expected one of auto, float32, bfloat16, float16")
        resolved = getattr(torch, name)
    check_cpu_precision(str(resolved).replace("torch.", ""), device.type)
    return resolved


_THREADS_SET: int | None = None


def set_threads(threads: int | None = None) -> int:
    """Set torch's intra-op threads and return the number in force.

    An explicit ``threads`` (or ``$INVARIRANK_THREADS``) always applies. Without one, the default (the CPUs this
    process may use) is applied only once per process, so that building another scorer never undoes an explicit
    choice made earlier.
    """
    global _THREADS_SET
    from .._limits import check_threads

    env = os.environ.get("INVARIRANK_THREADS")
    if threads is None and env:
        if not env.strip().isdigit() or int(env) < 1:
            raise InvariRankError(f"INVARIRANK_THREADS={env!r}: expected a whole number of threads >= 1")
        threads = check_threads(int(env), "INVARIRANK_THREADS=")
    elif threads is not None:
        check_threads(int(threads), "threads")
    import torch  # after the checks: a huge count can hang or crash the numeric libraries as they load

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
