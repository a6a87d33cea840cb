"""``make_scorer``: the one entry point that builds a scorer by kind (imports torch only for real models)."""

from __future__ import annotations

import inspect
from typing import Any

from invarirank.errors import InvariRankError
from invarirank.types import Scorer

__all__ = ["make_scorer", "SCORER_KINDS", "DEFAULT_MODEL", "scoring_versions"]

#: THE list of scorer kinds (the run schema, the CLI choices and the scorer contract tests read it)
SCORER_KINDS = ("span", "choice", "simulated")
#: the model of a real scorer when none is given
DEFAULT_MODEL = "smollm2-135m"


def scoring_versions(kind: str) -> dict[str, Any]:
    """The version numbers that fix how a scorer of ``kind`` turns a prompt into scores, under the keys its
    ``identity()`` writes into a run's manifest (``model`` section): ``scorer_version`` and ``template_version``
    for the real scorers, ``version`` for the simulated one. A change of any of them changes results, so a finished
    run made under other versions is computed again (:func:`invarirank.runner.status_of`). Imports no torch."""
    if kind == "simulated":
        from .simulated import VERSION

        return {"version": VERSION}
    if kind == "span":
        from .span import SpanScorer as cls
    elif kind == "choice":
        from .choice import ChoiceScorer as cls  # type: ignore[assignment]
    else:
        raise InvariRankError(f"scorer kind {kind!r}: expected one of {', '.join(SCORER_KINDS)}")
    from .prompts import TEMPLATE_VERSION

    return {"scorer_version": cls.VERSION, "template_version": TEMPLATE_VERSION}


def make_scorer(kind: str = "span", model: Any = None, *, seed: int = 0, cache_dir: Any = None,
                **options: Any) -> Scorer:
    """Build a scorer.

    * ``"span"`` (default) and ``"choice"``: :class:`invarirank.llm.span.SpanScorer` /
      :class:`invarirank.llm.choice.ChoiceScorer` on ``model`` (registry name, default ``"smollm2-135m"``;
      local folder; Hugging Face id; or a :class:`invarirank.llm.models.LoadedModel`), with the persistent pass
      cache in ``cache_dir`` (default ``cache_dir()/passes``). ``options`` are the scorer options
      (``device``, ``dtype``, ``max_length``, ``truncate_history``, ``pass_cache``, ``prefix_reuse``,
      ``batch_size``, ``special_delimiters`` (span), ``labels`` (choice), ...; see
      :class:`invarirank.llm.engine.CausalLMScorer`).
    * ``"simulated"``: ``invarirank.llm.simulated.SimulatedScorer(**options, seed=seed)`` (no torch; ``model``
      is passed on as its display name when given; ``cache_dir`` is ignored).

    Unknown kinds, models and options raise :class:`~invarirank.errors.InvariRankError`.
    """
    if kind == "simulated":
        from .simulated import SimulatedScorer

        if model is not None and "model" not in options:
            options["model"] = model
        accepted = set(inspect.signature(SimulatedScorer.__init__).parameters) - {"self"}
        unknown = sorted(set(options) - accepted)
        if unknown:
            raise InvariRankError(f"simulated scorer: unknown option(s) {', '.join(unknown)}; expected "
                                  f"{', '.join(sorted(accepted - {'seed'}))}")
        return SimulatedScorer(**options, seed=seed)
    if kind == "span":
        from .span import SpanScorer as cls
    elif kind == "choice":
        from .choice import ChoiceScorer as cls  # type: ignore[assignment]
    else:
        raise InvariRankError(f"scorer kind {kind!r}: expected one of {', '.join(SCORER_KINDS)}")
    try:
        return cls(model if model is not None else DEFAULT_MODEL, seed=seed, cache_dir=cache_dir, **options)
    except TypeError as exc:
        raise InvariRankError(f"{kind} scorer: bad option ({exc})") from None
