"""The ``vllm`` scorer backend's tests: the vLLM venv's Python, or a skip that says why (a failure naming the fix
under ``INVARIRANK_REQUIRE_ALL=1``, as ``make test`` sets it, so a missing venv is counted, never silently
skipped)."""

from __future__ import annotations

import os

import pytest

from invarirank.errors import InvariRankError


def vllm_or_skip() -> str:
    """The Python that runs the vLLM worker (:func:`invarirank.llm._vllm_backend.vllm_python`), after checking it
    imports vLLM; else skip (or fail under ``INVARIRANK_REQUIRE_ALL=1``)."""
    from invarirank.llm import _vllm_backend as vllm_backend

    try:
        python = vllm_backend.vllm_python()
        vllm_backend.probe(python)
    except InvariRankError as exc:
        why = f"the vLLM backend cannot run here: {exc}"
        if os.environ.get("INVARIRANK_REQUIRE_ALL") == "1":
            pytest.fail(f"make test (INVARIRANK_REQUIRE_ALL=1): {why}; run `make vllm-venv`", pytrace=False)
        pytest.skip(why)
    return python
