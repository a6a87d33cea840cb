"""The ``vllm`` backend of the real scorers (``backend="vllm"``): the same prompts, the same canonical ids and the
same score semantics as the default ``hf`` backend (transformers forwards in this process), computed by vLLM.

The scorer plans every pass as usual (:meth:`invarirank.llm._engine.CausalLMScorer.plan`); only the missing passes'
computation moves to vLLM, which receives the plans' canonical ids pre-tokenized (it never re-tokenizes):

* choice: the log-probability of exactly the label ids as the next token after the prompt (vLLM's fixed-id
  ``logprob_token_ids``, never a top-k that can miss a label). The ``merged`` label scheme's second read (a label
  written ``[`` + letter, Llama 3 / Qwen 2.5) is a second request for the prompt ending with ``[``, which reads the
  first request's prompt from vLLM's prefix cache.
* span: prompt log-probs of each candidate's tokens over the prompt up to the last candidate's last scored token
  (the rest, on which no score depends, is not sent). vLLM reads nothing from its prefix cache for a request that
  asks for prompt log-probs, so every span pass recomputes the shared history, where the ``hf`` backend computes
  it once per query.

Work: ``ScoreResult.tokens`` is the prompt positions vLLM computed (the prompt's length less what it read from its
prefix cache, as vLLM reports).

Scores agree with the ``hf`` backend within :data:`TOLERANCE` (float32; measured on SmolLM2 and the paper's tiny
models by tests/llm/test_vllm_backend.py), not bit for bit, so the backend enters the pass-cache key and the run
fingerprint (:meth:`CausalLMScorer.key_identity`) when it is ``vllm``: a run is never silently mixed across backends.
The default ``hf`` adds nothing, so every existing key and fingerprint is unchanged.

vLLM runs in its own venv (its CPU build pins transformers below the main venv's): :func:`vllm_python` finds that
venv's Python and :class:`VLLMWorker` drives :mod:`invarirank.llm._vllm_worker` there over a pipe (JSON lines).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from invarirank._limits import machine_cpus
from invarirank.errors import InvariRankError

#: the largest |score difference| the tests allow between the ``vllm`` and ``hf`` backends on one pass, float32
#: weights. Measured by tests/llm/test_vllm_backend.py at K = 10 and 25, vLLM 0.32.0 CPU: SmolLM2 choice 3.5e-5 and
#: span 7.6e-6; the paper tokenizers' tiny models 7.6e-6 at most; the default grid's committed SmolLM2 choice run at
#: K = 10 recomputed, 6.3e-5 (benchmarks/vllm_committed_run.py). A bound for those models, not a guarantee: an
#: earlier trial on Qwen2.5-Coder 0.5B put its span at 1.5e-4, beyond it.
TOLERANCE = 1e-4

#: where ``make setup`` builds the vLLM venv, relative to the repository root (the Makefile's ``VLLM_VENV``)
DEFAULT_VENV = ".venv-vllm"

WORKER = Path(__file__).with_name("_vllm_worker.py")


def vllm_python() -> str:
    """The Python that runs the worker: ``$INVARIRANK_VLLM_PYTHON``; else this interpreter when it can import vLLM
    (a GPU machine with ``pip install vllm``); else ``.venv-vllm/bin/python`` of the repository. Raises
    :class:`InvariRankError` saying how to build it when none is found."""
    given = os.environ.get("INVARIRANK_VLLM_PYTHON")
    if given:
        if not os.access(given, os.X_OK):
            raise InvariRankError(f"INVARIRANK_VLLM_PYTHON={given}: expected an executable Python with vLLM")
        return given
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    local = Path(__file__).resolve().parents[2] / DEFAULT_VENV / "bin" / "python"
    if local.exists():
        return str(local)
    raise InvariRankError(
        f"scorer option backend='vllm': no vLLM found (this Python cannot import vllm, {local} does not exist and "
        f"INVARIRANK_VLLM_PYTHON is not set); build the venv with `make vllm-venv` or set INVARIRANK_VLLM_PYTHON"
    )


def _worker_env() -> dict[str, str]:
    """The worker's environment: offline, no usage report, the engine's sockets on 127.0.0.1, a 2 GiB KV cache on
    the CPU build and its threads bound to the CPUs this process may use (each overridable from outside)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the worker imports nothing of ours
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]
    defaults = {
        "VLLM_HOST_IP": "127.0.0.1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "VLLM_CPU_OMP_THREADS_BIND": ",".join(str(c) for c in cpus),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    for k, v in defaults.items():
        env.setdefault(k, v)
    env["VLLM_HOST_IP"] = "127.0.0.1"  # never the machine's network address
    return env


def bound_cores(spec: str) -> int:
    """How many CPUs vLLM's ``VLLM_CPU_OMP_THREADS_BIND`` binds for the first rank: ``"0-3"`` 4, ``"0,2,5"`` 3,
    ``"0-1|2-3"`` (one list per rank) 2; ``"auto"``, ``"nobind"`` or anything else: the CPUs this process may use."""
    first = spec.split("|", 1)[0].strip()
    try:
        count = 0
        for part in first.split(","):
            lo, _, hi = part.partition("-")
            first_core = int(lo)  # ValueError: not a list of cores ("auto", "nobind")
            count += int(hi) - first_core + 1 if hi else 1
        if count >= 1:
            return count
    except ValueError:
        pass
    return machine_cpus()


def _one_process(env: dict[str, str], config: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """The CPU build on one device: the engine core and its model worker inside the worker process.

    By default vLLM starts two more processes (the engine core, then its model worker), each importing torch and
    vLLM again: ~20 of the ~30 s an engine start costs on an idle 2-core machine, and ~1 GB of memory each. On the
    CPU nothing overlaps across them (the model's threads take every core), so one process scores the same prompts
    with the same log-probs in the same time. OpenMP's thread count is fixed before torch loads (vLLM's model
    worker process did it for itself), to the CPUs ``VLLM_CPU_OMP_THREADS_BIND`` binds. Each setting can be
    overridden from the environment: ``VLLM_ENABLE_V1_MULTIPROCESSING=1`` restores the separate processes."""
    env = {**env}
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    env.setdefault("OMP_NUM_THREADS", str(bound_cores(env["VLLM_CPU_OMP_THREADS_BIND"])))
    if env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0":
        config = {**config, "distributed_executor_backend": "uni"}
    return env, config


_PROBE = (
    "import importlib.metadata as m, json\n"
    "v = None\n"
    "for name in ('vllm', 'vllm-cpu'):\n"
    "    try: v = m.version(name); break\n"
    "    except m.PackageNotFoundError: pass\n"
    "from vllm.platforms import current_platform as p\n"
    "print(json.dumps({'version': v, 'device_type': p.device_type}))\n"
)
_probed: dict[str, dict[str, str]] = {}


def probe(python: str) -> dict[str, str]:
    """``{"version", "device_type"}`` of the vLLM that ``python`` imports (no engine started; memoised)."""
    if python not in _probed:
        got = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, env=_worker_env(), timeout=300)
        if got.returncode != 0:
            tail = got.stderr.strip().splitlines()[-1:] or ["no output"]
            raise InvariRankError(f"vLLM at {python} cannot be imported: {tail[0]}")
        _probed[python] = json.loads(got.stdout.strip().splitlines()[-1])
    return _probed[python]


class VLLMWorker:
    """One vLLM engine in a worker process (:mod:`invarirank.llm._vllm_worker`), started on first use and stopped
    by :meth:`close` (also at interpreter exit and when the object is collected)."""

    def __init__(self, folder: str | Path, *, dtype: str, max_model_len: int, seed: int = 0, python: str | None = None):
        self.python = python or vllm_python()
        self.config = {
            "model": str(folder),
            "dtype": dtype,
            "max_model_len": int(max_model_len),
            "max_logprobs": 64,
            "seed": int(seed),
            "enforce_eager": None,  # the worker's choice: eager on the CPU (faster start), CUDA graphs on a GPU
            # a model larger than one GPU: its layers split over this many GPUs (results unchanged up to rounding)
            "tensor_parallel_size": int(os.environ.get("INVARIRANK_VLLM_TENSOR_PARALLEL", "1")),
        }
        self._proc: subprocess.Popen[str] | None = None
        self._log: Any = None
        self.version: str | None = None
        self._finalizer: Any = None

    def _start(self) -> subprocess.Popen[str]:
        self._log = tempfile.NamedTemporaryFile("w+", prefix="invarirank-vllm-", suffix=".log", delete=False)
        env, config = _worker_env(), dict(self.config)
        if probe(self.python)["device_type"] == "cpu" and config["tensor_parallel_size"] == 1:
            env, config = _one_process(env, config)
        proc = subprocess.Popen(
            [self.python, str(WORKER), json.dumps(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            start_new_session=True,  # its engine processes form one group, stopped together
        )
        self._proc = proc
        self._finalizer = weakref.finalize(self, _stop, proc, self._log.name)
        atexit.register(self._finalizer)
        hello = self._read("starting the engine")
        self.version = hello.get("vllm_version")
        return proc

    def _read(self, doing: str) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            self._proc.wait(timeout=60)
            raise InvariRankError(
                f"vLLM worker ({self.config['model']}) exited while {doing} (code {self._proc.returncode}): "
                f"{_tail(self._log.name)}"
            )
        reply = json.loads(line)
        if "error" in reply:
            raise InvariRankError(f"vLLM worker ({self.config['model']}) failed while {doing}: {reply['error']}")
        return reply

    def request(self, op: str, **payload: Any) -> dict[str, Any]:
        """One request (``op`` = ``"next"`` or ``"prompt"``, see the worker's protocol); starts the engine first."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"op": op, **payload}) + "\n")
        proc.stdin.flush()
        return self._read(f"answering a {op!r} request of {len(payload.get('prompts', []))} prompts")

    def close(self) -> None:
        """Stop the worker and its engine (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()
        self._proc = None


_POOL: dict[str, VLLMWorker] = {}


def worker_for(folder: str | Path, *, dtype: str, max_model_len: int, seed: int = 0) -> VLLMWorker:
    """The process's one worker for this engine configuration: a span and a choice scorer on the same model share
    one engine (each start costs minutes on a busy CPU). Started on first use."""
    key = json.dumps([str(folder), dtype, int(max_model_len), int(seed)])
    if key not in _POOL:
        _POOL[key] = VLLMWorker(folder, dtype=dtype, max_model_len=max_model_len, seed=seed)
    return _POOL[key]


def close_all() -> None:
    """Stop every worker of the pool (each restarts on its next request)."""
    for worker in _POOL.values():
        worker.close()


def _stop(proc: subprocess.Popen[str], log: str) -> None:
    """Ask the worker to close, then end its process group if it does not within 60 s; remove its log."""
    if proc.poll() is None:
        try:
            assert proc.stdin is not None
            proc.stdin.write(json.dumps({"op": "close"}) + "\n")
            proc.stdin.close()
            proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            try:
                os.killpg(proc.pid, 15)
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, 9)
    Path(log).unlink(missing_ok=True)


def _tail(log: str, n: int = 5) -> str:
    try:
        lines = Path(log).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return " | ".join(lines[-n:]) or "no output"


# ----------------------------------------------------------------------------------------------------------------
# the two scorers' computations (plans of invarirank.llm._missing_passes.PassPlan)


def choice_scores(worker: VLLMWorker, plans: Sequence[Any]) -> list[tuple[np.ndarray, int]]:
    """(label log-probs, positions computed) of each choice plan. A plan reads one position (the prompt's last
    token: every label's single id) or two (merged scheme: the prompt ends with an appended ``[``; a label read
    as ``("[L",)`` is read before it, one read as ``("[", "L")`` sums ``log p("[")`` before it and ``log p(L)``
    after it), each position one request over the prompt up to and including it."""
    prompts: list[list[int]] = []
    wanted: list[list[int]] = []
    where: list[tuple[int, int]] = []  # (plan, read position)
    for n, plan in enumerate(plans):
        ids = plan.full_ids
        k = len(plan.needed)
        for j in range(k):
            cut = len(ids) - (k - 1 - j)  # position needed[j] is the prompt's last token
            prompts.append(ids[:cut])
            wanted.append(sorted({r[j] for r in plan.extra["reads"] if len(r) > j}))
            where.append((n, j))
    got = worker.request("next", prompts=prompts, token_ids=wanted)
    rows: dict[tuple[int, int], dict[int, float]] = {}
    tokens = [0] * len(plans)
    for (n, j), ids, lps, prompt, cached in zip(where, wanted, got["logprobs"], prompts, got["cached"]):
        rows[(n, j)] = dict(zip(ids, lps))
        tokens[n] += len(prompt) - int(cached)
    out = []
    for n, plan in enumerate(plans):
        scores = [sum(rows[(n, j)][t] for j, t in enumerate(r)) for r in plan.extra["reads"]]
        out.append((np.array(scores, dtype=np.float32), tokens[n]))
    return out


def span_scores(worker: VLLMWorker, plans: Sequence[Any]) -> list[tuple[np.ndarray, int]]:
    """(mean log-prob of each candidate's scored tokens, positions computed) of each span plan, from the prompt
    log-probs of the prompt up to the last scored token (suffix position q predicts the token at q + 1: the plan's
    ``needed``)."""
    # up to the last scored token (the plan's suffix stops one token earlier: its logits need no more input)
    prompts = [plan.full_ids[: len(plan.prefix) + plan.needed[-1] + 2] for plan in plans]
    got = worker.request("prompt", prompts=prompts)
    out = []
    for plan, prompt, lps, cached in zip(plans, prompts, got["logprobs"], got["cached"]):
        base = len(plan.prefix)  # prompt log-prob list index i is log p(prompt[i + 1] | prompt[: i + 1])
        tok_lp = np.array([lps[base + q] for q in plan.needed], dtype=np.float32).astype(np.float64)
        scores = np.array([tok_lp[a:b].mean() for a, b in plan.extra["groups"]], dtype=np.float32)
        out.append((scores, len(prompt) - int(cached)))
    return out
