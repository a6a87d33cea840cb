"""The Python front door's arguments held to the run schema's rules (:func:`check_arguments`), so that
``rerank_query`` and ``invarirank rerank`` refuse the same values."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import InvariRankError
from ._config import RunConfig


def check_arguments(where: str, **values: Any) -> dict[str, Any]:
    """Python arguments named as run settings (``seed``, ``M``, ``methods``, ``noise_floor``, ...), checked by the
    run schema's rules (:meth:`RunConfig.normalise`, the checks of every flag, config file and grid entry), with
    the stricter types a Python caller is held to: ``None`` is not "the default" here and a string is not a number
    (the command line reads text; a Python caller passing ``"1"`` or ``1.5`` as a seed has a bug). Returns the
    normalised values; raises :class:`InvariRankError` naming ``where`` and the argument."""
    kinds = {f.name: f.type for f in dataclasses.fields(RunConfig)}
    for name, value in values.items():
        kind = str(kinds.get(name, ""))
        numeric = kind.startswith("int") or kind.startswith("list[int]")
        if value is None and not kind.endswith("| None"):
            raise InvariRankError(f"{where}: {name} = None, expected a value (see invarirank.runner._config)")
        if numeric and (isinstance(value, (str, bool)) or (isinstance(value, float) and not value.is_integer())):
            raise InvariRankError(f"{where}: {name} = {value!r}, expected an integer")
        if kind == "bool" and not isinstance(value, (bool, np.bool_)):
            raise InvariRankError(f"{where}: {name} = {value!r}, expected True or False")
    config = RunConfig.from_mapping({k: bool(v) if isinstance(v, np.bool_) else v for k, v in values.items()}, where)
    return {name: getattr(config, name) for name in values}
