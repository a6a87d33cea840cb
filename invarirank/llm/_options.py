"""Scorer options, declared once per scorer kind: the table the scorer's constructor reads (names, defaults,
checks) is the table a run config, ``--scorer-option`` and a grid file are checked against (imports no torch).

An :class:`Option` states what a value must be (``check`` and ``expected``, for the error line), its ``default``
(``None``: the scorer works it out, e.g. ``batch_size`` 8 on CUDA and 1 on the CPU), whether it may come from a
config (``config``: False for Python objects such as a template), whether it is passed on to
:func:`invarirank.llm.models.load_model` (``load``) and one valid ``example`` value other than the default (the
tests pass every example through ``RunConfig``, the command line and a grid file).

Tables: :data:`CAUSAL_LM_OPTIONS` (every real scorer), :data:`SPAN_OPTIONS`, :data:`CHOICE_OPTIONS`,
:data:`SIMULATED_OPTIONS`; :data:`invarirank.llm.factory.SCORER_OPTIONS` maps each registered scorer kind to its
table (that mapping is the list of scorer kinds).
:func:`resolve_options` is what a constructor calls (unknown names are an error, ``None`` means the default,
checked values), :func:`check_config_options` what a config check calls (JSON values only).

``trust_remote_code`` and ``allow_pickle_weights`` are no options: only the command line's explicit flags switch
them on (:data:`FORBIDDEN_OPTIONS`, :func:`invarirank.llm.models.allow`). ``seed`` and ``cache_dir`` are
:func:`~invarirank.llm.factory.make_scorer`'s own arguments, not options.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from invarirank.errors import InvariRankError

#: options that never come from a scorer option, config or grid file: only from the command line's explicit flags
FORBIDDEN_OPTIONS = {"trust_remote_code": "--trust-remote-code", "allow_pickle_weights": "--allow-pickle-weights"}


@dataclass(frozen=True)
class Option:
    """One scorer option (see the module docstring)."""

    check: Callable[[Any], bool]
    expected: str
    default: Any = None
    example: Any = None
    config: bool = True
    load: bool = False


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _string(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _finite(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value))


def _nonnegative(value: Any) -> bool:
    return _finite(value) and value >= 0


def _anything(value: Any) -> bool:
    return True


#: the options every real (model-backed) scorer takes (:class:`invarirank.llm._engine.CausalLMScorer`)
CAUSAL_LM_OPTIONS: dict[str, Option] = {
    "device": Option(_string, "a device name such as cpu or cuda", "auto", "cpu", load=True),
    "dtype": Option(_string, "a dtype name such as float32 or bfloat16", None, "float32", load=True),
    "threads": Option(_positive_int, "an integer >= 1", None, 1, load=True),
    "attn_implementation": Option(_string, "a transformers attention implementation name", None, "eager", load=True),
    "allow_download": Option(_flag, "true or false", True, False, load=True),
    "pass_cache": Option(lambda v: isinstance(v, bool) or v == "memory", "true, false or 'memory'", True, "memory"),
    "prefix_reuse": Option(_flag, "true or false", True, False),
    "logits": Option(lambda v: v in ("needed", "all"), "'needed' or 'all'", "needed", "all"),
    "batch_size": Option(_positive_int, "an integer >= 1", None, 4),
    "max_batch_tokens": Option(_positive_int, "an integer >= 1 (computed positions per batch)", None, 32768),
    "max_length": Option(_positive_int, "an integer >= 1 (tokens)", None, 2048),
    "truncate_history": Option(_flag, "true or false", False, True),
    "naive": Option(_flag, "true or false", False, True),
    "prefix_cache_size": Option(_positive_int, "an integer >= 1", 2, 3),
    # who computes the missing passes: transformers in this process, or vLLM (invarirank.llm._vllm_backend)
    "backend": Option(lambda v: v in ("hf", "vllm"), "'hf' or 'vllm'", "hf", "vllm"),
}

#: the span scorer's (:class:`invarirank.llm._span.SpanScorer`)
SPAN_OPTIONS: dict[str, Option] = {
    **CAUSAL_LM_OPTIONS,
    "special_delimiters": Option(_flag, "true or false", False, True),
    "template": Option(_anything, "a SpanTemplate", None, config=False),
}

#: the choice scorer's (:class:`invarirank.llm._choice.ChoiceScorer`)
CHOICE_OPTIONS: dict[str, Option] = {
    **CAUSAL_LM_OPTIONS,
    "labels": Option(_string, "a label set name such as upper", "upper", "upper+lower"),
    "use_chat_template": Option(lambda v: v is None or isinstance(v, bool), "true or false", None, False),
    "template": Option(_anything, "a ChoiceTemplate", None, config=False),
}

#: the simulated scorer's (:class:`invarirank.llm._simulated.SimulatedScorer`; ``model`` is its display name, which a
#: config gives as its ``model`` setting, not as an option)
SIMULATED_OPTIONS: dict[str, Option] = {
    "bias_shape": Option(
        lambda v: v in ("primacy", "recency", "u", "none"), "one of primacy, recency, u, none", "primacy", "recency"
    ),
    "bias_strength": Option(_finite, "a finite number", 1.0, 0.5),
    "noise_sd": Option(_nonnegative, "a finite number >= 0", 0.3, 0.1),
    "relevance": Option(_finite, "a finite number", 1.0, 2.0),
    "utility_sd": Option(_nonnegative, "a finite number >= 0", 1.0, 0.5),
    "model": Option(_string, "a display name", None, config=False),
}

_JSON_SCALARS = (str, int, float, bool)


def _unknown(table: Mapping[str, Option], names: Any, where: str, what: str | None, *, config: bool) -> None:
    for name in names:
        if name in FORBIDDEN_OPTIONS:
            raise InvariRankError(
                f"{where}: option {name!r} cannot be set in scorer options, a config or a grid "
                f"file; pass {FORBIDDEN_OPTIONS[name]} on the `invarirank rerank` command line"
            )
        if name not in table or (config and not table[name].config):
            accepted = sorted(n for n, o in table.items() if o.config or not config)
            of = f" of the {what}" if what else ""
            raise InvariRankError(f"{where}: unknown option {name!r}{of}; expected some of {', '.join(accepted)}")


def resolve_options(table: Mapping[str, Option], given: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Every option of ``table`` with its value: the given one, or the default where none (or ``None``) is
    given. Unknown names are an error; a given JSON scalar (str, int, float, bool) must pass the option's check;
    other Python values (a ``torch.dtype``, a template object) are passed on as they are, for the code that uses
    them to check. Raises :class:`InvariRankError` naming ``where``."""
    _unknown(table, given, where, None, config=False)
    out = {name: opt.default for name, opt in table.items()}
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, _JSON_SCALARS) and not table[name].check(value):
            raise InvariRankError(f"{where}: option {name!r} = {value!r}, expected {table[name].expected}")
        out[name] = value
    return out


def own_options(
    table: Mapping[str, Option], base: Mapping[str, Option], given: Mapping[str, Any], where: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """For a subclass constructor: the options of ``table`` that ``base`` (its base class's table) lacks, resolved
    (:func:`resolve_options`), and the given options of ``base``, to pass on as they are. Unknown names are an
    error naming every option of ``table``."""
    _unknown(table, given, where, None, config=False)
    own = {name: opt for name, opt in table.items() if name not in base}
    return (
        resolve_options(own, {k: v for k, v in given.items() if k in own}, where),
        {k: v for k, v in given.items() if k not in own},
    )


def check_config_options(table: Mapping[str, Option], options: Mapping[str, Any], where: str, what: str) -> None:
    """Check options against ``table`` as a config, ``--scorer-option`` or a grid file gives them (names and
    values, no torch, nothing loaded): unknown names, options that are no config's (a template object, the
    :data:`FORBIDDEN_OPTIONS`) and values failing their check are an :class:`InvariRankError` naming ``where``
    (and ``what``, e.g. "span scorer", in the unknown-name line)."""
    _unknown(table, options, where, what, config=True)
    for name, value in options.items():
        if not table[name].check(value):
            raise InvariRankError(f"{where}: option {name!r} = {value!r}, expected {table[name].expected}")


def config_examples(table: Mapping[str, Option]) -> dict[str, Any]:
    """One valid, non-default value of every option of ``table`` a config may give (for tests and docs)."""
    return {name: opt.example for name, opt in table.items() if opt.config}
