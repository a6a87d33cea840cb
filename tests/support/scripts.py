"""Load a script of ``scripts/`` as a module (the scripts are not a package), for tests of its functions."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.support import ROOT


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` imported as the module ``<name>`` (once per session)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None, name
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
