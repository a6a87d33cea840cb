"""GPU benchmark of the scorer on the paper's request stream, with nothing to download.

    python -m benchmarks.gpu --json results/bench/h200.json          # on a GPU: the three paper architectures
    python -m benchmarks.gpu --json /tmp/cpu.json --tiny             # on a CPU: a tiny config, end to end

What it does, in one run:

1. times a large square matmul (bf16 on CUDA, float32 on CPU): the machine's matmul rate, the ceiling;
2. builds each architecture on the device with random weights from its real configuration
   (``benchmarks/configs/*.json``: Llama-3.2-3B-Instruct, Mistral-7B-Instruct-v0.3, Qwen2.5-7B-Instruct — the
   config fields only; ``--tiny`` shrinks them to 2 layers of width 64) around a small tokenizer trained locally;
3. makes prompts of the paper's shape — about ``--history-tokens`` (450) tokens before the candidates and
   ``--candidate-tokens`` (25) per candidate — and records the four methods' real request stream for each K
   (which presented orders are scored in which round, after the shared pass cache) from runs with the simulated
   scorer;
4. replays that stream through the project's own span scorer (:class:`invarirank.llm._span.SpanScorer`, pass cache
   off) in three configurations: (a) no prefix reuse (every pass a full forward), (b) today's path (the history
   prefix computed once per query, the rounds of one query batched by ``--batch-size``), (c) batches across
   queries (``--window`` queries in lockstep, each round's requests packed by ``--max-batch-tokens``);
5. reports passes/s, tokens computed/s, achieved TFLOP/s (2 × non-embedding parameters × tokens computed +
   2 × output-projection parameters × logit rows + 4 × attention width × keys attended) and its share of the
   matmul rate, forward calls, prefix forwards, peak memory; and rewrites ``--json`` after every configuration,
   so a run cut short still leaves its figures (``complete`` says whether it finished). The runs go K by K,
   every architecture at one K before the next K, so a run cut short covers every model at the first K.

It imports only torch and transformers besides this project's pure-Python package (and numpy, which transformers
needs): it runs with a GPU machine's own Python, without the virtual environment or Ray. ``--time-limit`` stops
before a configuration that would start after that many seconds. The JSON's ``results`` are what
``invarirank rerank/grid --dry-run --bench FILE`` prices runs with (field ``model`` = the Hugging Face id).
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

from invarirank.llm._toy_queries import TOY_WORDS

CONFIGS = Path(__file__).resolve().parent / "configs"
ARCHS = ("mistral-7b-instruct-v0.3", "qwen2.5-7b-instruct", "llama-3.2-3b-instruct")
TINY = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 1024,
    "bos_token_id": None,
    "eos_token_id": None,
}
#: title words of the made-up items: the toy queries' first 32 (:mod:`invarirank.llm._toy_queries`; a seed's titles
#: depend on how many there are)
WORDS = TOY_WORDS[:32]


def architecture(name: str, tiny: bool = False) -> tuple[str, dict[str, Any]]:
    """(Hugging Face id, config fields) of a committed architecture; ``tiny`` shrinks it."""
    data = json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))
    fields = dict(data["config"])
    if tiny:
        fields.update(TINY)
        fields.pop("rope_scaling", None)
    return str(data["model_id"]), fields


def count_parameters(fields: dict[str, Any]) -> int:
    """Parameters of the architecture, counted on the meta device (no memory, no weights)."""
    import torch
    import transformers as tf

    cfg = _config(fields)
    with torch.device("meta"):
        model = tf.AutoModelForCausalLM.from_config(cfg)
    return int(sum(p.numel() for p in model.parameters()))


def _config(fields: dict[str, Any]) -> Any:
    import transformers as tf

    f = dict(fields)
    return tf.AutoConfig.for_model(f.pop("model_type"), **f)


def build_model(name: str, fields: dict[str, Any], tokenizer: Any, device: Any, dtype: Any, seed: int) -> Any:
    """The architecture with random weights, built directly on ``device`` in ``dtype``, wrapped for the scorer
    (its identity names the random initialisation; the weights are never hashed)."""
    import torch
    import transformers as tf

    from invarirank.llm.models import LoadedModel

    torch.manual_seed(seed)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = tf.AutoModelForCausalLM.from_config(_config(fields))
    finally:
        torch.set_default_dtype(previous)
    model.eval()
    return LoadedModel(
        name=name,
        model=model,
        tokenizer=tokenizer,
        device=torch.device(device),
        dtype=dtype,
        folder=None,
        weights_sha256=f"random-init-seed-{seed}",
        tokenizer_sha256="bench-tokenizer",
        max_length=int(fields.get("max_position_embeddings", 4096)),
        has_chat_template=False,
        info={"torch": torch.__version__},
    )


def matmul_tflops(device: Any, dtype: Any, n: int, repeats: int = 10) -> float:
    """TFLOP/s of an n × n × n matmul (median of ``repeats``)."""
    import torch

    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    times = []
    for _ in range(repeats + 2):
        _sync(device)
        t0 = time.perf_counter()
        a @ b
        _sync(device)
        times.append(time.perf_counter() - t0)
    times = sorted(times[2:])
    return 2 * n**3 / times[len(times) // 2] / 1e12


def _sync(device: Any) -> None:
    import torch

    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


# -- the first stage: LightGCN epochs on a graph of MovieLens-32M's size -----------------------------------
ML32M = {"users": 200_948, "items": 87_585, "positives": 16_000_000}  # positives: ratings >= 4, about half


def first_stage(scale: float, steps: int, seed: int = 0) -> dict[str, Any]:
    """Seconds per LightGCN epoch (the protocol's training step: full-graph propagation over 3 layers, BPR, Adam,
    batches of 2,048 positives) on a synthetic positive graph of ML-32M's size × ``scale`` (Zipf-distributed item
    popularity), timed over ``steps`` steps on the CPU and extrapolated to a full-size epoch (a step's work grows
    with the graph's edges: seconds per epoch = batches of the full graph × seconds per step / ``scale``)."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from invarirank.retrieval._lightgcn import LightGCNConfig, build_norm_adj, propagate

    cfg = LightGCNConfig()
    rng = np.random.default_rng(seed)
    n_users, n_items = max(2, int(ML32M["users"] * scale)), ML32M["items"]
    n_pos = max(cfg.batch_size, int(ML32M["positives"] * scale))
    pu = rng.integers(0, n_users, size=n_pos)
    pi = np.minimum(rng.zipf(1.2, size=n_pos) - 1, n_items - 1)
    t0 = time.perf_counter()
    adj = build_norm_adj(n_users, n_items, pu, pi)
    build = time.perf_counter() - t0
    emb = torch.nn.Parameter(torch.randn(n_users + n_items, cfg.dim) * 0.1)
    opt = torch.optim.Adam([emb], lr=cfg.lr)
    times = []
    for _ in range(steps + 1):
        b = torch.from_numpy(rng.integers(0, n_pos, size=cfg.batch_size))
        u, p = torch.from_numpy(pu)[b], torch.from_numpy(pi)[b] + n_users
        q = torch.from_numpy(rng.integers(0, n_items, size=cfg.batch_size)) + n_users
        t = time.perf_counter()
        final = propagate(adj, emb, cfg.layers)
        loss = F.softplus((final[u] * final[q]).sum(-1) - (final[u] * final[p]).sum(-1)).mean()
        loss = loss + cfg.l2 * (emb[u].square().sum() + emb[p].square().sum() + emb[q].square().sum()) / len(b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t)
    per_step = sorted(times[1:])[len(times[1:]) // 2]
    batches = -(-ML32M["positives"] // cfg.batch_size)
    return {
        "seconds_per_epoch": {"ml-32m": round(batches * per_step / scale, 1)},
        "epochs": cfg.epochs,
        "device": "cpu",
        "threads": torch.get_num_threads(),
        "scale": scale,
        "positives": n_pos,
        "seconds_per_step": round(per_step, 4),
        "adjacency_seconds": round(build, 2),
        "extrapolated": scale != 1.0,
    }


# -- prompts of the paper's shape and the methods' request stream ----------------------------------------
def make_queries(tokenizer: Any, n: int, k: int, history_tokens: int, candidate_tokens: int, seed: int) -> list:
    """``n`` queries of ``k`` candidates whose span prompts have about ``history_tokens`` tokens before the
    candidates and ``candidate_tokens`` per candidate (title lengths and history size found by measuring)."""
    import numpy as np

    from invarirank.llm._span import SpanScorer
    from invarirank.llm._testing import tiny_model
    from invarirank.types import HistoryEntry, Item, Query

    probe = SpanScorer(tiny_model("llama", tokenizer, seed=0), pass_cache=False)
    rng = np.random.default_rng(seed)

    def item(i: int, words: int) -> Item:
        title = " ".join(WORDS[int(w)] for w in rng.integers(0, len(WORDS), size=words))
        return Item(str(i), title, int(rng.integers(1930, 2020)), ("Drama", "Comedy"))

    def query(qi: int, words: int, hist: int) -> Query:
        cands = tuple(item(qi * 1000 + j, words) for j in range(k))
        history = tuple(HistoryEntry(item(900000 + qi * 100 + h, words), 4.0) for h in range(hist))
        return Query(f"u{qi}", str(qi), history, cands, (cands[0].item_id,))

    words = 1
    while words < 40:
        q = query(0, words, 1)
        plan = probe.plan(q, list(q.candidates))
        if len(plan.suffix) / k >= candidate_tokens:
            break
        words += 1
    hist = 1
    while hist < 200:
        q = query(0, words, hist)
        if len(probe.plan(q, list(q.candidates)).prefix) >= history_tokens:
            break
        hist += 1
    return [query(qi, words, hist) for qi in range(n)]


def request_stream(queries: list, m: int, seed: int) -> list[list[list[tuple[str, ...]]]]:
    """Per query, per round, the distinct presented orders (item ids) the four methods send to the scorer after
    the shared pass cache — recorded from a run with the simulated scorer (STELLA_LW with a uniform
    calibration matrix)."""
    import numpy as np

    from invarirank._orders import presented_orders
    from invarirank.llm._simulated import SimulatedScorer
    from invarirank.methods import QueryPassCache, drive_many, method_steps
    from invarirank.methods.registry import METHODS
    from invarirank.types import ScorerBase

    class Recorder(ScorerBase):  # batches one query's orders: score_requests goes through score_batch
        def __init__(self) -> None:
            self.inner, self.name, self.batch_size, self.rounds = SimulatedScorer(seed=seed), "rec", 8, []

        def identity(self) -> dict:
            return {}

        def score_batch(self, query: Any, orders: Any) -> list:
            self.rounds.append([tuple(it.item_id for it in o) for o in orders])
            return [self.inner.score(query, o) for o in orders]

    stream = []
    for q in queries:
        rec = Recorder()
        k = len(q.candidates)
        matrix = np.full((k, k), 1.0 / k)
        steps = [
            method_steps(
                name,
                q,
                [q.candidates[i] for i in o.positions],
                seed=seed,
                t=o.key,
                **({"matrix": matrix} if name == "stella" else {}),
            )
            for o in presented_orders(q.query_id, k, m, seed)
            for name in METHODS
        ]
        drive_many(steps, QueryPassCache(rec), q)
        stream.append(rec.rounds)
    return stream


# -- replay ---------------------------------------------------------------------------------------------
def replay(scorer: Any, queries: list, stream: list, window: int) -> None:
    """Send the recorded rounds to ``scorer``: query by query (``window`` 1: one ``score_batch`` per round) or
    ``window`` queries in lockstep (one ``score_requests`` per round holding every query's requests)."""
    by_id = [{it.item_id: it for it in q.candidates} for q in queries]
    for start in range(0, len(queries), window):
        idx = list(range(start, min(start + window, len(queries))))
        for r in range(max(len(stream[i]) for i in idx)):
            requests = [
                (queries[i], [by_id[i][x] for x in order]) for i in idx if r < len(stream[i]) for order in stream[i][r]
            ]
            if window == 1:
                scorer.score_batch(requests[0][0], [items for _, items in requests])
            else:
                scorer.score_requests(requests)


def flops(scorer: Any, fields: dict[str, Any]) -> float:
    """FLOPs of the work the scorer counted (see the module docstring)."""
    counts = scorer.model_flop_counts()
    width = int(fields["num_attention_heads"]) * int(
        fields.get("head_dim") or int(fields["hidden_size"]) // int(fields["num_attention_heads"])
    )
    s = scorer.stats
    return (
        2.0 * counts["non_embedding_params"] * s["tokens_computed"]
        + 2.0 * counts["output_projection_params"] * s["positions_projected"]
        + 4.0 * width * s["attention_context"]
    )


def peak_memory_gib(device: Any) -> float:
    import torch

    if str(device).startswith("cuda"):
        return torch.cuda.max_memory_allocated() / 2**30
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def measure(
    name: str,
    model_id: str,
    fields: dict[str, Any],
    lm: Any,
    queries: list,
    stream: list,
    config: str,
    args: argparse.Namespace,
    matmul: float,
) -> dict[str, Any]:
    """One configuration (a, b or c) on one architecture and K."""
    import torch

    from invarirank.llm._span import SpanScorer

    options = {"a": {"prefix_reuse": False}, "b": {}, "c": {"max_batch_tokens": args.max_batch_tokens}}[config]
    scorer = SpanScorer(lm, pass_cache=False, batch_size=args.batch_size, prefix_cache_size=args.window, **options)
    if str(lm.device).startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    replay(scorer, queries[-1:], [stream[-1][:2]], 1)  # warm-up: two rounds of a spare query (kernels, allocator)
    scorer.reset_stats()
    queries, stream = queries[:-1], stream[:-1]
    _sync(lm.device)
    t0 = time.perf_counter()
    replay(scorer, queries, stream, args.window if config == "c" else 1)
    _sync(lm.device)
    wall = time.perf_counter() - t0
    passes = sum(len(orders) for rounds in stream for orders in rounds)
    achieved = flops(scorer, fields) / wall / 1e12
    s = scorer.stats
    return {
        "arch": name,
        "model": model_id,
        "K": len(queries[0].candidates),
        "config": config,
        "queries": len(queries),
        "passes": passes,
        "seconds": round(wall, 4),
        "passes_per_s": round(passes / wall, 3),
        "tokens_per_s": round(s["tokens_computed"] / wall, 1),
        "tflops": round(achieved, 4),
        "share_of_matmul": round(achieved / matmul, 4),
        "forward_calls": int(s["forward_passes"]),
        "prefix_forwards": int(s["prefix_passes"]),
        "tokens_computed": int(s["tokens_computed"]),
        "prefix_tokens": int(s["prefix_tokens"]),
        "peak_memory_gib": round(peak_memory_gib(lm.device), 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--json",
        metavar="FILE",
        default=str(Path(tempfile.gettempdir()) / "invarirank-bench-gpu.json"),
        help="where to write the figures, after each configuration (default: a file in the temp folder)",
    )
    p.add_argument("--archs", default=",".join(ARCHS), help=f"comma-separated, of {', '.join(ARCHS)}")
    p.add_argument("--ks", default="25,15,50", help="list lengths, in the order measured (default 25,15,50)")
    p.add_argument("--configs", default="b,c,a", help="configurations, in the order measured (default b,c,a)")
    p.add_argument("--queries", type=int, default=None, help="queries per (arch, K) (default 8 on GPU, 2 tiny)")
    p.add_argument("--m", type=int, default=None, help="presented orders per query (default 20 on GPU, 2 tiny)")
    p.add_argument("--window", type=int, default=None, help="queries in lockstep for (c) (default: --queries)")
    p.add_argument("--batch-size", type=int, default=8, help="rows per batch of one query in (a)/(b) (default 8)")
    p.add_argument("--max-batch-tokens", type=int, default=32768, help="token budget of a batch in (c)")
    p.add_argument("--history-tokens", type=int, default=450)
    p.add_argument("--candidate-tokens", type=int, default=25)
    p.add_argument("--tiny", action="store_true", help="2-layer, width-64 versions (the default on a CPU)")
    p.add_argument("--device", default="auto", help="auto (cuda when available), cuda or cpu")
    p.add_argument("--time-limit", type=float, default=480.0, help="start no configuration after this many s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--first-stage",
        action="store_true",
        help="also time LightGCN steps on the CPU on a graph of ML-32M's size (see first_stage)",
    )
    p.add_argument("--first-stage-scale", type=float, default=0.125, help="graph size as a fraction of ML-32M")
    p.add_argument("--first-stage-steps", type=int, default=3)
    p.add_argument("--skip-scorer", action="store_true", help="only the first stage (with --first-stage)")
    args = p.parse_args(argv)

    import torch
    import transformers

    from invarirank.llm._testing import train_tokenizer

    t_start = time.perf_counter()
    device = (
        "cuda"
        if args.device == "auto" and torch.cuda.is_available()
        else ("cpu" if args.device == "auto" else args.device)
    )
    on_gpu = device.startswith("cuda")
    tiny = args.tiny or not on_gpu
    dtype = torch.bfloat16 if on_gpu else torch.float32
    args.queries = args.queries or (8 if not tiny else 2)
    args.m = args.m or (20 if not tiny else 2)
    args.window = args.window or args.queries
    if not on_gpu:
        args.max_batch_tokens = min(args.max_batch_tokens, 4096)
    out = Path(args.json)
    matmul = matmul_tflops(device, dtype, 8192 if on_gpu else 512)
    report: dict[str, Any] = {
        "schema_version": 1,
        "device": (
            torch.cuda.get_device_name() if on_gpu else f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)"
        ),
        "dtype": str(dtype).replace("torch.", ""),
        "tiny": tiny,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
        "matmul_tflops": round(matmul, 4),
        "settings": {k: v for k, v in vars(args).items() if k != "json"},
        "results": [],
        "complete": False,
    }

    def write() -> None:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, out)

    write()
    if args.first_stage:
        report["first_stage"] = first_stage(args.first_stage_scale, args.first_stage_steps, args.seed)
        write()
        print(
            f"first stage: {report['first_stage']['seconds_per_epoch']['ml-32m']:.0f} s per LightGCN epoch at "
            f"ML-32M size (CPU, {report['first_stage']['threads']} threads)",
            file=sys.stderr,
            flush=True,
        )
    tokenizer = train_tokenizer("bytelevel")
    ks = [int(k) for k in args.ks.split(",") if k.strip()]
    archs = [a.strip() for a in args.archs.split(",") if a.strip() and not args.skip_scorer]
    # K by K, every architecture at one K before the next K: a run cut short by --time-limit still covers every
    # model at the first K. The model is rebuilt for each K (random initialisation on the device: seconds).
    for k in ks if archs else []:  # --skip-scorer: no prompts to build
        queries = make_queries(
            tokenizer, args.queries + 1, k, args.history_tokens, args.candidate_tokens, args.seed
        )  # + 1: the warm-up query
        stream = request_stream(queries, args.m, args.seed)
        for name in archs:
            model_id, fields = architecture(name, tiny)
            fields["vocab_size"] = max(int(fields["vocab_size"]), len(tokenizer))
            lm = build_model(model_id, fields, tokenizer, device, dtype, args.seed)
            report.setdefault("parameters_billion", {})[name] = round(
                sum(p.numel() for p in lm.model.parameters()) / 1e9, 4
            )
            for config in [c.strip() for c in args.configs.split(",") if c.strip()]:
                if time.perf_counter() - t_start > args.time_limit:
                    report["stopped"] = f"time limit {args.time_limit:g} s reached before {name} K={k} ({config})"
                    write()
                    print(report["stopped"], file=sys.stderr)
                    return 0
                row = measure(name, model_id, fields, lm, queries, stream, config, args, matmul)
                report["results"].append(row)
                write()
                print(
                    f"{name} K={k} ({config}): {row['passes_per_s']:.1f} passes/s, {row['tflops']:.2f} TFLOP/s "
                    f"({100 * row['share_of_matmul']:.0f} % of matmul), {row['forward_calls']} forwards, "
                    f"peak {row['peak_memory_gib']:.2f} GiB",
                    file=sys.stderr,
                    flush=True,
                )
            del lm
            if on_gpu:
                torch.cuda.empty_cache()
    report["complete"] = True
    write()
    print(f"figures: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
