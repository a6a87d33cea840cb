"""``make_scorer``: the one entry point that builds a scorer by kind (imports torch only for real models)."""

from __future__ import annotations

import inspect
from typing import Any

from invarirank.errors import InvariRankError
from invarirank.types import Scorer

__all__ = ["make_scorer", "SCORER_KINDS", "DEFAULT_MODEL", "scoring_versions", "check_scorer_options",
           "FORBIDDEN_OPTIONS"]

#: THE list of scorer kinds (the run schema, the CLI choices and the scorer contract tests read it)
SCORER_KINDS = ("span", "choice", "simulated")
#: the model of a real scorer when none is given
DEFAULT_MODEL = "smollm2-135m"


#: options that never come from a scorer option, config or grid file: only from the command line's explicit flags
FORBIDDEN_OPTIONS = {"trust_remote_code": "--trust-remote-code", "allow_pickle_weights": "--allow-pickle-weights"}


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


#: the options of the real (span, choice) scorers a config may give: name → (check, what is expected)
_REAL_OPTIONS: dict[str, tuple[Any, str]] = {
    "device": (_string, "a device name such as cpu or cuda"),
    "dtype": (_string, "a dtype name such as float32 or bfloat16"),
    "threads": (_positive_int, "an integer >= 1"),
    "attn_implementation": (_string, "a transformers attention implementation name"),
    "allow_download": (lambda v: isinstance(v, bool), "true or false"),
    "pass_cache": (lambda v: isinstance(v, bool) or v == "memory", "true, false or 'memory'"),
    "prefix_reuse": (lambda v: isinstance(v, bool), "true or false"),
    "logits": (lambda v: v in ("needed", "all"), "'needed' or 'all'"),
    "batch_size": (_positive_int, "an integer >= 1"),
    "max_length": (_positive_int, "an integer >= 1 (tokens)"),
    "truncate_history": (lambda v: isinstance(v, bool), "true or false"),
    "naive": (lambda v: isinstance(v, bool), "true or false"),
    "prefix_cache_size": (_positive_int, "an integer >= 1"),
}
_KIND_OPTIONS: dict[str, dict[str, tuple[Any, str]]] = {
    "span": {"special_delimiters": (lambda v: isinstance(v, bool), "true or false")},
    "choice": {"labels": (_string, "a label set name such as upper"),
               "use_chat_template": (lambda v: v is None or isinstance(v, bool), "true or false")},
}


def check_scorer_options(kind: str, options: Any, where: str = "scorer_options") -> None:
    """Check a scorer kind's options (names and types) without loading anything, so a dry run rejects what a real
    run would: unknown names, a non-integer or zero ``batch_size`` / ``max_length``, and the options that only the
    command line may switch on (:data:`FORBIDDEN_OPTIONS`). Raises :class:`InvariRankError` naming ``where``."""
    for key in options:
        if key in FORBIDDEN_OPTIONS:
            raise InvariRankError(f"{where}: option {key!r} cannot be set in scorer options, a config or a grid "
                                  f"file; pass {FORBIDDEN_OPTIONS[key]} on the `invarirank rerank` command line")
    if kind == "simulated":
        try:
            make_scorer("simulated", **dict(options))
        except InvariRankError as exc:
            raise InvariRankError(f"{where}: {exc}") from None
        return
    accepted = {**_REAL_OPTIONS, **_KIND_OPTIONS.get(kind, {})}
    for key, value in options.items():
        if key not in accepted:
            raise InvariRankError(f"{where}: unknown option {key!r} of the {kind} scorer; expected some of "
                                  f"{', '.join(sorted(accepted))}")
        check, expected = accepted[key]
        if not check(value):
            raise InvariRankError(f"{where}: option {key!r} = {value!r}, expected {expected}")


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
