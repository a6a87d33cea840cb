"""Both scorer backends on the same request stream (issue 38): passes per second of ``backend="hf"`` (transformers
in this process, the history prefix computed once per query) and ``backend="vllm"`` (vLLM in its own venv, driven
through :mod:`invarirank.llm._vllm_backend`), for the span and the choice scorer.

    python -m benchmarks.vllm_backend [--json FILE] [--model smollm2-135m] [--k 10,25] [--queries 1] [--m 1]
    python -m benchmarks.vllm_backend --arch llama-3.2-3b-instruct --dtype bfloat16 ...   # on a GPU machine

Stream: the four methods' real requests (``benchmarks.gpu.request_stream``: which presented orders reach the
scorer in which round, after the shared pass cache) for ``--queries`` prompts of the paper's shape (about 450
tokens of history, 25 per candidate; ``benchmarks.gpu.make_queries``), replayed with every query of a round in one
``score_requests`` call (vLLM batches them; the ``hf`` backend computes each query's prefix once). One spare query's
first round warms each scorer up first (and starts vLLM's engine, whose start is not timed: it is reported apart,
as the first ``vllm`` row's ``warm_up_seconds``; one engine serves every K and both scorers of the model). Scores of
the two backends are compared pass by pass (``max_abs_diff``, per scorer and K). The file is rewritten after every
row, so a run stopped by a time limit keeps the rows it finished.

Model: ``--model`` (a registry name or a folder; default SmolLM2-135M's float32 folder on the CPU), or ``--arch``
(one of ``benchmarks/configs``: random weights from the real configuration, saved to a temporary folder that vLLM
loads, around a locally trained tokenizer; for a GPU machine, where vLLM is ``pip install vllm``).

Output (``--json``): the ``benchmarks.gpu`` format — ``results`` rows with ``model``, ``K``, ``passes_per_s``,
plus ``backend`` and ``scorer`` — so ``invarirank grid --dry-run --bench FILE`` prices from it, the faster backend
per (model, K) winning. Pass cache off in both backends: every pass is computed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.gpu import architecture, make_queries, request_stream


def _replay(scorer: Any, queries: list, stream: list) -> list[np.ndarray]:
    """Every round of every query, all queries of a round in one call; the scores in stream order."""
    by_id = [{it.item_id: it for it in q.candidates} for q in queries]
    out: list[np.ndarray] = []
    for r in range(max(len(s) for s in stream)):
        requests = [
            (queries[i], [by_id[i][x] for x in order])
            for i in range(len(queries))
            if r < len(stream[i])
            for order in stream[i][r]
        ]
        out.extend(res.scores for res in scorer.score_requests(requests))
    return out


def _folder_for_arch(name: str, dtype: str, seed: int) -> tuple[str, Any, Path]:
    """(model id, tokenizer, folder) of a random-weight architecture saved for vLLM to load."""
    import torch
    import transformers as tf

    from benchmarks.gpu import _config
    from invarirank.llm._testing import train_tokenizer

    tokenizer = train_tokenizer("bytelevel")
    model_id, fields = architecture(name)
    fields["vocab_size"] = max(int(fields["vocab_size"]), len(tokenizer))
    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        model = tf.AutoModelForCausalLM.from_config(_config(fields))
    finally:
        torch.set_default_dtype(previous)
    folder = Path(tempfile.mkdtemp(prefix=f"invarirank-bench-{name}-"))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model_id, tokenizer, folder


def vllm_info(prog: str) -> dict[str, str] | None:
    """``{"version", "device_type"}`` of the vLLM the worker would run (no engine started); None, saying why on
    stderr, when there is none."""
    from invarirank.errors import InvariRankError
    from invarirank.llm import _vllm_backend as vllm_backend

    try:
        return vllm_backend.probe(vllm_backend.vllm_python())
    except InvariRankError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def write_json(out: Path, report: dict[str, Any]) -> None:
    """``report`` as JSON at ``out`` (a temporary file renamed: never half-written)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)


def measure(scorer_kind: str, backend: str, model: str, queries: list, stream: list, args: Any) -> dict[str, Any]:
    """One (scorer, backend): engine start (vLLM), warm-up, then the timed replay."""
    from invarirank.llm.factory import make_scorer

    options: dict[str, Any] = {"pass_cache": False, "backend": backend, "dtype": args.dtype}
    if args.device != "auto":
        options["device"] = args.device
    scorer = make_scorer(scorer_kind, model, **options)
    t0 = time.perf_counter()
    _replay(scorer, queries[-1:], [stream[-1][:1]])  # warm-up (starts vLLM's engine on first use)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    scores = _replay(scorer, queries[:-1], stream[:-1])
    wall = time.perf_counter() - t0
    passes = len(scores)
    return {
        "row": {
            "arch": args.arch or model,
            "model": args.model_id or model,
            "K": len(queries[0].candidates),
            "scorer": scorer_kind,
            "backend": backend,
            "queries": len(queries) - 1,
            "passes": passes,
            "seconds": round(wall, 3),
            "passes_per_s": round(passes / wall, 3),
            "warm_up_seconds": round(warm, 1),
        },
        "scores": scores,
        "scorer": scorer,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.vllm_backend", description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=str(Path(tempfile.gettempdir()) / "invarirank-bench-vllm.json"))
    p.add_argument("--model", default="smollm2-135m", help="registry name or model folder (default smollm2-135m)")
    p.add_argument("--arch", default=None, help="a benchmarks/configs architecture with random weights instead")
    p.add_argument("--dtype", default="float32", help="float32 (default, the CPU) or bfloat16 (a GPU)")
    p.add_argument("--device", default="auto", help="where the hf backend runs (auto: cuda when available)")
    p.add_argument("--k", default="10,25", help="candidates per query, comma-separated (default 10,25)")
    p.add_argument("--queries", type=int, default=1, help="timed queries (default 1; one more warms up)")
    p.add_argument("--m", type=int, default=1, help="presented orders per query (default 1 on 2 CPU cores)")
    p.add_argument("--scorers", default="span,choice")
    p.add_argument("--backends", default="hf,vllm")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    try:
        args.ks = [int(k) for k in str(args.k).split(",") if k.strip()]
    except ValueError:
        p.error(f"--k {args.k!r}: expected comma-separated integers, e.g. 10,25")

    from invarirank.llm import _vllm_backend as vllm_backend

    info = vllm_info("benchmarks.vllm_backend")
    if info is None:
        return 1
    args.model_id = None
    if args.arch:
        args.model_id, tokenizer, folder = _folder_for_arch(args.arch, args.dtype, args.seed)
        model = str(folder)
    else:
        from invarirank.llm.models import load_tokenizer

        model, tokenizer = args.model, load_tokenizer(args.model)
    report: dict[str, Any] = {
        "schema_version": 1,
        "device": f"{info['device_type']} ({platform.machine()}, {len(os.sched_getaffinity(0))} CPUs)",
        "dtype": args.dtype,
        "vllm": info["version"],
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "results": [],
    }
    out = Path(args.json)
    for k in args.ks:
        queries = make_queries(tokenizer, args.queries + 1, k, 450, 25, args.seed)
        stream = request_stream(queries, args.m, args.seed)
        for kind in [s.strip() for s in args.scorers.split(",") if s.strip()]:
            got = {}
            for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
                m = measure(kind, backend, model, queries, stream, args)
                got[backend] = m["scores"]
                report["results"].append(m["row"])
                if backend != "vllm":  # vLLM's engine serves every K and scorer of this model: stopped at the end
                    m["scorer"].close()
                r = m["row"]
                print(
                    f"K={k} {kind} {backend}: {r['passes']} passes in {r['seconds']:.1f} s = "
                    f"{r['passes_per_s']:.3f} passes/s (warm-up {r['warm_up_seconds']:.0f} s)",
                    flush=True,
                )
                if len(got) == 2:
                    a, b = got.values()
                    diff = max(float(np.max(np.abs(x.astype(np.float64) - y))) for x, y in zip(a, b))
                    report.setdefault("max_abs_diff", {}).setdefault(kind, {})[str(k)] = diff
                    print(f"K={k} {kind}: max |hf - vllm| = {diff:.2e} over {len(a)} passes", flush=True)
                write_json(out, report)  # after every row: a run cut short by a time limit keeps what it measured
    vllm_backend.close_all()
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
