"""User-facing errors: the CLI prints them as one line and exits non-zero (no traceback):
2 for bad input (:class:`InvariRankError`), 1 for a failed run (:class:`RunFailed`)."""


class InvariRankError(Exception):
    """An error caused by the user's input or environment, with a message naming the file, field or
    parameter and what was expected. The CLI prints ``invarirank: error: <message>`` and exits 2.

    Stability: full (the one error that bad input raises)."""


class RunFailed(InvariRankError):
    """A run or notebook that was started and failed (not the input's fault as far as we can tell): the CLI
    prints it as one line and exits 1."""
