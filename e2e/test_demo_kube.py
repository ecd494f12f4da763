"""``mkhub demo --kubernetes`` as a user runs it: three dev-clusters, the hub and two agents in
Kubernetes mode, GPU Jobs created with kubectl in the manager; each runs in exactly one worker
(from the workers' own watch streams) and shows Complete in the manager."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

ROOT = Path(__file__).resolve().parents[1]


def test_the_kubernetes_demo_runs_every_job_once_in_a_worker() -> None:
    done = subprocess.run([sys.executable, "-m", "hub.cli", "demo", "--kubernetes", "--jobs", "8"], cwd=ROOT,
                          capture_output=True, text=True, timeout=280, check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    found = re.search(r"All 8 jobs finished: (\d+) ran on worker-1, (\d+) ran on worker-2; 8 show Complete in the "
                      r"manager(; \d+ preempted and run again)?; none ran twice", out)
    assert found is not None, out
    assert int(found.group(1)) + int(found.group(2)) == 8
    assert "kubectl create: 8 GPU Jobs in the manager (team-a, team-b; 1-4 GPUs); the webhook gave 8 of them " \
        "spec.managedBy: kueue.x-k8s.io/multikueue" in out
    assert "export KUBECONFIG=" in out and "mkhub logs job/gpu-001" in out
    workdir = re.search(r"Logs and state: (\S+)", out)
    assert workdir is not None and not Path(workdir.group(1)).exists()  # cleaned up without --keep


def _children(pid: int) -> dict[int, str]:
    out = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True, text=True, check=False).stdout
    return {int(line.split(None, 1)[0]): line.split(None, 1)[1] for line in out.splitlines() if line.strip()}


def test_kept_demo_survives_an_agent_outage_and_says_what_died() -> None:
    """``--keep`` is for rehearsing outages: killing one agent leaves the clusters, the hub and the
    other agent running, and the demo says which process exited."""
    demo = subprocess.Popen([sys.executable, "-m", "hub.cli", "demo", "--kubernetes", "--jobs", "2", "--keep"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert demo.stdout is not None
    seen: list[str] = []
    try:
        for line in demo.stdout:
            seen.append(line)
            if line.startswith("Running until Ctrl-C (--keep)"):
                break
        assert seen and seen[-1].startswith("Running until Ctrl-C"), "".join(seen)
        before = _children(demo.pid)
        agent = next((pid for pid, args in before.items() if "--cluster worker-1" in args), None)
        assert agent is not None, before
        os.kill(agent, signal.SIGKILL)
        for line in demo.stdout:
            seen.append(line)
            if "exited" in line:
                break
        assert seen[-1].startswith("agent-worker-1 exited (code -9); the others keep running"), "".join(seen)
        time.sleep(2)  # had the demo torn everything down, its children would be gone by now
        assert demo.poll() is None, "".join(seen)
        assert set(_children(demo.pid)) == set(before) - {agent}, "".join(seen)
    finally:
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=120)
    assert demo.returncode == 130, "".join(seen) + rest
