"""The authors' evaluation script as a same-run baseline for ``benchmarks.evaluation``.

The paper's authors publish their code (https://github.com/ejbito/InvariRank). It is neither shipped nor downloaded
here: give a checkout of it with ``--authors-code PATH`` or the ``INVARIRANK_AUTHORS_CODE`` environment variable.
Their ``experiments/scripts/evaluate_reranker.py`` (HR/recall/nDCG/MRR@k, PPI, GPI, rank correlations between the
permutations; plain Python, standard library only) then runs as a whole process on the first n queries of the
benchmark's observations, converted to its input (``{"users": {QUERY: {"ground_truth_item_ids": [...],
"permutations": [{"permutation_index": t, "input_candidate_item_ids": [...], "reranked_item_ids": [...]}]}}}``).
It is far too slow to run on every query, so it runs at two sizes n1 < n2 and its time is extrapolated linearly to
the whole file, t(Q) = t(n1) + (t(n2) - t(n1)) (Q - n1) / (n2 - n1): its start-up counts once, like ours.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from benchmarks._process import timed_run

SCRIPT = Path("experiments") / "scripts" / "evaluate_reranker.py"
ENV_VAR = "INVARIRANK_AUTHORS_CODE"


def find_checkout(given: str | None) -> Path | None:
    """The authors' checkout from the flag or the environment variable; None when neither is set. A path that is
    not such a checkout is an error naming the path and the file it lacks."""
    where = given or os.environ.get(ENV_VAR)
    if not where:
        return None
    root = Path(where).expanduser().resolve()
    if not (root / SCRIPT).is_file():
        raise SystemExit(
            f"--authors-code / {ENV_VAR}: {root} has no {SCRIPT} (expected a checkout of the authors' code)"
        )
    return root


def write_payload(observations: Path, n_queries: int, out: Path) -> None:
    """The first ``n_queries`` queries of an observations file (JSON Lines) as the authors' script's input."""
    users: dict[str, dict] = {}
    with open(observations, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["query_id"] not in users and len(users) == n_queries:
                break
            user = users.setdefault(row["query_id"], {"ground_truth_item_ids": row["relevant"], "permutations": []})
            user["permutations"].append(
                {
                    "permutation_index": row["permutation"],
                    "input_candidate_item_ids": row["input"],
                    "reranked_item_ids": row["output"],
                }
            )
    out.write_text(json.dumps({"dataset": "synthetic", "users": users}), encoding="utf-8")


def time_script(checkout: Path, payload: Path, out: Path, k: int = 10) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process of the authors' evaluation script on ``payload``."""
    env = {key: v for key, v in os.environ.items() if key != "PYTHONPATH"}  # their package, not ours
    command = [sys.executable, str(SCRIPT), "--input", str(payload), "--output", str(out), "--k", str(k)]
    proc, seconds, cpu = timed_run(command, checkout, env)
    if proc.returncode != 0:
        raise RuntimeError(f"the authors' evaluation script failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return seconds, cpu


def extrapolated(checkout: Path, observations: Path, sizes: tuple[int, int], queries: int, tmp: Path) -> dict:
    """The authors' script timed on the first n1 and n2 queries and extrapolated to ``queries`` (wall and CPU)."""
    n1, n2 = sizes
    timed = {}
    for n in (n1, n2):
        payload = tmp / f"authors-{n}.json"
        write_payload(observations, n, payload)
        timed[n] = time_script(checkout, payload, tmp / f"authors-{n}-metrics.json")
    scale = (queries - n1) / (n2 - n1)
    wall = timed[n1][0] + (timed[n2][0] - timed[n1][0]) * scale
    cpu = timed[n1][1] + (timed[n2][1] - timed[n1][1]) * scale
    return {
        "authors_queries_timed": [n1, n2],
        "authors_wall_s_timed": [round(timed[n][0], 3) for n in (n1, n2)],
        "authors_cpu_s_timed": [round(timed[n][1], 3) for n in (n1, n2)],
        "authors_wall_s_extrapolated": round(wall, 1),
        "authors_cpu_s_extrapolated": round(cpu, 1),
    }
