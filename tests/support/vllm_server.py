"""A real OpenAI-compatible server for the tests: vLLM's CPU build, run from its own venv, on 127.0.0.1.

The venv's Python is ``$INVARIRANK_VLLM_PYTHON`` or the repository's ``.venv-vllm/bin/python`` (``make setup``
builds it). :class:`VLLMServer` starts ``vllm.entrypoints.openai.api_server`` on a free port with the settings
the machine needs (the engine's queues on 127.0.0.1, no usage report, a 2 GiB KV cache unless
``$VLLM_CPU_KVCACHE_SPACE`` says otherwise (the tests' conftest: 1), OpenMP threads bound to
``$VLLM_CPU_OMP_THREADS_BIND`` or else every CPU this process may use, the model inside the
engine-core process; see the set-up page), waits until ``/v1/models`` answers, and stops it with SIGTERM to its
process group (SIGKILL after 30 s). Each start costs ~20-50 s and ~3 GB (measured PSS with a 1 GiB cache): a
test module starts it once.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

from invarirank.llm._vllm_backend import _one_process, _worker_env
from tests.support import ROOT

SERVED_NAME = "smollm2-135m"


def vllm_python() -> tuple[str | None, str]:
    """The vLLM venv's Python, or ``None`` and why it cannot be used."""
    given = os.environ.get("INVARIRANK_VLLM_PYTHON")
    python = Path(given) if given else ROOT / ".venv-vllm" / "bin" / "python"
    if not python.is_file():
        where = "$INVARIRANK_VLLM_PYTHON" if given else "the repository's .venv-vllm (`make setup`)"
        return None, f"no vLLM venv: {python} not found ({where})"
    probe = subprocess.run([str(python), "-c", "import vllm"], capture_output=True, text=True, timeout=300)
    if probe.returncode:
        return None, f"{python} cannot import vllm: {probe.stderr.strip().splitlines()[-1:]}"
    return str(python), ""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VLLMServer:
    """One vLLM server process serving ``folder`` as :data:`SERVED_NAME` (module docstring)."""

    def __init__(self, python: str, folder: Path, log: Path, port: int | None = None):
        self.python, self.folder, self.log = python, folder, log
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.started_seconds: list[float] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 600.0) -> None:
        # the backend worker's environment (offline, no usage report, queues on 127.0.0.1, the KV cache and bound
        # cores of $VLLM_CPU_*), with the model in the engine-core process as the backend runs it on the CPU
        env, _ = _one_process(_worker_env(), {"tensor_parallel_size": 1})
        cmd = [self.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.folder),
               "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(self.port),
               "--dtype", "float32", "--max-model-len", "4096", "--max-logprobs", "64", "--enforce-eager",
               "--seed", "0", "--distributed-executor-backend", "uni"]  # fmt: skip
        t0 = time.perf_counter()
        with self.log.open("a") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        while time.perf_counter() - t0 < timeout:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace").splitlines()[-5:]
                raise RuntimeError(f"the vLLM server exited ({self.proc.returncode}): {' | '.join(tail)}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=5):
                    self.started_seconds.append(time.perf_counter() - t0)
                    return
            except OSError:
                time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"the vLLM server was not ready within {timeout:.0f} s (log: {self.log})")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.proc = None
