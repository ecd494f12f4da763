"""``mkhub demo --kubernetes`` as a user runs it: three dev-clusters, the hub and two agents in
Kubernetes mode, GPU Jobs created with kubectl in the manager; each runs in exactly one worker
(from the workers' own watch streams) and shows Complete in the manager."""

from __future__ import annotations

import re
import subprocess
import sys
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
