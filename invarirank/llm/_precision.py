"""Precision on the CPU: bfloat16 only where the CPU computes it.

A run's precision is a setting fixed when the run starts (the ``dtype`` scorer option, part of the run's identity
when it is not the default), never picked from the hardware. float32 is the CPU default. bfloat16 on a CPU without
bf16 instructions (``avx512_bf16`` or ``amx_bf16`` among the CPU's flags, as ``lscpu`` and ``/proc/cpuinfo`` list
them) is emulated: on this project's machines it ran 4.9x slower than float32 and moved scores by ~1e-2
(``book/data/precision_cpu.json``). Such a run is refused with one line, not silently switched to float32.
Only the measurement of that emulation itself (``benchmarks/precision_cpu.py``) lifts the refusal, by setting
``INVARIRANK_ALLOW_EMULATED_BF16=1``.
"""

from __future__ import annotations

import os
import platform
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import InvariRankError

#: CPU flags that mean bf16 arithmetic in hardware (AVX-512 BF16 on Intel Cooper Lake+ / AMD Zen 4+, Intel AMX)
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def _cpuinfo_fields(cpuinfo: str) -> dict[str, str]:
    """``/proc/cpuinfo``'s fields, the first value of each (the first processor's); empty where there is no such
    file (e.g. macOS)."""
    try:
        text = Path(cpuinfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def _flags_of(fields: dict[str, str]) -> frozenset[str]:
    return frozenset((fields.get("flags") or fields.get("Features") or "").split())


@lru_cache(maxsize=1)
def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU's flags from ``/proc/cpuinfo`` (``flags``, or ``Features`` on ARM; empty where there is no such
    file, e.g. macOS)."""
    return _flags_of(_cpuinfo_fields(cpuinfo))


@lru_cache(maxsize=1)
def cpu_description(cpuinfo: str = "/proc/cpuinfo") -> dict[str, Any]:
    """What a result computed on this CPU may depend on, as run manifests and benchmarks record it: the CPU's
    model name (``/proc/cpuinfo``'s ``model name``; :func:`platform.processor` where there is none), its
    bf16-related flags (:data:`BF16_CPU_FLAGS` and ``amx_tile``), and whether it computes bf16 in hardware
    (``None``: the flags cannot be read)."""
    fields = _cpuinfo_fields(cpuinfo)
    flags = _flags_of(fields)
    return {
        "model_name": fields.get("model name") or platform.processor(),
        "bf16_flags": sorted(flags & {*BF16_CPU_FLAGS, "amx_tile"}),
        "bf16_supported": cpu_supports_bf16(flags),
    }


def cpu_supports_bf16(flags: frozenset[str] | None = None) -> bool | None:
    """True / False from the CPU's flags; ``None`` when the flags cannot be read (not refused then)."""
    flags = cpu_flags() if flags is None else flags
    if not flags:
        return None
    return bool(flags & set(BF16_CPU_FLAGS))


def check_cpu_precision(dtype_name: str, device_type: str, flags: frozenset[str] | None = None) -> None:
    """Refuse ``bfloat16`` on a CPU without bf16 instructions (one line naming the option and the flags)."""
    if device_type != "cpu" or dtype_name != "bfloat16" or os.environ.get("INVARIRANK_ALLOW_EMULATED_BF16") == "1":
        return
    if cpu_supports_bf16(flags) is False:
        raise InvariRankError(
            f"dtype 'bfloat16' on the CPU: this CPU has no bf16 instructions (none of {', '.join(BF16_CPU_FLAGS)} "
            f"among its flags), so bfloat16 would be emulated (several times slower, other scores); use "
            f"dtype=float32, the CPU default, or a machine whose CPU lists one of them"
        )
