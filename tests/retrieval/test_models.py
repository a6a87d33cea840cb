"""First stage: LightGCN pieces (adjacency, propagation gradient, negative sampling), determinism of
LightGCN and ALS for a fixed seed, model caching."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from invarirank.retrieval import retrieve  # noqa: E402
from invarirank.retrieval._data import load_retrieval_data  # noqa: E402
from invarirank.retrieval._lightgcn import LightGCNConfig, build_norm_adj, propagate, sample_negatives, train_lightgcn  # noqa: E402
from tests.retrieval.test_helpers import synthetic_interactions, write_prepared  # noqa: E402


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def data(tmp_path):
    return load_retrieval_data(write_prepared(tmp_path / "d", synthetic_interactions()))


def test_normalised_adjacency_is_symmetric_with_degree_weights():
    pu, pi = np.array([0, 0, 1]), np.array([0, 1, 1])
    A = build_norm_adj(2, 3, pu, pi).to_dense().numpy()
    assert np.allclose(A, A.T)
    # user 0 has degree 2, item 1 (node 3) degree 2 -> 1/2; item 2 (node 4) is isolated
    assert A[0, 3] == pytest.approx(0.5)
    assert A[0, 2] == pytest.approx(1 / np.sqrt(2 * 1))
    assert not A[4].any() and not A[:, 4].any()
    assert not A[:2, :2].any() and not A[2:, 2:].any()  # bipartite


def test_propagation_gradient_matches_plain_autograd():
    pu, pi = np.array([0, 0, 1, 2, 2]), np.array([0, 1, 1, 2, 0])
    A = build_norm_adj(3, 3, pu, pi)
    dense = A.to_dense()
    x = torch.randn(6, 4, dtype=torch.float32, generator=torch.Generator().manual_seed(0))
    w = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    x1 = x.clone().requires_grad_(True)
    (propagate(A, x1, 3) * w).sum().backward()
    x2 = x.clone().requires_grad_(True)
    h, acc = x2, x2
    for _ in range(3):
        h = dense @ h
        acc = acc + h
    ((acc / 4) * w).sum().backward()
    assert torch.allclose(propagate(A, x, 3), acc.detach() / 4, atol=1e-6)
    assert torch.allclose(x1.grad, x2.grad, atol=1e-6)


def test_negatives_are_never_training_positives():
    rng = np.random.default_rng(0)
    n_users, n_items = 50, 20
    pos = [(u, i) for u in range(n_users) for i in rng.choice(n_items, size=19 if u % 5 == 0 else 8, replace=False)]
    pu = np.array([p[0] for p in pos])
    pi = np.array([p[1] for p in pos])
    keys = np.unique(pu * n_items + pi)
    users = np.repeat(pu, 20)
    neg = sample_negatives(users, keys, n_items, np.random.default_rng(1))
    assert neg.min() >= 0 and neg.max() < n_items
    assert not np.isin(users * n_items + neg, keys).any()
    # users with 19 of 20 items as positives always get their single remaining item
    for u in range(0, n_users, 5):
        missing = set(range(n_items)) - set(pi[pu == u].tolist())
        assert set(neg[users == u].tolist()) == missing


def test_lightgcn_is_deterministic_on_cpu_for_a_seed(data):
    cfg = LightGCNConfig(dim=8, epochs=3, batch_size=64)
    args = (data.n_users, data.n_items, data.pos_user, data.pos_item)
    before = torch.get_num_threads()
    u1, i1, info1 = train_lightgcn(*args, config=cfg, seed=7, device="cpu", progress=False)
    assert info1["threads"] == 1 and torch.get_num_threads() == before  # small graph: 1 thread, restored
    u2, i2, info2 = train_lightgcn(*args, config=cfg, seed=7, device="cpu", progress=False)
    assert np.array_equal(u1, u2) and np.array_equal(i1, i2)
    assert info1["loss_curve"] == info2["loss_curve"] and len(info1["loss_curve"]) == 3
    u3, _, _ = train_lightgcn(*args, config=cfg, seed=8, device="cpu", progress=False)
    assert not np.array_equal(u1, u3)
    # on all of torch's threads the result is deterministic too
    u4, _, _ = train_lightgcn(*args, config=cfg, seed=7, device="cpu", progress=False, threads=2)
    u5, _, _ = train_lightgcn(*args, config=cfg, seed=7, device="cpu", progress=False, threads=2)
    assert np.array_equal(u4, u5)


def test_lightgcn_loss_decreases(data):
    cfg = LightGCNConfig(dim=16, epochs=40, batch_size=32, lr=1e-2)
    _, _, info = train_lightgcn(
        data.n_users, data.n_items, data.pos_user, data.pos_item, config=cfg, seed=0, device="cpu", progress=False
    )
    assert info["loss_curve"][-1] < 0.8 * info["loss_curve"][0]


def test_als_is_deterministic_for_a_seed(data):
    pytest.importorskip("implicit")
    from invarirank.retrieval._als import ALSConfig, train_als

    cfg = ALSConfig(factors=8, iterations=3)
    args = (data.n_users, data.n_items, data.pos_user, data.pos_item)
    u1, i1, _ = train_als(*args, config=cfg, seed=3, progress=False)
    u2, i2, _ = train_als(*args, config=cfg, seed=3, progress=False)
    assert u1.shape == (data.n_users, 8) and i1.shape == (data.n_items, 8)
    assert np.array_equal(u1, u2) and np.array_equal(i1, i2)


def test_retrieve_caches_the_trained_model(tmp_path):
    folder = write_prepared(tmp_path / "d", synthetic_interactions())
    a = retrieve(folder, "lightgcn", k=3, epochs=2, out=tmp_path / "o1", device="cpu", progress=False)
    assert not a.model_cached
    assert (a.model_dir / "model.safetensors").is_file()
    meta = json.loads((a.model_dir / "model.json").read_text())
    assert meta["settings"]["config"]["epochs"] == 2 and len(meta["info"]["loss_curve"]) == 2
    b = retrieve(folder, "lightgcn", k=3, epochs=2, out=tmp_path / "o2", device="cpu", progress=False)
    assert b.model_cached and b.model_dir == a.model_dir
    assert (tmp_path / "o1" / "candidates.jsonl").read_bytes() == (tmp_path / "o2" / "candidates.jsonl").read_bytes()
    # other settings -> another model
    c = retrieve(folder, "lightgcn", k=3, epochs=1, out=tmp_path / "o3", device="cpu", progress=False)
    assert not c.model_cached and c.model_dir != a.model_dir
    assert a.stats["loss_curve"] == b.stats["loss_curve"]
