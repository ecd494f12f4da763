"""The CLI's error: one line for stderr, and the command exits non-zero (no gRPC import here)."""


class CliError(Exception):
    """One line for stderr; the command exits non-zero."""
