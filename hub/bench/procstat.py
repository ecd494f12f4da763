"""Small measurement helpers for the benchmarks that run child processes."""

from __future__ import annotations

import os
import time
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc), or NaN elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def wait_idle(pid: int, quiet: float = 0.02, every: float = 0.5, timeout: float = 120.0) -> None:
    """Wait until the process uses less than ``quiet`` of a core over ``every`` seconds."""
    deadline = time.monotonic() + timeout
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        time.sleep(every)
        now = cpu_seconds(pid)
        if now - last < quiet * every:
            return
        last = now


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) by rank, NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def compile_sources() -> None:
    """Byte-compile mkhub's own packages, as ``pip install`` does: a process started from a source
    checkout under ``PYTHONDONTWRITEBYTECODE`` otherwise compiles every module it imports on every
    start (measured: about a quarter of a hub's CPU from start to serving), which no deployment pays."""
    import compileall

    import hub
    import worker_agent

    for package in (hub, worker_agent):
        compileall.compile_dir(str(Path(str(package.__file__)).parent), quiet=2)
