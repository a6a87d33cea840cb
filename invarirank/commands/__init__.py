"""The sub-commands of ``invarirank``: one module per verb, each with ``register(subparsers)`` (see :mod:`invarirank.cli`)."""
