"""Test-only helpers for the end-to-end tests: ``mkhub`` as a child process."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from hub.demo.processes import MKHUB

__all__ = ["MKHUB", "run_cli"]


def run_cli(args: Sequence[str], *, stdin: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``mkhub ARGS`` as a child process; text stdout/stderr and the exit code."""
    return subprocess.run([*MKHUB, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
