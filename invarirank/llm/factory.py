"""``make_scorer``: the one entry point that builds a scorer by kind (imports torch only for real models)."""

from __future__ import annotations

from typing import Any

from invarirank.errors import InvariRankError
from invarirank.types import Scorer

from ._options import CHOICE_OPTIONS, SIMULATED_OPTIONS, SPAN_OPTIONS, Option, check_config_options

__all__ = ["make_scorer"]

#: THE registry of scorer kinds, each with its options (declared once, :mod:`invarirank.llm._options`)
SCORER_OPTIONS: dict[str, dict[str, Option]] = {
    "span": SPAN_OPTIONS,
    "choice": CHOICE_OPTIONS,
    "simulated": SIMULATED_OPTIONS,
}
#: THE list of scorer kinds (the run schema, the CLI choices and the scorer contract tests read it)
SCORER_KINDS = tuple(SCORER_OPTIONS)
#: the model of a real scorer when none is given
DEFAULT_MODEL = "smollm2-135m"


def _real_scorer_class(kind: str) -> Any:
    """The class of a real scorer kind (imports no torch)."""
    if kind == "span":
        from ._span import SpanScorer as cls
    elif kind == "choice":
        from ._choice import ChoiceScorer as cls  # type: ignore[assignment]
    else:
        raise InvariRankError(f"scorer kind {kind!r}: expected one of {', '.join(SCORER_KINDS)}")
    return cls


def check_scorer_options(kind: str, options: Any, where: str = "scorer_options") -> None:
    """Check a scorer kind's options (names and values) without loading anything (no torch), so a dry run rejects
    what a real run would: the one declaration of :mod:`invarirank.llm._options` (unknown names, a non-integer or
    zero ``batch_size`` / ``max_length`` / ``max_batch_tokens``, bad simulated values, and the options only the
    command line may switch on, :data:`FORBIDDEN_OPTIONS`). Raises :class:`InvariRankError` naming ``where``."""
    if kind not in SCORER_OPTIONS:
        raise InvariRankError(f"{where}: scorer kind {kind!r}: expected one of {', '.join(SCORER_KINDS)}")
    check_config_options(SCORER_OPTIONS[kind], options, where, f"{kind} scorer")


def scoring_versions(kind: str) -> dict[str, Any]:
    """The version numbers that fix how a scorer of ``kind`` turns a prompt into scores, under the keys its
    ``identity()`` writes into a run's manifest (``model`` section): ``scorer_version`` and ``template_version``
    for the real scorers, ``version`` for the simulated one. A change of any of them changes results, so a finished
    run made under other versions is computed again (:func:`invarirank.runner.status_of`). Imports no torch."""
    if kind == "simulated":
        from ._simulated import VERSION

        return {"version": VERSION}
    cls = _real_scorer_class(kind)
    from ._prompts import TEMPLATE_VERSION

    return {"scorer_version": cls.VERSION, "template_version": TEMPLATE_VERSION}


def make_scorer(
    kind: str = "span", model: Any = None, *, seed: int = 0, cache_dir: Any = None, **options: Any
) -> Scorer:
    """Build a scorer.

    * ``"span"`` (default) and ``"choice"``: :class:`invarirank.llm._span.SpanScorer` /
      :class:`invarirank.llm._choice.ChoiceScorer` on ``model`` (registry name, default ``"smollm2-135m"``;
      local folder; Hugging Face id; or an already loaded :class:`invarirank.llm.models.LoadedModel`), with the
      persistent pass cache in ``cache_dir`` (default ``cache_dir()/passes``). ``options`` are the scorer options
      (``device``, ``dtype``, ``max_length``, ``truncate_history``, ``pass_cache``, ``prefix_reuse``,
      ``batch_size``, ``max_batch_tokens``, ``special_delimiters`` (span), ``labels`` (choice), ...: the tables
      of :mod:`invarirank.llm._options`).
    * ``"simulated"``: ``invarirank.llm._simulated.SimulatedScorer(**options, seed=seed)`` (no torch; ``model``
      is passed on as its display name when given; ``cache_dir`` is ignored).

    Unknown kinds, models and options raise :class:`~invarirank.errors.InvariRankError`.

    Stability: full (a scorer by kind: ``span``, ``choice``, ``simulated``).
    """
    if kind == "simulated":
        from ._simulated import SimulatedScorer

        if model is not None and "model" not in options:
            options["model"] = model
        return SimulatedScorer(**options, seed=seed)
    cls = _real_scorer_class(kind)
    try:
        return cls(model if model is not None else DEFAULT_MODEL, seed=seed, cache_dir=cache_dir, **options)
    except TypeError as exc:
        raise InvariRankError(f"{kind} scorer: bad option ({exc})") from None
