"""The audit chapter's tables: an audit run folder (``invarirank audit --out``) beside a project run, on the same users.

Stability: internal (the chapter "Auditing your own reranker", ``notebooks/audit.py``).

Everything here reads committed files and computes only measures: the rows of both folders are restricted to the
users the audit asked (its manifest's ``queries.ids``, a prefix of the project run's users in run order), and both
are evaluated the same way — :func:`invarirank.evaluate` with the audit's settings (cut-offs 1, 5, 10; exposure top
5; 1,000 bootstrap replicates seeded by the audit's seed) and :func:`invarirank.evaluation.sister_measures` — so a
difference in a column is a difference between the rerankers, not between two evaluations. The presented orders are
paired: the audit's ``random`` design with the project run's seed draws the same M orders per user (checked,
:func:`paired_orders`). Conventions: PPI and GPI lower = more position-invariant, LOC and the sister agreement
measures higher = more consistent (1 = the same ranking for every order); exposure@5 is the share of the top 5 that
each presented position wins (0-based position on the x axis of the book's figures), ``exposure_maxdev@5`` its largest
distance from a position-blind reranker's share.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._io import read_json
from ..errors import InvariRankError
from ..evaluation import evaluate, read_observations, sister_measures
from ..store import find_observations
from ._labels import method_label, metric_label, model_label

#: the paper's measures and the effectiveness beside them, in the table's column order
PAPER_MEASURES = ("hr@1", "hr@5", "ndcg@5", "ppi", "gpi", "loc", "exposure_maxdev@5")
_EXTRA_LABELS = {"exposure_maxdev@5": "exposure max. dev. @5", "ndcg@5": "nDCG@5"}
_SISTER_LABELS = {
    "spearman": "Spearman ρ (pairs of orders)",
    "jaccard@5": "top-5 Jaccard",
    "first_place": "first-place agreement",
    "relevant_rank_mean": "relevant item's rank (mean, 1-based)",
    "relevant_rank_sd": "relevant item's rank (sd over orders)",
    "flip_rate": "pairs ever flipped",
    "intransitive_triads": "intransitive triads",
}
_PARSE = ("rows", "unparsable", "truncated", "reasoning", "repaired_rows", "missing", "duplicate", "unknown")


class AuditComparison:
    """An audit folder and a project run folder, read once and restricted to the audit's users (module docstring).

    ``rows``: method → its observation rows (the audit's rerankers first, then the run's methods in the order of its
    ``metrics.json``); ``labels``: method → display name; ``query_ids``: the audit's users in run order."""

    def __init__(self, audit: str | os.PathLike, run: str | os.PathLike):
        self.audit_path, self.run_path = Path(audit), Path(run)
        self.manifest = read_json(self.audit_path / "manifest.json")
        if not isinstance(self.manifest, dict) or self.manifest.get("kind") != "audit":
            raise InvariRankError(f"{self.audit_path}: not an audit run folder (its manifest.json has no kind 'audit')")
        self.run_manifest = read_json(self.run_path / "manifest.json")
        self.query_ids: list[str] = list(self.manifest["queries"]["ids"])
        self.seed = int(self.manifest["seed"])
        wanted = set(self.query_ids)
        audit_rows = list(read_observations(_observations(self.audit_path)))
        run_rows = list(read_observations(_observations(self.run_path)))
        run_users = list(dict.fromkeys(r["query_id"] for r in run_rows))
        if run_users[: len(self.query_ids)] != self.query_ids:
            raise InvariRankError(
                f"{self.audit_path}: its users {self.query_ids[:3]}... are not the first {len(self.query_ids)} "
                f"users of {self.run_path} in run order"
            )
        self.rows: dict[str, list[dict[str, Any]]] = {}
        for r in audit_rows:
            self.rows.setdefault(r["method"], []).append(r)
        for r in run_rows:
            if r["query_id"] in wanted:
                self.rows.setdefault(r["method"], []).append(r)
        model = model_label(str((self.run_manifest.get("grid_run") or {}).get("model", "")))
        scorer = (self.run_manifest.get("grid_run") or {}).get("scorer", "")
        ours = {m: f"{method_label(m)} ({model}, {scorer} log-probs)" for m in {r["method"] for r in run_rows}}
        served = {r["name"]: _served_label(r) for r in self.manifest["rerankers"]}
        self.labels = {m: served.get(m) or ours.get(m, m) for m in self.rows}
        self._metrics: dict[str, Any] | None = None
        self._sister: dict[str, Any] | None = None

    @property
    def audit_methods(self) -> list[str]:
        return [r["name"] for r in self.manifest["rerankers"]]

    def metrics(self) -> dict[str, Any]:
        """:func:`invarirank.evaluate` of every method's rows on the audit's users, with the audit's settings."""
        if self._metrics is None:
            every = [r for rows in self.rows.values() for r in rows]
            self._metrics = evaluate(every, ks=(1, 5, 10), exposure_k=5, n_bootstrap=1000, seed=self.seed)
        return self._metrics

    def sister(self) -> dict[str, Any]:
        """The sister measures (top-5) of every method's rows on the audit's users."""
        if self._sister is None:
            self._sister = sister_measures([r for rows in self.rows.values() for r in rows], k=5)
        return self._sister


def _observations(folder: Path) -> Path:
    found = find_observations(folder)
    if found is None:
        raise InvariRankError(f"{folder}: no observations file")
    return found


def _served_label(identity: Mapping[str, Any]) -> str:
    """A served reranker's display name (model, and how its ranking is read); any other reranker's name."""
    how = {"served-generate": "generated ranking", "served-logprobs": "label log-probs"}.get(
        identity.get("adapter", "")
    )
    if how is None:
        return str(identity.get("name", "?"))
    return f"{model_label(str(identity.get('model', '')))}, {how} (served)"


#: the chapter's committed audit and the project run beside it, relative to a checkout
COMMITTED_AUDIT = Path("results", "audits", "paper-cpu-k15-generate")
COMMITTED_RUN = Path("results", "paper-cpu", "smollm2-span-k15")


def committed_folders(
    audit: str | os.PathLike | None = None, run: str | os.PathLike | None = None
) -> tuple[Path, Path]:
    """The chapter's two folders: ``audit`` and ``run`` where given, else :data:`COMMITTED_AUDIT` and
    :data:`COMMITTED_RUN` in the checkout whose results hold them: the book being built (the working directory's
    checkout) or, when that is a copy without them (the tests' smoke build copies the book's sources only), the
    checkout this package is imported from."""
    from ..store import checkout_root

    if audit is not None and run is not None:
        return Path(audit), Path(run)
    for start in (None, Path(__file__).resolve().parent):
        root = checkout_root(start)
        if root is not None and (root / (run or COMMITTED_RUN) / "manifest.json").is_file():
            if audit is None and not (root / COMMITTED_AUDIT / "manifest.json").is_file():
                continue
            return Path(audit or root / COMMITTED_AUDIT), Path(run or root / COMMITTED_RUN)
    raise InvariRankError(
        f"no committed audit ({COMMITTED_AUDIT}) and run ({COMMITTED_RUN}) in this checkout or the package's"
    )


def compare_with_run(audit: str | os.PathLike, run: str | os.PathLike) -> AuditComparison:
    """Read an audit folder beside a project run folder (:class:`AuditComparison`)."""
    return AuditComparison(audit, run)


def paired_orders(cmp: AuditComparison) -> int:
    """The number of (user, order) pairs whose presented order is the same in the audit and in every project
    method; raises when one differs (then the two are not paired and the chapter's comparison would not hold)."""
    presented: dict[tuple[str, int], list[str]] = {}
    for r in (r for m in cmp.audit_methods for r in cmp.rows[m]):
        presented[(r["query_id"], int(r["permutation"]))] = list(r["input"])
    for method, rows in cmp.rows.items():
        for r in rows:
            key = (r["query_id"], int(r["permutation"]))
            if presented.get(key) != list(r["input"]):
                raise InvariRankError(f"user {key[0]}, order t={key[1]}: {method} saw another presented order")
    return len(presented)


def measures_table(cmp: AuditComparison, digits: int = 3) -> pd.DataFrame:
    """One row per method: queries, the effectiveness and the paper's measures (:data:`PAPER_MEASURES`), PPI with
    its bootstrap 95 % interval over the users."""
    out = []
    for method, block in cmp.metrics()["methods"].items():
        o = block["overall"]
        row: dict[str, Any] = {"reranker": cmp.labels[method], "users": o["queries"]}
        for name in PAPER_MEASURES:
            row[_EXTRA_LABELS.get(name, metric_label(name))] = _round(o.get(name), digits)
        lo, hi = (o.get("ci") or {}).get("ppi") or (None, None)
        row["PPI 95 % CI"] = f"[{lo:.{digits}f}, {hi:.{digits}f}]" if lo is not None else "–"
        out.append(row)
    return pd.DataFrame(out).set_index("reranker")


def sister_table(cmp: AuditComparison, digits: int = 3) -> pd.DataFrame:
    """One row per method: the sister measures (top-5), means over the users where each is defined."""
    out = []
    for method, block in cmp.sister()["methods"].items():
        o = block["overall"]
        row: dict[str, Any] = {"reranker": cmp.labels[method]}
        row.update({label: _round(o.get(name), digits) for name, label in _SISTER_LABELS.items()})
        out.append(row)
    return pd.DataFrame(out).set_index("reranker")


def parse_table(cmp: AuditComparison) -> pd.DataFrame:
    """The served rerankers' parse-quality counts (the audit manifest's ``repairs``): answers, unparsable ones, those
    cut at ``max_tokens``, reasoning blocks removed, rankings the order rule changed and the ids it appended
    (missing), dropped as duplicates or dropped as unknown. Every project method's rows have zero repairs by
    construction (a ranking by scores is always complete), so they are not listed. One row per count, one column
    per served reranker (nine counts side by side would be wider than a book page)."""
    out = {}
    for method in cmp.audit_methods:
        counts = cmp.manifest["repairs"][method]
        out[cmp.labels[method]] = {k: int(counts.get(k, 0)) for k in _PARSE}
    table = pd.DataFrame(out, index=list(_PARSE))
    table.index.name = "count"
    return table


def exposure_table(cmp: AuditComparison, digits: int = 2) -> pd.DataFrame:
    """Exposure@5 by presented position (columns 1..K, 1-based for reading), one row per method."""
    rows = {}
    for method, block in cmp.metrics()["methods"].items():
        curve = block["overall"].get("exposure@5") or []
        rows[cmp.labels[method]] = {p + 1: round(float(v), digits) for p, v in enumerate(curve)}
    return pd.DataFrame.from_dict(rows, orient="index")


def _round(value: Any, digits: int) -> Any:
    return None if value is None else round(float(value), digits)


def audit_facts(cmp: AuditComparison) -> dict[str, Any]:
    """Numbers the chapter's prose glues: users, M, K, rows, wall seconds of the audit (its run.json), the served
    model, and each served reranker's unparsable share."""
    volatile = read_json(cmp.audit_path / "run.json") if (cmp.audit_path / "run.json").is_file() else {}
    audit_rows = [r for m in cmp.audit_methods for r in cmp.rows[m]]
    per_user = {q: sum(1 for r in audit_rows if r["query_id"] == q) for q in cmp.query_ids}
    identity = cmp.manifest["rerankers"][0]
    counts = cmp.manifest["repairs"][identity["name"]]
    return {
        "users": len(cmp.query_ids),
        "run_users": int((cmp.run_manifest.get("queries") or {}).get("count") or 0),
        "M": int(cmp.manifest["design"].get("M") or max(per_user.values())),
        "K": len(audit_rows[0]["input"]),
        "rows": len(audit_rows),
        "seconds": ((volatile.get("timings") or {}).get("audit_seconds")),
        "model": model_label(str(identity.get("model", ""))),
        "unparsable_share": counts.get("unparsable", 0) / counts["rows"],
        "max_tokens": (identity.get("sampling") or {}).get("max_tokens"),
        "as_presented": sum(1 for r in audit_rows if list(r["output"]) == list(r["input"])),
    }


def basis_sentences(cmp: AuditComparison) -> str:
    """What the audit's verdicts rest on, in words (Markdown), from the counts: how many answers were read as
    rankings, what the order rule made of the others (an unparsable answer contributes no id, so its row is the
    presented order itself), how many users the intervals rest on, and whether a paired test could resolve
    anything at that number of users (the sign-flip test's smallest p is 2 / 2^users)."""
    f = audit_facts(cmp)
    identity = cmp.manifest["rerankers"][0]
    c = cmp.manifest["repairs"][identity["name"]]
    rows, bad = int(c["rows"]), int(c.get("unparsable", 0))
    read = rows - bad
    users = f"{f['users']} user" + ("s" if f["users"] != 1 else "")
    parts = [
        f"The served reranker answered {rows} requests ({users} × M = {f['M']} orders, K = {f['K']}); "
        f"{read} of them ({read / rows:.0%}) were read as rankings under the strict rule, {bad} were not "
        f"({int(c.get('truncated', 0))} of all answers stopped at max_tokens)."
    ]
    if bad:
        parts.append(
            "An unparsable answer contributes no id, so the order rule appends every candidate in presented order: "
            "its row *is* the presented order, the most position-bound ranking there is. The audit's PPI, GPI, "
            "LOC and exposure therefore measure the model's answers and its failures to answer together, which is "
            "what a user of this reranker would get: the parse-quality table says how much of each."
        )
    parts.append(
        f"{f['as_presented']} of the {rows} rows rank the candidates exactly as they were presented"
        + (" (every unparsable answer among them)." if bad else ".")
    )
    if int(c.get("unknown", 0)) or int(c.get("missing", 0)):
        parts.append(
            f"Over all rows the rule dropped {int(c['unknown'])} unknown labels and appended {int(c['missing'])} "
            f"missing candidates in presented order (all K of them for an unparsable answer); it changed "
            f"{int(c['repaired_rows'])} of the {rows} rows."
        )
    smallest = 2.0 / 2 ** f["users"]
    parts.append(
        f"The intervals are bootstrap intervals over {users}, and the comparison with the project's "
        f"rerankers is paired (the same {f['M']} presented orders per user); with {users} a paired "
        f"sign-flip test cannot go below p = {smallest:.3g}, so "
        + (
            "no difference here is a resolved one: read them as observed, not established."
            if smallest >= 0.05
            else "a difference is resolved only where the results chapter's rule (Holm-adjusted p < 0.05) says so."
        )
    )
    return " ".join(parts)
