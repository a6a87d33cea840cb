"""Query selection: a run's test queries (in run order), its validation queries and their provenance.

``n_queries = N`` samples N test queries with the seed from those kept at ``sample_k`` (the smallest K of a
sweep; default K), so a sweep over K compares the same users (data holding fewer: all of them, with a note on
stderr); ``first_queries = F`` then keeps the first F of them (in run order), so a smaller run reranks the first
users of a larger one. With ``candidates`` (a
candidates file), its ``split = "test"`` lines are the queries and its ``split = "validation"`` lines calibrate
STELLA_LW; given ``K``, longer candidate lists are cut to their first K; without ``K`` each list is used as is
(its length is its K).
Either way a query is kept only when its (cut) list holds a relevant item, as the first stage's are, so leaving
``K`` out and giving the lists' length select the same queries; `invarirank rerank` counts the queries left out. The
data set ``synthetic`` (the teaching lab) is a seeded synthetic candidates file written beside the run folder
first: ``n_queries`` (default 40) test and ``calibration_queries`` validation candidate sets of K made-up items.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import sha256_file
from .._orders import rng_for
from ..errors import InvariRankError
from ..types import Query
from ._config import RunConfig, check_lists


@dataclass
class QuerySet:
    """The run's test queries (in run order), the validation queries (STELLA_LW calibration) and provenance for
    the manifest's ``data`` section."""

    test: list[Query]
    validation: list[Query]
    info: dict[str, Any]


def cut_to_k(query: Query, k: int) -> Query:
    """``query`` with its first ``k`` candidates (and their first-stage scores) only."""
    scores = query.candidate_scores[:k] if query.candidate_scores else ()
    return dataclasses.replace(query, candidates=query.candidates[:k], candidate_scores=scores)


def _kept_at(q: Query, k: int) -> bool:
    truth = set(q.ground_truth)
    return any(c.item_id in truth for c in q.candidates[:k])


def _sample(pool_ids: list[str], n: int | None, seed: int) -> list[str]:
    if n is None or n >= len(pool_ids):
        return list(pool_ids)
    idx = sorted(int(i) for i in rng_for(seed, "queries").choice(len(pool_ids), size=n, replace=False))
    return [pool_ids[i] for i in idx]


def synthetic_candidates_for(config: RunConfig, folder: Path) -> RunConfig:
    """For the data set ``synthetic`` without a candidates file: write the seeded synthetic candidates beside
    ``folder`` (``.<name>-candidates.jsonl``) and return the config that reads them; else ``config`` itself."""
    if config.dataset != "synthetic" or config.candidates:
        return config
    from ..data._synthetic import write_synthetic_candidates

    path = folder.parent / f".{folder.name}-candidates.jsonl"
    write_synthetic_candidates(
        path,
        n_test=config.n_queries or 40,
        n_validation=config.calibration_queries,
        k=config.effective_k,
        seed=config.seed,
    )
    return config.replace(candidates=str(path))


def _retrieve(config: RunConfig, k: int, info: dict[str, Any], progress: bool = True) -> Any:
    try:
        from ..retrieval import retrieve
    except ImportError as exc:
        raise InvariRankError(
            f"the first stage (invarirank.retrieval._first_stage) is not available: {exc}; use --candidates FILE"
        ) from None
    data_dir = info.get("data_dir")
    if data_dir is None:
        if config.data_dir:
            data_dir = config.data_dir
        else:
            try:
                from ..data import prepare
            except ImportError as exc:
                raise InvariRankError(
                    f"the data layer (invarirank.data._preparation) is not available: {exc}; "
                    f"use --data-dir DIR or --candidates FILE"
                ) from None
            data_dir = str(prepare(config.effective_dataset, raw_dir=config.raw_dir))
        info["data_dir"] = str(data_dir)
    return retrieve(data_dir, retriever=config.retriever, k=k, seed=config.retrieval_seed, progress=progress)


def _stable_stats(stats: Mapping[str, Any]) -> dict[str, Any]:
    """First-stage statistics without wall-clock fields (``*seconds*``), which vary between equal runs."""
    return {k: (_stable_stats(v) if isinstance(v, Mapping) else v) for k, v in stats.items() if "seconds" not in k}


def load_queries(config: RunConfig, progress: bool = True) -> QuerySet:
    """Select the run's queries (see the module docstring); prepares data and runs or loads the first stage on
    demand (through their caches) unless ``config.candidates`` is given."""
    k = config.effective_k
    k_min = config.pool_k
    info: dict[str, Any] = {}
    if config.candidates:
        from ..candidates import read_candidates

        path = Path(config.candidates)
        every = read_candidates(path)
        info.update(
            {
                "source": "candidates",
                "dataset": config.effective_dataset,
                "candidates_file": str(path),
                "candidates_sha256": sha256_file(path),
            }
        )
        test = [q for q in every if q.split == "test"]
        validation = [q for q in every if q.split == "validation"]
        others = sorted({q.split for q in every} - {"test", "validation"})
        if others:
            raise InvariRankError(
                f"{path}: split {others[0]!r} in the candidates file; expected 'test' or 'validation'"
            )
        if not test:
            raise InvariRankError(f"{path}: no test queries (lines with split 'test')")
        check_lists(config, {q.query_id: len(q.candidates) for q in test}, str(path))
        # the file's own lists are its K: the same rule as --k equal to their length (kept when they hold a
        # relevant item), so leaving --k out or giving the list length selects the same queries
        pool = [q for q in test if _kept_at(q, q.k if k_min is None else k_min)]
        at_k = {q.query_id: (q if k is None else cut_to_k(q, k)) for q in test if _kept_at(q, q.k if k is None else k)}
        info["test_queries_in_file"] = len(test)
    else:
        assert k is not None and k_min is not None
        res = _retrieve(config, k, info, progress)
        info.update(
            {
                "source": "first_stage",
                "dataset": config.effective_dataset,
                "retriever": config.retriever,
                "retrieval_seed": config.retrieval_seed,
                "retrieval_dir": str(getattr(res, "out_dir", "")),
                "retrieval_stats": _stable_stats(getattr(res, "stats", {}) or {}),
            }
        )
        test, validation = list(res.test), list(res.validation)
        at_k = {q.query_id: q for q in test}
        if k_min != k:
            res_min = _retrieve(config, k_min, info, progress)
            pool = list(res_min.test)
            info["retrieval_stats_at_smallest_k"] = _stable_stats(getattr(res_min, "stats", {}) or {})
        else:
            pool = test
    pool_ids = [q.query_id for q in pool]
    # a user's data (a first stage or a candidates file) holds fewer queries than asked for: all of them are taken
    # (as "default all" reads), with a note saying how many; the synthetic set is *generated* with n_queries queries,
    # of which those kept at sample_k are the pool
    if config.n_queries is not None and config.n_queries > len(pool_ids) and config.dataset != "synthetic":
        kept = f" kept at K = {k_min}" if k_min else ""
        print(
            f"{config.run_name}: n_queries {config.n_queries}: only {len(pool_ids)} test queries are available"
            f"{kept}; taking all {len(pool_ids)}",
            file=sys.stderr,
        )
    chosen = _sample(pool_ids, config.n_queries, config.seed)
    if config.first_queries is not None:  # a prefix of the sample: the same users as the larger run's first
        chosen = chosen[: config.first_queries]
    missing = [qid for qid in chosen if qid not in at_k]
    queries = [at_k[qid] for qid in chosen if qid in at_k]
    if not queries:
        raise InvariRankError(
            "no test queries to rerank (none keeps a relevant item among its "
            + (f"first {k} candidates)" if k else "candidates)")
        )
    info.update(
        {
            "k": k,
            "sampled_from_k": k_min,
            "pool_queries": len(pool_ids),
            "sampled": len(chosen),
            "dropped_at_k": missing,
            "validation_queries": len(validation),
        }
    )
    return QuerySet(queries, validation, info)
