"""bfloat16 on a CPU without bf16 instructions is refused, never switched (no torch needed)."""

from __future__ import annotations

import pytest

from invarirank.errors import InvariRankError
from invarirank.llm._precision import check_cpu_precision, cpu_description, cpu_flags, cpu_supports_bf16

ZEN3 = frozenset("fpu sse sse2 avx avx2 fma f16c".split())
SAPPHIRE = frozenset("fpu sse avx2 avx512f avx512_bf16 amx_bf16 amx_tile".split())


def test_bf16_refused_without_the_instructions(monkeypatch):
    monkeypatch.delenv("INVARIRANK_ALLOW_EMULATED_BF16", raising=False)
    with pytest.raises(InvariRankError, match=r"dtype 'bfloat16' on the CPU: .*avx512_bf16, amx_bf16"):
        check_cpu_precision("bfloat16", "cpu", ZEN3)


@pytest.mark.parametrize(
    "dtype,device,flags",
    [
        ("bfloat16", "cpu", SAPPHIRE),
        ("float32", "cpu", ZEN3),
        ("bfloat16", "cuda", ZEN3),
        ("bfloat16", "cpu", frozenset()),
    ],
)
def test_allowed_where_bf16_is_real_or_not_asked(dtype, device, flags, monkeypatch):
    monkeypatch.delenv("INVARIRANK_ALLOW_EMULATED_BF16", raising=False)
    check_cpu_precision(dtype, device, flags)  # no error: hardware bf16, float32, a GPU, unknown flags


def test_only_the_emulation_benchmark_lifts_the_refusal(monkeypatch):
    monkeypatch.setenv("INVARIRANK_ALLOW_EMULATED_BF16", "1")
    check_cpu_precision("bfloat16", "cpu", ZEN3)


def test_flags_are_read_from_cpuinfo(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512_bf16\n")
    cpu_flags.cache_clear()
    try:
        assert cpu_flags(str(p)) == frozenset({"fpu", "avx2", "avx512_bf16"})
        assert cpu_supports_bf16(cpu_flags(str(p))) is True
        assert cpu_supports_bf16(frozenset({"avx2"})) is False
        assert cpu_flags(str(tmp_path / "none")) == frozenset()
    finally:
        cpu_flags.cache_clear()


def test_cpu_description_names_the_model_and_its_bf16_flags(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\nflags\t\t: fpu avx2 amx_tile amx_bf16\n"
    )
    cpu_flags.cache_clear()
    cpu_description.cache_clear()
    try:
        assert cpu_description(str(p)) == {
            "model_name": "Intel(R) Xeon(R) Platinum 8480+",
            "bf16_flags": ["amx_bf16", "amx_tile"],
            "bf16_supported": True,
        }
    finally:
        cpu_flags.cache_clear()
        cpu_description.cache_clear()


def test_model_loading_refuses_emulated_bf16(monkeypatch):
    torch = pytest.importorskip("torch")
    from invarirank.llm import _precision as precision
    from invarirank.llm import models

    monkeypatch.delenv("INVARIRANK_ALLOW_EMULATED_BF16", raising=False)
    monkeypatch.setattr(precision, "cpu_flags", lambda: ZEN3)
    cpu = torch.device("cpu")
    with pytest.raises(InvariRankError, match="dtype 'bfloat16' on the CPU"):
        models.resolve_dtype("bf16", cpu)
    assert models.resolve_dtype(None, cpu) == torch.float32  # the CPU default is never bf16
    monkeypatch.setattr(precision, "cpu_flags", lambda: SAPPHIRE)
    assert models.resolve_dtype("bfloat16", cpu) == torch.bfloat16
