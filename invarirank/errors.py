"""User-facing errors: the CLI prints them as one line and exits non-zero (no traceback)."""


class InvariRankError(Exception):
    """An error caused by the user's input or environment, with a message naming the file, field or
    parameter and what was expected. The CLI prints ``invarirank: error: <message>`` and exits 2."""
