"""The ``invarirank`` command line: every entry point of the project behind one verb.

``data``, ``retrieve``, ``rerank``, ``audit``, ``import``, ``export``, ``evaluate``, ``report``, ``grid``, ``book``,
``models`` and ``assets``; each lives in ``invarirank/commands/<name>.py`` (``import`` in ``imports.py``) and exposes
``register(subparsers)``, which adds its parser and sets ``func`` (called with the parsed arguments). The old module
forms (``python -m invarirank.grid``, ``python -m invarirank.llm.models``, ``python -m invarirank.assets``,
``python -m invarirank.cli``) are deprecated aliases that call :func:`main` after a warning
(:mod:`invarirank._deprecation`; removed in 0.3.0).

One exit-code rule, here only: **0** success; **2** bad input (a usage error, or
:class:`~invarirank.errors.InvariRankError`: one line ``invarirank: error: ...`` naming the file, field or
parameter); **1** a failed run (:class:`~invarirank.errors.RunFailed`, e.g. a notebook that raised); 130
interrupted. A file-system error that names a path (a read-only folder, a file where a folder is expected, a
full disk) is bad input or environment too: one line naming the path, exit 2. Command modules import heavy
libraries (torch, transformers) only inside their run functions, so
``invarirank evaluate`` starts fast and works without torch.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys

from . import __version__
from .errors import InvariRankError, RunFailed

COMMANDS = [
    "data",
    "retrieve",
    "rerank",
    "audit",
    "import",
    "export",
    "evaluate",
    "report",
    "grid",
    "book",
    "models",
    "assets",
]
#: the module of a verb that is a Python keyword (``invarirank/commands/_imports.py`` for ``import``)
_MODULE = {"import": "imports"}

#: exit statuses (the one rule)
EXIT_OK, EXIT_FAILED_RUN, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (``invarirank: error: <command>: <message>``, exit 2), like every other
    bad input; ``--help`` still shows the usage."""

    def error(self, message: str):  # type: ignore[override]
        command = self.prog.removeprefix("invarirank").strip()
        self.exit(
            EXIT_BAD_INPUT,
            f"invarirank: error: {command + ': ' if command else ''}{message} (see {self.prog} --help)\n",
        )


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (a verb), that verb's subparser alone. A command imports only its
    own module, so ``invarirank evaluate`` does not import the reranking stack's modules (~60 ms of its start-up);
    the help and any error about the verb itself come from the whole parser."""
    parser = _Parser(
        prog="invarirank",
        description="Position bias in listwise LLM reranking: data, first stage, reranking, metrics, the book.",
    )
    parser.add_argument("--version", action="version", version=f"invarirank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else [only]:
        path = f"invarirank.commands._{_MODULE.get(name, name)}"
        try:
            module = importlib.import_module(path)
        except ModuleNotFoundError as exc:
            if exc.name != path:
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (see the module docstring). Without ``argv`` it is the program (the
    console script, ``python -m invarirank``): the process ends when the command returns, so what is still alive
    then is frozen out of the cyclic garbage collector (:func:`gc.freeze`), whose passes at the interpreter's exit
    would walk it all again (about 0.02 s of ``invarirank evaluate``'s 0.6 s of CPU time)."""
    if argv is None:
        try:
            return _command(sys.argv[1:])
        finally:
            gc.freeze()
    return _command(list(argv))


def _command(argv: list[str]) -> int:
    parser = build_parser(argv[0]) if argv and argv[0] in COMMANDS else build_parser()
    args = parser.parse_args(argv)  # argparse exits itself: 0 for --help/--version, 2 for usage errors
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        args.func(args)
        return EXIT_OK
    except RunFailed as exc:
        print(f"invarirank: error: {exc}", file=sys.stderr)
        return EXIT_FAILED_RUN
    except InvariRankError as exc:
        print(f"invarirank: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        if not getattr(exc, "filename", None):
            raise  # no path to name: a genuine bug keeps its traceback
        print(
            f"invarirank: error: {exc.filename}: {exc.strerror or type(exc).__name__} "
            f"(check that the path exists and is writable)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("invarirank: interrupted (finished work is kept; rerun to resume)", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # ``python -m invarirank.cli`` = ``python -m invarirank`` (a deprecated alias)
    from invarirank._deprecation import deprecated_command

    deprecated_command("python -m invarirank.cli", "invarirank (or python -m invarirank)", removed_in="0.3.0")
    raise SystemExit(main())
