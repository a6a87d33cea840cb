"""Implicit ALS (Hu, Koren & Volinsky, 2008) through the ``implicit`` package, seeded.

Settings (the protocol chapter, the defaults of :class:`ALSConfig`): 64 factors, regularization 0.01,
20 iterations, alpha 40 — on the same binary training positives as LightGCN, so the confidence of a
positive is ``1 + alpha`` (implicit multiplies the input by ``alpha``). The factors are initialised
from ``random_state = seed``; BLAS is limited to one thread around the fit (as implicit asks), and the
fit is deterministic for a fixed seed (each user/item solve is independent of thread scheduling).
``implicit`` is imported lazily. Score = dot product of user and item factors; higher = preferred.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class ALSConfig:
    """Implicit-ALS hyper-parameters; the defaults are the protocol chapter's."""

    factors: int = 64
    regularization: float = 0.01
    iterations: int = 20
    alpha: float = 40.0

    def to_json(self) -> dict:
        return asdict(self)


def train_als(
    n_users: int,
    n_items: int,
    pos_user: np.ndarray,
    pos_item: np.ndarray,
    *,
    config: ALSConfig = ALSConfig(),
    seed: int = 42,
    progress: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Fit implicit ALS on the binary positives; return (user factors, item factors, info), float32."""
    import scipy.sparse as sp
    from threadpoolctl import threadpool_limits

    try:
        from implicit.cpu.als import AlternatingLeastSquares
    except ImportError as exc:  # pragma: no cover - depends on the environment
        from ..errors import InvariRankError

        raise InvariRankError(
            f"--retriever als needs the 'implicit' package ({exc}); install invarirank[models]"
        ) from None

    user_items = sp.csr_matrix(
        (
            np.ones(np.asarray(pos_user).size, dtype=np.float32),
            (np.asarray(pos_user, dtype=np.int64), np.asarray(pos_item, dtype=np.int64)),
        ),
        shape=(n_users, n_items),
    )
    user_items.sum_duplicates()
    user_items.data[:] = 1.0
    losses: list[float] = []

    def _callback(iteration: int, elapsed: float, loss) -> None:
        if loss is not None:
            losses.append(float(loss))

    t0 = time.perf_counter()
    with threadpool_limits(limits=1, user_api="blas"):
        model = AlternatingLeastSquares(
            factors=config.factors,
            regularization=config.regularization,
            iterations=config.iterations,
            alpha=config.alpha,
            calculate_training_loss=True,
            random_state=int(seed),
        )
        model.fit(user_items, show_progress=progress, callback=_callback)
    secs = time.perf_counter() - t0
    users = np.asarray(model.user_factors, dtype=np.float32)
    items = np.asarray(model.item_factors, dtype=np.float32)
    info = {"loss_curve": losses, "train_seconds": secs, "device": "cpu", "positives": int(user_items.nnz)}
    return users, items, info
