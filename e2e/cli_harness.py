"""Test-only helpers for the end-to-end tests: ``mkhub`` as a child process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from hub.demo.processes import MKHUB, AgentProcess, HubProcess

# The factories e2e/conftest.py yields: start_hub / module_hub, start_agent.
HubFactory = Callable[..., HubProcess]
AgentFactory = Callable[..., AgentProcess]

__all__ = ["MKHUB", "AgentFactory", "HubFactory", "multikueue_setup", "progress", "run_cli", "wait_for"]


def run_cli(args: Sequence[str], *, stdin: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``mkhub ARGS`` as a child process; text stdout/stderr and the exit code."""
    return subprocess.run([*MKHUB, *args], input=stdin, capture_output=True, text=True, timeout=timeout, check=False)


def multikueue_setup(workers: Sequence[str]) -> str:
    """A MultiKueueCluster per worker (kubeconfig Secret WORKER-kubeconfig), MultiKueueConfig
    ``fleet`` of them all and AdmissionCheck ``multikueue`` on it: YAML documents, each after ``---``."""
    clusters = "".join(
        f"---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: MultiKueueCluster\nmetadata: {{name: {w}}}\n"
        f"spec:\n  kubeConfig: {{locationType: Secret, location: {w}-kubeconfig}}\n"
        for w in workers
    )
    return clusters + f"""---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {{name: fleet}}
spec: {{clusters: [{", ".join(workers)}]}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {{name: multikueue}}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {{apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: fleet}}
"""


def one_queue_setup(cpu: int, *, flavor: str = "default-flavor", node_labels: dict[str, str] | None = None,
                    checks: Sequence[str] = (), between: str = "") -> str:
    """Namespace team-a, ResourceFlavor ``flavor`` (with ``node_labels``), ClusterQueue cluster-queue
    with ``cpu`` CPUs of it (and ``checks``, its admission checks), LocalQueue team-a/user-queue;
    ``between``: documents (each after ``---``) that go before the queues, as :func:`multikueue_setup`'s."""
    labels = f"\nspec:\n  nodeLabels: {json.dumps(node_labels)}" if node_labels else ""
    admission = f"\n  admissionChecks: [{', '.join(checks)}]" if checks else ""
    return f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: {flavor}}}{labels}
{between}---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: {flavor}
      resources: [{{name: cpu, nominalQuota: {cpu}}}]{admission}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: user-queue, namespace: team-a}}
spec: {{clusterQueue: cluster-queue}}
"""


# --- progress and polling ------------------------------------------------------------------

_config: Any = None


def samples_queue_setup(quotas: dict[str, str], *, flavor: str = "cpu-pool", node_labels: dict[str, str] | None = None,
                        namespace: str = "default") -> str:
    """What Kueue's samples expect: ResourceFlavor ``flavor`` (with ``node_labels``), ClusterQueue
    cluster-queue with ``quotas`` (resource -> nominal quota) of it, LocalQueue ``namespace``/user-queue."""
    labels = f"\nspec: {{nodeLabels: {json.dumps(node_labels)}}}" if node_labels else ""
    resources = ", ".join(f"{{name: {name}, nominalQuota: {quota}}}" for name, quota in quotas.items())
    return f"""\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: {flavor}}}{labels}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cluster-queue}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [{", ".join(quotas)}]
    flavors:
    - name: {flavor}
      resources: [{resources}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: user-queue, namespace: {namespace}}}
spec: {{clusterQueue: cluster-queue}}
"""


def frameworks_config(*frameworks: str) -> dict[str, Any]:
    """A Kueue Configuration enabling ``frameworks`` (integrations.frameworks)."""
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
            "integrations": {"frameworks": list(frameworks)}}


def set_progress_config(config: Any) -> None:
    """Called by e2e/conftest.py: the pytest config whose capture :func:`progress` steps around."""
    global _config
    _config = config


def progress(message: str) -> None:
    """One line on the terminal now, with the running test's name, even with output captured
    and under pytest-xdist (a worker's real stderr is the terminal's)."""
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    line = f"\n  .. {f'[{worker}] ' if worker else ''}{test}: {message}\n"
    capman = _config.pluginmanager.getplugin("capturemanager") if _config is not None else None
    if capman is None:
        sys.stderr.write(line)
        return
    with capman.global_and_fixture_disabled():
        sys.stderr.write(line)
        sys.stderr.flush()


def wait_for(
    what: str, check: Callable[[], bool], timeout: float, proc: Any = None, every: float = 0.1, most: float = 1.0
) -> None:
    """Poll ``check`` until true; fail after ``timeout`` s, or at once if ``proc`` (a HubProcess or
    AgentProcess) exits. A wait over 10 s says what it waits for, every 10 s. The interval grows
    from ``every`` to ``most``: a check often starts a CLI process (a third of a CPU-second), and
    ten of those a second would take the CPU the processes under test need."""
    start = time.monotonic()
    deadline = start + timeout
    said = start
    while True:
        if check():
            return
        now = time.monotonic()
        if now >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        if proc is not None and proc.proc is not None and proc.proc.poll() is not None:
            raise AssertionError(f"process exited while waiting for {what}:\n{proc.log()[-3000:]}")
        if now - said >= 10:
            said = now
            progress(f"still waiting for {what} ({now - start:.0f} s of {timeout:.0f} s)")
        time.sleep(every)
        every = min(most, every * 1.5)
