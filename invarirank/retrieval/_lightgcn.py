"""LightGCN (He et al., 2020) on the training positives, hand-written on torch sparse tensors.

Settings (the protocol chapter, the defaults of :class:`LightGCNConfig`): 64 dimensions, 3 layers, final
embedding = mean of layers 0..3, Adam (lr 1e-3), batches of 2048 positives, BPR loss with one uniform
negative per positive that is never a training positive of that user, L2 1e-4 on the batch's layer-0
rows (sum of squares of the user, positive and negative rows, divided by the batch size), 100 epochs,
seed 42. Layer-0 embeddings are initialised Xavier-normal (RecBole's choice).

The graph is the user-item bipartite graph of the positives, both edge directions, with symmetric
normalisation A = D^-1/2 (adjacency) D^-1/2 on the (users + items) x (users + items) node set; users
come first (node = user index), then items (node = n_users + item index). Nodes of degree 0 have
empty rows.

Speed: the propagation ``mean(E, AE, A^2E, A^3E)`` is one custom autograd function whose backward
reuses the same CSR matrix (A is symmetric, so the gradient is ``mean(G, AG, A^2G, A^3G)``), and the
negatives of a whole epoch are drawn at once (vectorised rejection sampling against a sorted key array
of the positives). On CPU the training is deterministic for a fixed seed (the tests check equal
embeddings for two trainings); on CUDA it is not guaranteed (atomic adds in the gather backward).

Score of (user, item) = dot product of their final (layer-mean) embeddings; higher = preferred.
"""

from __future__ import annotations

import sys
import time
import warnings
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm


@dataclass(frozen=True)
class LightGCNConfig:
    """LightGCN hyper-parameters; the defaults are the protocol chapter's."""

    dim: int = 64
    layers: int = 3
    lr: float = 1e-3
    batch_size: int = 2048
    l2: float = 1e-4
    epochs: int = 100
    init: str = "xavier_normal"

    def to_json(self) -> dict:
        return asdict(self)


def resolve_device(device: str | None) -> torch.device:
    """``None`` → CUDA when available, else CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        from ..errors import InvariRankError

        raise InvariRankError(f"--device {device!r}: not a device name; expected cpu, cuda or cuda:N") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        from ..errors import InvariRankError

        raise InvariRankError(f"--device {device}: CUDA is not available on this machine; expected cpu")
    return dev


# Below this many directed edges (2 x positives) the sparse products of one batch are too small to gain
# from several CPU threads, and with other processes on the machine the thread barriers cost far more
# than they save (measured on ML-100K, 2 cores, busy machine: 1 thread 0.4-0.6 s/epoch, 2 threads
# 1-26 s/epoch), so small graphs train on one thread. This also makes their result independent of
# the machine's core count.
SMALL_GRAPH_EDGES = 1_000_000


def resolve_threads(threads: int | None, n_positives: int, device_type: str = "cpu") -> int:
    """CPU threads for training: ``threads`` if given, else 1 for small graphs (fewer than
    :data:`SMALL_GRAPH_EDGES` directed edges) and torch's current setting otherwise."""
    if threads is not None:
        return max(1, int(threads))
    if device_type == "cpu" and 2 * int(n_positives) < SMALL_GRAPH_EDGES:
        return 1
    return torch.get_num_threads()


def build_norm_adj(
    n_users: int, n_items: int, pos_user: np.ndarray, pos_item: np.ndarray, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Symmetric normalised adjacency of the bipartite positive graph as a float32 CSR tensor."""
    n = n_users + n_items
    u = np.asarray(pos_user, dtype=np.int64)
    i = np.asarray(pos_item, dtype=np.int64) + n_users
    rows = np.concatenate([u, i])
    cols = np.concatenate([i, u])
    deg = np.bincount(rows, minlength=n).astype(np.float64)
    inv_sqrt = np.zeros(n, dtype=np.float64)
    nz = deg > 0
    inv_sqrt[nz] = deg[nz] ** -0.5
    vals = inv_sqrt[rows] * inv_sqrt[cols]
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    crow = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=crow[1:])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        adj = torch.sparse_csr_tensor(
            torch.from_numpy(crow),
            torch.from_numpy(cols.copy()),
            torch.from_numpy(vals.astype(np.float32)),
            size=(n, n),
            check_invariants=False,
        )
        return adj.to(device)


def _mean_layers(adj: torch.Tensor, x: torch.Tensor, layers: int) -> torch.Tensor:
    acc = x.clone()
    h = x
    for _ in range(layers):
        h = adj @ h
        acc = acc + h
    return acc / (layers + 1)


class _MeanPropagation(torch.autograd.Function):
    """y = mean(x, Ax, ..., A^L x) for a symmetric sparse A; backward applies the same operator."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, adj: torch.Tensor, layers: int) -> torch.Tensor:  # type: ignore[override]
        ctx.adj = adj
        ctx.layers = layers
        return _mean_layers(adj, x, layers)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        return _mean_layers(ctx.adj, grad.contiguous(), ctx.layers), None, None


def propagate(adj: torch.Tensor, x: torch.Tensor, layers: int) -> torch.Tensor:
    """Layer-mean LightGCN embeddings of all nodes (differentiable in ``x``)."""
    return _MeanPropagation.apply(x, adj, layers)


def sample_negatives(users: np.ndarray, pos_keys: np.ndarray, n_items: int, rng: np.random.Generator) -> np.ndarray:
    """One uniform item per entry of ``users`` that is not a training positive of that user.

    ``pos_keys`` = sorted ``user * n_items + item`` of the positives. Collisions are re-drawn, all at
    once, until none is left (every user must have at least one non-positive item).
    """
    users = np.asarray(users, dtype=np.int64)
    neg = rng.integers(0, n_items, size=users.size, dtype=np.int64)
    todo = np.arange(users.size)
    last = pos_keys.size - 1
    while todo.size:
        keys = users[todo] * n_items + neg[todo]
        at = np.minimum(np.searchsorted(pos_keys, keys), last)
        todo = todo[pos_keys[at] == keys]
        if todo.size:
            neg[todo] = rng.integers(0, n_items, size=todo.size, dtype=np.int64)
    return neg


def _rng(seed: int, what: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, zlib.crc32(what.encode())]))


def train_lightgcn(
    n_users: int,
    n_items: int,
    pos_user: np.ndarray,
    pos_item: np.ndarray,
    *,
    config: LightGCNConfig = LightGCNConfig(),
    seed: int = 42,
    device: str | torch.device | None = None,
    progress: bool = True,
    threads: int | None = None,
    on_epoch: Callable[[int, float, float], None] | None = None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Train LightGCN; return (user embeddings, item embeddings, info), float32 numpy arrays.

    ``info`` holds ``loss_curve`` (mean total loss per epoch), ``epoch_seconds``, ``train_seconds``,
    ``device``, ``threads``. ``on_epoch(epoch, seconds, loss)`` is called after each epoch (0-based).
    ``threads``: CPU threads (default :func:`resolve_threads`); torch's setting is restored after.
    """
    dev = resolve_device(device if device is None or isinstance(device, str) else str(device))
    n_threads = resolve_threads(threads, np.asarray(pos_user).size, dev.type)
    previous = torch.get_num_threads()
    torch.set_num_threads(n_threads)
    try:
        return _train(n_users, n_items, pos_user, pos_item, config, seed, dev, progress, on_epoch)
    finally:
        torch.set_num_threads(previous)


def _train(
    n_users: int,
    n_items: int,
    pos_user: np.ndarray,
    pos_item: np.ndarray,
    config: LightGCNConfig,
    seed: int,
    dev: torch.device,
    progress: bool,
    on_epoch: Callable[[int, float, float], None] | None,
) -> tuple[np.ndarray, np.ndarray, dict]:
    pos_user = np.asarray(pos_user, dtype=np.int64)
    pos_item = np.asarray(pos_item, dtype=np.int64)
    n_pos = pos_user.size
    pos_keys = np.unique(pos_user * n_items + pos_item)
    counts = np.bincount(pos_user, minlength=n_users)
    if (counts >= n_items).any():
        from ..errors import InvariRankError

        u = int(np.flatnonzero(counts >= n_items)[0])
        raise InvariRankError(
            f"user index {u} has every item as a training positive; LightGCN needs "
            f"at least one non-positive item per user for its negatives"
        )

    t_start = time.perf_counter()
    adj = build_norm_adj(n_users, n_items, pos_user, pos_item, dev)
    gen = torch.Generator().manual_seed(int(seed))
    weight = torch.empty(n_users + n_items, config.dim, dtype=torch.float32)
    if config.init == "xavier_normal":
        torch.nn.init.xavier_normal_(weight, generator=gen)
    elif config.init == "normal":
        torch.nn.init.normal_(weight, std=0.1, generator=gen)
    else:
        raise ValueError(f"unknown init {config.init!r}")
    emb = torch.nn.Parameter(weight.to(dev))
    opt = torch.optim.Adam([emb], lr=config.lr)
    rng = _rng(seed, "lightgcn-epochs")
    pu_all = torch.from_numpy(pos_user).to(dev)
    pi_all = torch.from_numpy(pos_item + n_users).to(dev)

    losses: list[float] = []
    epoch_seconds: list[float] = []
    bar = tqdm(range(config.epochs), desc="LightGCN", unit="epoch", disable=not progress, file=sys.stderr, leave=False)
    for epoch in bar:
        t0 = time.perf_counter()
        perm_np = rng.permutation(n_pos)
        neg_np = sample_negatives(pos_user[perm_np], pos_keys, n_items, rng) + n_users
        perm = torch.from_numpy(perm_np).to(dev)
        negs = torch.from_numpy(neg_np).to(dev)
        total = torch.zeros((), dtype=torch.float64, device=dev)
        for start in range(0, n_pos, config.batch_size):
            b = perm[start : start + config.batch_size]
            u, p, q = pu_all[b], pi_all[b], negs[start : start + config.batch_size]
            final = propagate(adj, emb, config.layers)
            ue, pe, qe = final[u], final[p], final[q]
            bpr = F.softplus((ue * qe).sum(-1) - (ue * pe).sum(-1)).mean()  # = -log sigmoid(pos - neg)
            reg = (emb[u].square().sum() + emb[p].square().sum() + emb[q].square().sum()) / b.numel()
            loss = bpr + config.l2 * reg
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach().double() * b.numel()
        mean_loss = float(total) / n_pos
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        secs = time.perf_counter() - t0
        losses.append(mean_loss)
        epoch_seconds.append(secs)
        bar.set_postfix(loss=f"{mean_loss:.4f}")
        if on_epoch is not None:
            on_epoch(epoch, secs, mean_loss)
    bar.close()
    with torch.no_grad():
        final = _mean_layers(adj, emb.detach(), config.layers).cpu().numpy().astype(np.float32)
    info = {
        "loss_curve": losses,
        "epoch_seconds": epoch_seconds,
        "train_seconds": time.perf_counter() - t_start,
        "device": dev.type,
        "threads": torch.get_num_threads(),
        "positives": int(n_pos),
    }
    return final[:n_users].copy(), final[n_users:].copy(), info
