"""The vLLM worker: a script run by the vLLM venv's Python (``python vllm_worker.py CONFIG_JSON``), driven by
:mod:`invarirank.llm._vllm_backend` over a pipe, one JSON object per line. It imports only the standard library
and vLLM (never ``invarirank``: the vLLM venv pins its own torch and transformers), so it runs as a file, not as a
module of the package.

Why a worker process and not an in-process import: vLLM's CPU build needs transformers < 5.20 and the main venv
has 5.24; its engine starts processes of its own (multiprocessing spawn) and sets process-wide thread bindings;
and a worker that exits frees everything the engine held. One worker serves one scorer for its whole life, so the
engine starts once (~15 s on the 2-core machine: on the CPU the client asks for the engine inside this
process, :func:`invarirank.llm._vllm_backend._one_process`).

Protocol (stdin → stdout; vLLM's own logging goes to stderr, the protocol has a private copy of stdout):

* start: ``CONFIG_JSON`` = ``{"model": FOLDER, "dtype": "float32", "max_model_len": N, "max_logprobs": M,
  "seed": S, "enforce_eager": bool or null, "tensor_parallel_size": N, "distributed_executor_backend": null or
  "uni"}`` (``enforce_eager`` null: eager on the CPU, where it starts in a fraction of the time, compiled graphs
  elsewhere); the worker answers ``{"ready": true, "vllm_version": ...}``.
* ``{"op": "next", "prompts": [[ids]...], "token_ids": [[ids]...]}`` → ``{"logprobs": [[float]...],
  "cached": [int...]}``: for each prompt (pre-tokenized: vLLM never re-tokenizes), the log-probability of each
  given id as the next token after the prompt (fixed ids, never a top-k that could miss one), and the prompt
  tokens read from the prefix cache.
* ``{"op": "prompt", "prompts": [[ids]...]}`` → ``{"logprobs": [[float]...], "cached": [...]}``: for each prompt,
  ``log p(ids[t] | ids[:t])`` for t = 1 .. len - 1 (prompt log-probs; vLLM reads no prefix cache for them).
* ``{"op": "close"}`` → ``{"closed": true}`` and exit. End of input also exits.

Log-probs are the raw model distribution (vLLM's default ``raw_logprobs``: before any sampling transform).
A failing request answers ``{"error": "..."}`` and the worker carries on.
"""

from __future__ import annotations

import json
import os
import sys


def _protocol_channel():
    """A private copy of stdout for the protocol; fd 1 then points at stderr, so nothing vLLM prints can corrupt
    the protocol."""
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _answer(out, obj) -> None:
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _next(llm, req):
    from vllm import SamplingParams

    prompts, wanted = req["prompts"], req["token_ids"]
    params = [SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=list(ids)) for ids in wanted]
    outs = llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
    logprobs, cached = [], []
    for out, ids in zip(outs, wanted):
        step = out.outputs[0].logprobs[0]  # {token id: Logprob} at the first generated position
        missing = [t for t in ids if t not in step]
        if missing:
            raise RuntimeError(f"vLLM returned no log-prob for token ids {missing}")
        logprobs.append([float(step[t].logprob) for t in ids])
        cached.append(int(out.num_cached_tokens or 0))
    return {"logprobs": logprobs, "cached": cached}


def _prompt(llm, req):
    from vllm import SamplingParams

    prompts = req["prompts"]
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
    outs = llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
    logprobs, cached = [], []
    for out, ids in zip(outs, prompts):
        rows = out.prompt_logprobs  # rows[t]: {token id: Logprob} for position t (rows[0] is None)
        logprobs.append([float(rows[t][ids[t]].logprob) for t in range(1, len(ids))])
        cached.append(int(out.num_cached_tokens or 0))
    return {"logprobs": logprobs, "cached": cached}


def _die_with_parent() -> None:
    """Linux: a SIGTERM when the client process dies, so a killed client never leaves an engine behind."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main() -> None:
    _die_with_parent()
    out = _protocol_channel()
    cfg = json.loads(sys.argv[1])
    import vllm
    from vllm import LLM
    from vllm.platforms import current_platform

    eager = cfg.get("enforce_eager")

    llm = LLM(
        model=cfg["model"],
        tokenizer=cfg["model"],
        skip_tokenizer_init=False,
        dtype=cfg.get("dtype", "float32"),
        max_model_len=int(cfg["max_model_len"]),
        max_logprobs=int(cfg.get("max_logprobs", 64)),
        seed=int(cfg.get("seed", 0)),
        enable_prefix_caching=True,
        enforce_eager=current_platform.is_cpu() if eager is None else bool(eager),
        tensor_parallel_size=int(cfg.get("tensor_parallel_size", 1)),
        distributed_executor_backend=cfg.get("distributed_executor_backend"),
    )
    _answer(out, {"ready": True, "vllm_version": vllm.__version__})
    ops = {"next": _next, "prompt": _prompt}
    for line in sys.stdin:
        req = json.loads(line)
        if req.get("op") == "close":
            _answer(out, {"closed": True})
            break
        try:
            _answer(out, ops[req["op"]](llm, req))
        except Exception as exc:  # the client turns it into an InvariRankError naming the request
            _answer(out, {"error": f"{type(exc).__name__}: {exc}"})
    shutdown = getattr(getattr(llm.llm_engine, "engine_core", None), "shutdown", None)
    if callable(shutdown):
        shutdown()  # stops the engine core's processes before this one exits
    os._exit(0)


if __name__ == "__main__":
    main()
