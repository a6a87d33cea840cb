"""First-stage benchmark on MovieLens-100K: LightGCN epoch time (hand-written sparse version vs
torch_geometric's ``LightGCN`` given a CSR adjacency, side by side in one run) and retrieval quality
(recall@25 etc. of LightGCN, implicit ALS and popularity over all test queries).

Goals (issue 4): LightGCN <= 1.0 s per epoch on 2 cores; LightGCN recall@25 >= 1.3 x popularity.
Training here is never cached: every number is measured in this run, with the protocol settings
(100 epochs, seed 42) unless ``--epochs`` says otherwise.

    python -m benchmarks.retrieval [--data DIR] [--epochs 100] [--pyg-epochs 3] [--skip-pyg] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

GOAL_EPOCH_SECONDS = 1.0
GOAL_RATIO = 1.3


def _prepared_ml100k() -> Path:
    from invarirank.data import prepare

    return Path(prepare("ml-100k"))


def _time_pyg(data, epochs: int, threads: int, seed: int = 42) -> dict:
    """Seconds per epoch of torch_geometric's LightGCN (CSR adjacency, protocol settings) on the same
    positives, batches and negatives, on ``threads`` CPU threads; ``epochs`` timed epochs after one
    warm-up epoch."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _time_pyg_inner(data, epochs, seed) | {"threads": threads}
    finally:
        torch.set_num_threads(previous)


def _time_pyg_inner(data, epochs: int, seed: int) -> dict:
    import torch
    from torch_geometric.nn.models import LightGCN
    from torch_geometric.utils import to_torch_csr_tensor

    from invarirank.retrieval._lightgcn import LightGCNConfig, sample_negatives

    cfg = LightGCNConfig()
    nu, ni = data.n_users, data.n_items
    pu, pi = data.pos_user, data.pos_item
    n = nu + ni
    src = np.concatenate([pu, pi + nu])
    dst = np.concatenate([pi + nu, pu])
    edge_index = torch.from_numpy(np.stack([src, dst]))
    adj = to_torch_csr_tensor(edge_index, size=(n, n))
    torch.manual_seed(seed)
    model = LightGCN(num_nodes=n, embedding_dim=cfg.dim, num_layers=cfg.layers)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    rng = np.random.default_rng(seed)
    keys = np.unique(pu * ni + pi)
    times = []
    for epoch in range(epochs + 1):
        t0 = time.perf_counter()
        perm = rng.permutation(pu.size)
        neg = sample_negatives(pu[perm], keys, ni, rng) + nu
        for start in range(0, pu.size, cfg.batch_size):
            b = perm[start : start + cfg.batch_size]
            u = torch.from_numpy(pu[b])
            p = torch.from_numpy(pi[b] + nu)
            q = torch.from_numpy(neg[start : start + cfg.batch_size])
            label_index = torch.stack([torch.cat([u, u]), torch.cat([p, q])])
            pos_rank, neg_rank = model(adj, label_index).chunk(2)
            loss = model.recommendation_loss(pos_rank, neg_rank, node_id=label_index.unique(), lambda_reg=cfg.l2)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if epoch > 0:
            times.append(time.perf_counter() - t0)
    import torch_geometric

    return {
        "version": torch_geometric.__version__,
        "epochs_timed": len(times),
        "seconds_per_epoch": statistics.mean(times),
        "epoch_seconds": times,
    }


def run(args: argparse.Namespace) -> dict:
    import torch

    from invarirank.retrieval._data import load_retrieval_data
    from invarirank.retrieval._lightgcn import LightGCNConfig, train_lightgcn
    from invarirank.retrieval._query_ranking import evaluate_embeddings
    from invarirank.retrieval._training import train_retriever

    data_dir = Path(args.data) if args.data else _prepared_ml100k()
    data = load_retrieval_data(data_dir)
    res: dict = {
        "data": str(data_dir),
        "users": data.n_users,
        "items": data.n_items,
        "train_positives": data.n_positives,
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }

    # 1. our LightGCN, protocol settings, full training (timing + quality from the same run)
    cfg = LightGCNConfig(epochs=args.epochs)
    users, items, info = train_lightgcn(
        data.n_users,
        data.n_items,
        data.pos_user,
        data.pos_item,
        config=cfg,
        seed=42,
        device="cpu",
        progress=not args.json,
    )
    ep = info["epoch_seconds"]
    steady = ep[1:] if len(ep) > 1 else ep
    res["lightgcn"] = {
        "epochs": cfg.epochs,
        "threads": info["threads"],
        "train_seconds": info["train_seconds"],
        "first_epoch_seconds": ep[0],
        "seconds_per_epoch_median": statistics.median(steady),
        "seconds_per_epoch_mean": statistics.mean(steady),
        "final_loss": info["loss_curve"][-1],
    }
    quality = {"lightgcn": evaluate_embeddings(data, users, items, k=25)}
    # the same code on all of torch's threads, a few epochs, for reference
    all_threads = torch.get_num_threads()
    if args.extra_epochs and all_threads != info["threads"]:
        _, _, inf2 = train_lightgcn(
            data.n_users,
            data.n_items,
            data.pos_user,
            data.pos_item,
            config=LightGCNConfig(epochs=args.extra_epochs + 1),
            seed=42,
            device="cpu",
            progress=False,
            threads=all_threads,
        )
        res["lightgcn_all_threads"] = {
            "threads": all_threads,
            "epochs_timed": args.extra_epochs,
            "seconds_per_epoch_mean": statistics.mean(inf2["epoch_seconds"][1:]),
        }

    # 2. torch_geometric side by side
    if args.skip_pyg:
        res["torch_geometric"] = {"skipped": "--skip-pyg"}
    else:
        try:
            import torch_geometric  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - report any import failure and continue
            res["torch_geometric"] = {"skipped": f"import failed: {type(exc).__name__}: {exc}"}
        else:
            pyg = _time_pyg(data, args.pyg_epochs, threads=info["threads"])
            pyg["ratio_to_ours"] = pyg["seconds_per_epoch"] / res["lightgcn"]["seconds_per_epoch_mean"]
            res["torch_geometric"] = pyg

    # 3. quality of the other retrievers
    for name in ("als", "popularity"):
        t0 = time.perf_counter()
        u, v, inf = train_retriever(data, name, seed=42, progress=False)
        quality[name] = evaluate_embeddings(data, u, v, k=25)
        quality[name]["train_seconds"] = inf.get("train_seconds", time.perf_counter() - t0)
    quality["lightgcn"]["train_seconds"] = info["train_seconds"]
    res["quality"] = quality
    pop = quality["popularity"]["recall@25"]
    res["ratio_recall@25_lightgcn_over_popularity"] = quality["lightgcn"]["recall@25"] / pop if pop else None
    res["ratio_recall@25_als_over_popularity"] = quality["als"]["recall@25"] / pop if pop else None
    return res


def _print(res: dict) -> None:
    lg = res["lightgcn"]
    print(
        f"data {res['data']}: {res['users']} users, {res['items']} items, "
        f"{res['train_positives']} training positives; torch {res['torch']}, "
        f"{res['torch_threads']} threads"
    )
    ok = "meets" if lg["seconds_per_epoch_mean"] <= GOAL_EPOCH_SECONDS else "MISSES"
    print(
        f"LightGCN (hand-written sparse, {lg['threads']} thread(s)): {lg['seconds_per_epoch_mean']:.3f} s/epoch mean "
        f"(median {lg['seconds_per_epoch_median']:.3f}, first epoch {lg['first_epoch_seconds']:.2f} s); "
        f"{lg['epochs']} epochs in {lg['train_seconds']:.1f} s; {ok} the goal <= {GOAL_EPOCH_SECONDS} s/epoch"
    )
    if "lightgcn_all_threads" in res:
        at = res["lightgcn_all_threads"]
        print(
            f"  same code on {at['threads']} threads: {at['seconds_per_epoch_mean']:.3f} s/epoch "
            f"over {at['epochs_timed']} epochs (for reference)"
        )
    pyg = res["torch_geometric"]
    if "skipped" in pyg:
        print(f"torch_geometric LightGCN: skipped ({pyg['skipped']})")
    else:
        print(
            f"torch_geometric {pyg['version']} LightGCN (CSR adjacency, {pyg['threads']} thread(s)): "
            f"{pyg['seconds_per_epoch']:.3f} "
            f"s/epoch over {pyg['epochs_timed']} epochs -> {pyg['ratio_to_ours']:.1f}x the hand-written time"
        )
    print(f"{'retriever':<11} {'recall@25':>9} {'ndcg@25':>8} {'cov@15':>7} {'cov@25':>7} {'cov@50':>7} {'train s':>8}")
    for name, q in res["quality"].items():
        print(
            f"{name:<11} {q['recall@25']:>9.4f} {q['ndcg@25']:>8.4f} {q['coverage@15']:>7.4f} "
            f"{q['coverage@25']:>7.4f} {q['coverage@50']:>7.4f} {q['train_seconds']:>8.2f}"
        )
    r = res["ratio_recall@25_lightgcn_over_popularity"]
    ok = "meets" if r is not None and r >= GOAL_RATIO else "MISSES"
    if lg["epochs"] != 100:
        ok += f" -- but LightGCN ran {lg['epochs']} epochs, the goal is for the protocol's 100"
    print(
        f"recall@25 LightGCN / popularity = {r:.2f} ({ok} the goal >= {GOAL_RATIO}); "
        f"ALS / popularity = {res['ratio_recall@25_als_over_popularity']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=None, help="prepared folder (default: invarirank.data.prepare('ml-100k'))")
    parser.add_argument("--epochs", type=int, default=100, help="LightGCN epochs (default: protocol, 100)")
    parser.add_argument("--pyg-epochs", type=int, default=3, help="timed torch_geometric epochs (default 3)")
    parser.add_argument(
        "--extra-epochs", type=int, default=5, help="epochs timed again on all of torch's threads (0: skip; default 5)"
    )
    parser.add_argument("--skip-pyg", action="store_true", help="do not time torch_geometric")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    try:
        res = run(args)
    except Exception as exc:  # noqa: BLE001 - a benchmark reports and fails, never hangs
        from invarirank.errors import InvariRankError

        if not isinstance(exc, (InvariRankError, ImportError)):
            raise
        print(f"benchmarks.retrieval: error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        _print(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
