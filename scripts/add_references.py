"""Add the reference rows to finished run folders: no scorer pass, nothing recomputed.

    python scripts/add_references.py results/evidence/smollm2-span-k10 [RUN_DIR ...]

For each run folder: when the run has a first stage (a data set with a retriever, or a candidates file), its test
queries are loaded again from the run's own settings — the prepared data and the first stage come from the cache,
or are rebuilt with the run's seeds (LightGCN on ML-100K: under a minute) — and checked against the run's own
observations: every row's presented order must be the run's seeded order of exactly these candidates, in this
first-stage order, and its ground truth the query's. (The manifest's hash of the test queries is not compared: it
covers the retriever's float scores, which differ in their last bits from one CPU to another, while the ids and
their order, all that reaches a prompt, do not.) The rankings are written as ``first_stage.jsonl.gz``. Then
``metrics.json`` is evaluated again from the run's own observations under the settings it records, now with the
``references`` section (first-stage order where the file exists, random order always). The observations, manifest and
run.json stay as they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def check_reproduces(folder: Path, test: list, config) -> None:
    """Every observation row is reproduced by the loaded queries (:func:`invarirank.runner._provenance.
    rows_reproduce`); exits naming the first row that is not."""
    from invarirank.evaluation import read_observations
    from invarirank.runner._provenance import rows_reproduce
    from invarirank.store import find_observations

    why = rows_reproduce(
        read_observations(find_observations(folder)),
        {q.query_id: q for q in test},
        M=config.M,
        seed=config.seed,
        noise_floor=config.noise_floor,
    )
    if why is not None:
        raise SystemExit(f"{folder}: {why}: the first stage differs here")


def add_references(folder: Path) -> str:
    from invarirank.evaluation._references import FIRST_STAGE_FILE, write_first_stage
    from invarirank.runner import RunConfig, load_queries
    from invarirank.runner._phases import first_stage_rankings
    from invarirank.store import refresh_metrics

    manifest = json.loads((folder / "manifest.json").read_text())
    cfg = {k: v for k, v in manifest["config"].items() if v is not None}
    if cfg.get("dataset") != "synthetic":  # the lab's generated sets have no first stage (nor a file here)
        config = RunConfig.from_mapping(cfg)
        qs = load_queries(config, progress=False)
        rankings = first_stage_rankings(config, qs)  # the rule a finished run writes its file by
        if rankings is not None:
            check_reproduces(folder, qs.test, config)
            write_first_stage(folder / FIRST_STAGE_FILE, rankings)
    refresh_metrics(folder)
    return "first-stage and random order" if (folder / FIRST_STAGE_FILE).is_file() else "random order"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args(argv)
    for folder in args.runs:
        print(f"{folder}: {add_references(folder)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
