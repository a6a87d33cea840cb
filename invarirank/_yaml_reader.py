"""The strict YAML reader of config and grid files: :func:`load_yaml` refuses duplicate keys, the YAML 1.1 number and
boolean forms that YAML 1.2 reads otherwise (``010`` = 8, ``1:30`` = 90, ``yes``/``on``), and alias bombs (a
document expanding to more than :data:`MAX_YAML_NODES` values); errors are
:class:`~invarirank.errors.InvariRankError` naming the file and line.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvariRankError

#: the most nodes a YAML document may expand to, aliases counted at every use (an alias bomb is refused)
MAX_YAML_NODES = 100_000


_YAML_LOADER: Any = None
#: YAML 1.2 (core schema) decimal, octal and hexadecimal integers; any other form YAML 1.1 reads as a number
_INT_12 = re.compile(r"[-+]?(0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+")
_BOOL_12 = {"true", "True", "TRUE", "false", "False", "FALSE"}


def _strict_loader() -> Any:
    """A ``yaml.SafeLoader`` subclass: duplicate keys, YAML 1.1-only forms and alias bombs are errors."""
    global _YAML_LOADER
    if _YAML_LOADER is not None:
        return _YAML_LOADER
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_document(self):  # count the expanded size before building anything
            node = super().compose_document()
            sizes: dict[int, int] = {}

            def size(n: Any) -> int:
                if id(n) in sizes:
                    return sizes[id(n)]
                sizes[id(n)] = 1  # a recursive alias counts once
                children = n.value if isinstance(n.value, list) else []
                total = 1 + sum(size(c) for pair in children for c in (pair if isinstance(pair, tuple) else (pair,)))
                sizes[id(n)] = total
                return total

            if node is not None and size(node) > MAX_YAML_NODES:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the document expands to more than {MAX_YAML_NODES:,} values (aliases counted at "
                    f"every use); expected a small settings file",
                    node.start_mark,
                )
            return node

        def construct_mapping(self, node, deep=False):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None,
                            None,
                            f"key {key!r} appears twice in one mapping (first on line {seen[key]}); "
                            f"expected each key once",
                            key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark.line + 1
                except TypeError:  # an unhashable key: SafeLoader reports it
                    pass
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node):
            text = str(node.value)
            if not _INT_12.fullmatch(text):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the number {text!r} means different values in YAML 1.1 and 1.2 (octal, "
                    f"binary, sexagesimal or with '_'); write it as a plain decimal integer (or quote it)",
                    node.start_mark,
                )
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node):
            if ":" in str(node.value) or "_" in str(node.value):
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"the number {node.value!r} is a YAML 1.1-only form (sexagesimal or with '_'); "
                    f"write it as a plain decimal number (or quote it)",
                    node.start_mark,
                )
            return super().construct_yaml_float(node)

        def construct_yaml_bool(self, node):
            if str(node.value) not in _BOOL_12:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"{node.value!r} is a boolean in YAML 1.1 but a string in YAML 1.2; write true "
                    f"or false (or quote it)",
                    node.start_mark,
                )
            return super().construct_yaml_bool(node)

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    Loader.add_constructor("tag:yaml.org,2002:bool", Loader.construct_yaml_bool)
    # YAML 1.2 reads 1e-3 as a float (YAML 1.1 needs a dot); 0o17 is octal in 1.2
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$"), list("-+0123456789")
    )
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^0o[0-7]+$"), ["0"])
    _YAML_LOADER = Loader
    return Loader


def load_yaml(text: str, where: str, error: str = "not valid YAML") -> Any:
    """The YAML document ``text`` (from ``where``, a file name) read strictly: see the module docstring. An error
    is one :class:`InvariRankError`: ``WHERE:LINE: ERROR (the problem)``."""
    import yaml

    try:
        return yaml.load(text, Loader=_strict_loader())  # noqa: S506 -- a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InvariRankError(f"{where}{line}: {error} ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:
        raise InvariRankError(f"{where}: {error} (nested too deeply)") from None
