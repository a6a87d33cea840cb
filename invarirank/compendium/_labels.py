"""Display names: of methods (from the method registry), metrics, models and data sets, and of a run's setting.

The one list of metric labels and of which direction is better lives here (:data:`METRICS`); method names and
labels come from :mod:`invarirank.methods.registry`, in the paper's order of presentation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..evaluation._claims import paper_claim
from ..methods.registry import METHOD_LABELS, METHODS
from ..store import Run

#: metric name -> (display label, higher is better); the one list of both
METRICS: dict[str, tuple[str, bool]] = {
    "hr@5": ("HR@5", True),
    "ndcg@5": ("nDCG@5", True),
    "ppi": ("PPI", False),
    "gpi": ("GPI", False),
    "loc": ("LOC", True),
    "exposure_mad@5": ("exposure MAD", False),
    "hr@1": ("HR@1", True),
    "ndcg@10": ("nDCG@10", True),
    "hr@10": ("HR@10", True),
}
METRIC_LABELS: dict[str, str] = {m: label for m, (label, _) in METRICS.items()}
HIGHER_IS_BETTER: dict[str, bool] = {m: higher for m, (_, higher) in METRICS.items()}
#: the metrics a run's table shows
RUN_METRICS = ("hr@5", "ndcg@5", "ppi", "gpi", "loc", "exposure_mad@5")
TABLE1_METRICS = ("hr@5", "ndcg@5", "ppi", "gpi", "loc")
ORDERING_METRICS = ("ppi", "gpi", "loc", "hr@5", "ndcg@5", "exposure_mad@5")
#: The paper's finding on LOC, best first (PPI and GPI: the same methods best first, i.e. lowest values), read from
#: the one home of the paper's claims (:data:`invarirank.evaluation._claims.PAPER_CLAIMS`).
PAPER_LOC_ORDER: tuple[str, ...] = paper_claim("loc_order").methods
#: The scorer the book compares the others against on the same setting (the paper's span log-probabilities).
REFERENCE_SCORER = "span"

_MODEL_LABELS = {
    "smollm2-135m": "SmolLM2-135M",
    "gemma3-270m": "Gemma-3-270M",
    "qwen2.5-coder-0.5b": "Qwen2.5-Coder-0.5B",
    "simulated": "simulated",
    "llama-3.2-3b-instruct": "Llama-3B",
    "mistral-7b-instruct-v0.3": "Mistral-7B",
    "qwen2.5-7b-instruct": "Qwen-7B",
}
_DATASET_LABELS = {
    "ml-100k": "MovieLens-100K",
    "ml-1m": "MovieLens-1M",
    "ml-32m": "MovieLens-32M",
    "movielens-32m": "MovieLens-32M",
    "amazon-books": "Amazon Books",
}


def method_label(method: str) -> str:
    """Display name of a method (``stella`` → ``STELLA_LW``; an unregistered name is shown as it is)."""
    return METHOD_LABELS.get(method, method)


def metric_label(metric: str) -> str:
    """Display name of a metric (``ndcg@5`` → ``nDCG@5``; an unknown name is shown as it is)."""
    return METRIC_LABELS.get(metric, metric)


def model_label(model: str) -> str:
    """Short display name of a model id (``meta-llama/Llama-3.2-3B-Instruct`` → ``Llama-3B``)."""
    key = str(model).rstrip("/").split("/")[-1].lower()
    return _MODEL_LABELS.get(key, str(model).split("/")[-1])


def dataset_label(dataset: str) -> str:
    """Display name of a dataset id (``ml-100k`` → ``MovieLens-100K``)."""
    return _DATASET_LABELS.get(str(dataset).lower(), str(dataset))


def paper_dataset(dataset: str) -> str | None:
    """The paper's dataset closest to ours: MovieLens-32M for any MovieLens, Amazon Books for Amazon."""
    d = str(dataset).lower()
    if d.startswith("ml") or "movielens" in d:
        return "movielens-32m"
    if "amazon" in d or "book" in d:
        return "amazon-books"
    return None


def in_paper_order(methods: Iterable[str]) -> list[str]:
    """``methods`` in the paper's order of presentation (unregistered names after them, as given)."""
    methods = list(methods)
    return [m for m in METHODS if m in methods] + [m for m in methods if m not in METHODS]


def run_setting(run: Run) -> str:
    """``model, dataset, scorer, K, M, queries`` of a run, as one phrase (a simulated run: "the simulated scorer on
    synthetic candidate sets", not the model and data set names it records)."""
    if run.scorer == "simulated":
        what = f"the {simulated_setting(run)}"
    else:
        what = f"{model_label(run.model)} on {dataset_label(run.dataset)}, {run.scorer} scorer"
    return f"{what}, K = {run.K}, M = {run.M}, {run.n_queries} queries"


def simulated_setting(run: Run) -> str:
    """``simulated scorer on synthetic candidate sets`` (or on the data set named): how a simulated run is
    described, in place of the model and data set names it records."""
    data = "synthetic candidate sets" if run.dataset == "synthetic" else dataset_label(run.dataset)
    return f"simulated scorer on {data}"


def decimal(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` decimals with a true minus sign (U+2212); a value that rounds to zero is ``0.000``, not
    ``−0.000`` (e.g. a random order's expected LOC, zero up to the draws' noise)."""
    text = f"{x:.{digits}f}"
    if float(text) == 0:
        text = f"{0:.{digits}f}"
    return text.replace("-", "−")


def signed(x: float, digits: int = 3) -> str:
    """``+0.034`` / ``−0.043``: three decimals (or ``digits``), always a sign, a true minus sign (U+2212); a
    difference that rounds to zero is ``+0.000``, never ``−0.000`` (:func:`decimal` with a plus sign in front of
    what is not negative)."""
    text = decimal(x, digits)
    return text if text.startswith("−") else f"+{text}"


def p_value(p: float) -> str:
    """A p-value as every page writes it: three decimals (``0.034``, ``1.000``), or ``< 0.001`` below that (the
    sign-flip test's floor with 10,000 random sign vectors is about 1e-4, so more digits would suggest a precision
    the test does not have)."""
    return f"{p:.3f}" if p >= 1e-3 else "< 0.001"


#: a non-breaking space (U+00A0): "Holm p < 0.001" must not wrap after "<" or "p" in a narrow column
NBSP = "\u00a0"


def p_equals(p: float, name: str = "p") -> str:
    """``p = 0.034`` / ``p < 0.001`` (``name`` e.g. ``"Holm p"``): :func:`p_value` in a sentence, its spaces
    non-breaking (:data:`NBSP`) so that a line never breaks inside it."""
    text = p_value(p)
    out = f"{name} {text}" if text.startswith("<") else f"{name} = {text}"
    return out.replace(" ", NBSP)


def setting_caption(runs: Sequence[Run]) -> str:
    """What a table shows: model(s), dataset(s), scorer(s), K, M and queries, in one line (numbers ascending)."""

    def join(values: Iterable[Any]) -> str:
        unique = list(dict.fromkeys(values))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in unique):
            unique.sort()
        return ", ".join(str(v) for v in unique)

    return (
        f"model {join(model_label(r.model) for r in runs)}; "
        f"dataset {join(dataset_label(r.dataset) for r in runs)}; "
        f"{join(r.scorer for r in runs)} scorer; K = {join(r.K for r in runs)}; M = {join(r.M for r in runs)}; "
        f"queries = {join(r.n_queries for r in runs)}"
    )


def html_escape(text: str) -> str:
    """HTML-escape a computed sentence before it is glued as HTML."""
    import html

    return html.escape(str(text))


def key(text: str) -> str:
    """A glue-key friendly form of a name (``ml-100k`` → ``ml_100k``)."""
    return "".join(c if c.isalnum() else "_" for c in str(text).lower())
