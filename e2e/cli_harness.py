"""Test-only helpers for the end-to-end tests: ``mkhub`` as a child process."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from hub.demo.processes import MKHUB

__all__ = ["MKHUB", "run_cli"]


def run_cli(args: Sequence[str], *, stdin: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``mkhub ARGS`` as a child process; text stdout/stderr and the exit code."""
    return subprocess.run([*MKHUB, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False)


_ONE_QUEUE = """\
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources: [{name: cpu, nominalQuota: CPU}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: user-queue, namespace: team-a}
spec: {clusterQueue: cluster-queue}
"""


def one_queue_setup(cpu: int) -> str:
    """Namespace team-a, default-flavor, cluster-queue with `cpu` CPUs, and LocalQueue team-a/user-queue."""
    return _ONE_QUEUE.replace("nominalQuota: CPU", f"nominalQuota: {cpu}")
