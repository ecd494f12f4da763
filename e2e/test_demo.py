"""``mkhub demo`` as CI runs it (``make demo DEMO_ARGS="--jobs N"``): a hub and two agents as real
processes, a short burst of jobs, a summary, exit 0, nothing left behind."""

from __future__ import annotations

import os
import re
import shutil
import signal
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


def test_demo_keep_serves_until_ctrl_c_and_its_commands_work() -> None:
    proc = subprocess.Popen([*MKHUB, "demo", "--jobs", "2", "--workers", "1", "--keep"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.strip() == "mkhub top":
                break
        assert "The hub and agents keep running until Ctrl-C; in another terminal:\n" in lines, "".join(lines)
        export = next(line.split()[1:] for line in lines if line.strip().startswith("export "))
        env = {**os.environ, **dict(kv.split("=", 1) for kv in export)}
        got = subprocess.run([*MKHUB, "get", "workloads", "-A"], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert got.returncode == 0 and "job-gpu-001-" in got.stdout, got.stderr
        proc.send_signal(signal.SIGINT)
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Ctrl-C: stopping the hub and agents" in rest and re.search(r"Stopped worker-1 \(exit 0\), hub \(exit 0\)", rest), rest
    workdir = re.search(r"Logs and data: (\S+)", rest)
    assert workdir is not None and Path(workdir.group(1)).exists()  # --keep keeps it
    shutil.rmtree(workdir.group(1))
