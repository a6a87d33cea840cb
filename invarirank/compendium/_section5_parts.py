"""The pieces of a row of the paper's §5 claims (:mod:`invarirank.compendium._section5`) that name no method: the
headline's categories, a claimed pair and its records for the one judge, a judged pair and a verdict in words, a
claim's category, and one row made of every model's own judgement of a claim.

A claim is judged on each model's own runs (its run at the main K and its own K sweep): a model's judgement is a
dict of ``tested`` (the claim as tested, ``–`` when it is not), ``verdict``, ``evidence`` (pieces separated by
:data:`SEP`), ``category`` (:data:`CATEGORIES` or :data:`NOT_TESTABLE`), ``note`` (what the headline adds after the
claim's short name) and ``claims`` ([(run name, claim name, verdict)], the data attributes of the table).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..evaluation._claims import judge_pairs
from ..evaluation._comparisons import comparison
from ..store import Run
from ._labels import HIGHER_IS_BETTER, method_label, model_label, p_equals, signed
from ._verdicts import MARKS, pair_state, run_claims

#: the one ordering notation of the book: "A ≻ B" = A is better than B on the metric named
BETTER = " ≻ "

NOT_TESTABLE = "not testable here"
#: the headline's categories of a testable claim, in the order it names them
CATEGORIES = ("reproduced", "reproduced by construction", "tested in part", "unresolved", "contradicted")
#: between the pieces of evidence of one claim (one pair per line in the table)
SEP = "; "


class Pair(NamedTuple):
    """One claimed pair: on ``metric`` (of ``run``), ``better`` should beat ``worse``."""

    run: Run
    metric: str
    better: str
    worse: str


def pair_records(pairs: Sequence[Pair]) -> list[dict] | None:
    """The records of claimed ``pairs`` (possibly over several metrics and runs) for the one judge,
    :func:`invarirank.evaluation._claims.judge_pairs`, each keeping its :class:`Pair` under ``"pair"``; ``None``
    when some pair was not compared in its run."""
    records = []
    for pair in pairs:
        rec = comparison(pair.run.metrics.get("comparisons") or {}, pair.metric, pair.better, pair.worse)
        if rec is None:
            return None
        records.append(
            {
                "pair": pair,
                "better": pair.better,
                "worse": pair.worse,
                "metric": pair.metric,
                "higher_is_better": HIGHER_IS_BETTER.get(pair.metric, True),
                **{key: rec[key] for key in ("mean_diff", "n", "p", "queries_80") if key in rec},
            }
        )
    return records or None


def judge(pairs: Sequence[Pair]) -> dict | None:
    """The one judge's verdict on claimed ``pairs`` (Holm over all of them), ``None`` when one was not compared."""
    records = pair_records(pairs)
    return judge_pairs(records) if records else None


def count_words(n: int, noun: str) -> str:
    """``one model``, ``two models``, ``12 models``: small counts in words, as the sentences around them."""
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    return f"{words.get(n, str(n))} {noun}{'' if n == 1 else 's'}"


def pair_text(p: Mapping[str, Any], where: str = "") -> str:
    """One judged pair: its mark, ``better ≻ worse``, Δ (better − worse) and Holm p; a difference of the wrong sign
    that is not resolved says so in words (its mark alone, ○, would read as merely undecided)."""
    other = ", the other way" if p["direction"] == "reversed" and not p["resolved"] else ""
    return (
        f"{MARKS[pair_state(p)]} {method_label(p['better'])}{BETTER}{method_label(p['worse'])}{where} "
        f"(Δ {signed(p['mean_diff'])}{other}, {p_equals(p['p_holm'], 'Holm p')})"
    )


def category(judged: Sequence[Mapping[str, Any]], in_part: bool = False) -> str:
    """The headline category of a claim judged once per run (the worst of them): contradicted, unresolved, else
    reproduced, or tested in part when only part of the claim could be tested."""
    verdicts = {j["verdict"] for j in judged}
    if "contradicted" in verdicts:
        return "contradicted"
    if "unresolved" in verdicts:
        return "unresolved"
    return "tested in part" if in_part else "reproduced"


def verdict_text(j: Mapping[str, Any]) -> str:
    """A verdict in words: a contradiction says whether it is resolved."""
    if j["verdict"] != "contradicted":
        return j["verdict"]
    if j["resolved_against"]:
        return "contradicted (resolved against the paper)"
    return "contradicted (observed the other way, not resolved)"


def untested(why: str, tested: str = "–") -> dict[str, Any]:
    """A model's judgement of a claim it cannot test, with the reason as its evidence."""
    return {"tested": tested, "verdict": NOT_TESTABLE, "evidence": why, "category": NOT_TESTABLE, "note": "",
            "claims": []}  # fmt: skip


def who(run: Run) -> str:
    """A model's name and its queries, before its verdict and evidence in a row of several models."""
    return f"{model_label(run.model)}, {run.n_queries} queries"


def _tested(models: Sequence[Mapping[str, Any]]) -> str:
    """The claim as tested by several models, said once: the same words, or words that differ only in their list
    lengths (``… at every K = 10, 15, 25 (SmolLM2-135M) and K = 10 (Gemma-3-270M)``), else each model's under its
    name."""
    texts = list(dict.fromkeys(m["tested"] for m in models))
    if len(texts) < 2:
        return texts[0] if texts else ""
    cut = os.path.commonprefix(texts).rfind("K = ")
    if cut > 0 and all(t.rfind("K = ") == cut for t in texts):
        return texts[0][:cut] + " and ".join(f"{m['tested'][cut:]} ({m['label']})" for m in models)
    return SEP.join(f"{m['label']}: {m['tested']}" for m in models)


def one_row(judged: Sequence[tuple[Run, Mapping[str, Any]]], shared: bool = False) -> dict[str, Any]:
    """The row fields of one claim from each model's own judgement (``judged``: (the model's run at the main K, its
    judgement), the main run's model first). With one model they are its judgement; with several, the verdict and
    the evidence name each model, the claim as tested is said once (per model when it differs), ``category`` and
    ``note`` are the main model's, and ``models`` keeps every model's judgement (with its ``run``, ``model`` and
    ``label``) for the table and the headline. ``shared``: one judgement for every model (a claim no model can
    test, for one reason), said once."""
    models = [{**j, "run": run, "model": run.model, "label": model_label(run.model)} for run, j in judged]
    first = models[0]
    fields = {key: first[key] for key in ("tested", "verdict", "evidence", "category", "note")}
    fields["claims"] = [c for m in models for c in m["claims"]]
    fields["models"] = models
    if len(models) == 1 or shared:
        return fields
    fields["tested"] = _tested([m for m in models if m["tested"] != "–"]) or "–"
    fields["verdict"] = SEP.join(f"{m['label']}: {m['verdict']}" for m in models)
    fields["evidence"] = SEP.join(f"{who(m['run'])}: {m['evidence']}" for m in models)
    return fields


def model_runs(main: Run, table_runs: Sequence[Run]) -> list[Run]:
    """The runs each model is judged on at the main K: ``main`` first, then for every other model of
    ``table_runs`` its run at ``main.K`` that judges some claim (most methods, then most queries)."""
    out = {main.model: main}
    for r in sorted(table_runs, key=lambda r: (-len(r.methods), -r.n_queries, r.name)):
        if r.K == main.K and r.model not in out and run_claims(r):
            out[r.model] = r
    return list(out.values())
