"""``mkhub demo`` as CI runs it (``make demo DEMO_ARGS="--jobs N"``): a hub and two agents as real
processes, a short burst of jobs, a summary, exit 0, nothing left behind."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from cli_harness import MKHUB

pytestmark = pytest.mark.timeout(180)


def test_demo_runs_a_short_burst_and_cleans_up() -> None:
    run = subprocess.run([*MKHUB, "demo", "--jobs", "6"], capture_output=True, text=True, timeout=150, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "All 6 jobs finished" in out and "none failed" in out, out
    ran = {name: int(n) for name, n in re.findall(r"^\s+(worker-\d)\s+(\d+)\s", out, re.MULTILINE)}
    assert set(ran) == {"worker-1", "worker-2"} and sum(ran.values()) == 6, out
    assert re.search(r"Stopped worker-1 \(exit 0\), worker-2 \(exit 0\), hub \(exit 0\)", out), out
    workdir = re.search(r"^\s+workdir\s+(\S+)", out, re.MULTILINE)
    assert workdir is not None and not Path(workdir.group(1)).exists(), "the demo left its working directory"
