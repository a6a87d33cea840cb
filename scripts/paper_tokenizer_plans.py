"""Plans of both scorers on the paper's three tokenizers and the two embedded ones (issue 19's closing table).

    python scripts/paper_tokenizer_plans.py [--queries 10] [--orders 4]

For each tokenizer, scorer and K in {5, 10, 25, 50}: real ML-100K queries (tests/support/ml100k.py; history 20) in
seeded presented orders, each plan built and checked (canonical ids, order-independent prefix, label reads); prints
one markdown row per tokenizer and scorer: plans checked, failures, tokens per prompt (mean, max) and the share of
the prompt in the reused prefix. No forward pass runs (the tokenizers sit on tiny random models).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    from invarirank.errors import InvariRankError
    from invarirank.llm import _paper_models as paper_models
    from invarirank.llm._choice import ChoiceScorer
    from invarirank.llm._span import SpanScorer
    from invarirank.llm._testing import tiny_model
    from invarirank.llm.models import load_model, load_tokenizer
    from tests.support.ml100k import ml100k_queries

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--orders", type=int, default=4)
    args = ap.parse_args(argv)
    models = {n: load_model(str(paper_models.build(n, quiet=True)), device="cpu") for n in paper_models.PAPER_MODELS}
    models["smollm2-135m (tokenizer)"] = tiny_model("llama", load_tokenizer("smollm2-135m"))
    models["gemma3-270m (tokenizer)"] = tiny_model("gemma3", load_tokenizer("gemma3-270m"), init_std=0.02)
    rng = np.random.default_rng(0)
    print("| tokenizer | scorer | plans checked | failures | tokens per prompt (mean / max) | in reused prefix |")
    print("|---|---|---|---|---|---|")
    for name, lm in models.items():
        for cls in (SpanScorer, ChoiceScorer):
            sc = cls(lm, pass_cache=False, **({"labels": "upper+lower"} if cls is ChoiceScorer else {}))
            n, fails, lengths, shares = 0, 0, [], []
            for k in (5, 10, 25, 50):
                for q in ml100k_queries(args.queries, k, 20, seed=100 + k):
                    for _ in range(args.orders):
                        order = [q.candidates[i] for i in rng.permutation(k)]
                        n += 1
                        try:
                            plan = sc.plan(q, order)
                        except InvariRankError as exc:
                            fails += 1
                            print(f"  {name} {cls.kind} {q.query_id}: {exc}", file=sys.stderr)
                            continue
                        lengths.append(plan.full_length)
                        shares.append(len(plan.prefix) / plan.full_length)
            print(
                f"| {name} | {cls.kind} | {n} | {fails} | {np.mean(lengths):.0f} / {max(lengths)} | "
                f"{100 * np.mean(shares):.0f}% |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
