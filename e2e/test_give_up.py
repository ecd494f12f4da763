"""The capacity-aware dispatcher's give-up on real processes: ``mkhub serve`` and one ``mkagent``
whose only ClusterQueue is smaller than a Job. The workload is deactivated (``spec.active:
false`` in the store, as Kueue's workload controller writes it), stays so across a hub restart,
and ``mkhub resume workload`` brings it back: once the worker has grown, it runs to the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_harness import run_cli

from hub.ctl.client import ControlClient
from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(180)

CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
multiKueue:
  dispatcherName: mkhub.dev/capacity-aware
  capacityAwareDispatcherConfig: {giveUpTimeout: 10m, retryInterval: 1s}
"""


def queues(cpu: int) -> str:
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: default}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: {cpu}}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: lq, namespace: team}}
spec: {{clusterQueue: cq}}
"""


HUB = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker-1}
spec: {kubeConfig: {locationType: Secret, location: worker-1-kubeconfig}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {name: fleet}
spec: {clusters: [worker-1]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: mk}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: fleet}
---
""" + queues(16).replace("namespaceSelector: {}", "namespaceSelector: {}\n  admissionChecks: [mk]")

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: big
  namespace: team
  labels: {kueue.x-k8s.io/queue-name: lq}
  annotations: {mkhub.dev/sim-duration: 500ms}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/pause:3.9
        resources: {requests: {cpu: "4"}}
"""


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def wait_for_workload(client: ControlClient, hub: HubProcess, what: str,
                      done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        wls = client.list("Workload", namespace="team")[2]
        if wls and done(wls[0]):
            return wls[0]
        assert time.monotonic() < deadline, f"{what}: {wls}\n{hub.log()[-3000:]}"
        time.sleep(0.2)


def test_give_up_survives_a_hub_restart_and_resume_brings_it_back(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "small.yaml").write_text(queues(2))
    (tmp_path / "large.yaml").write_text(queues(8))

    def hub_process() -> HubProcess:
        return HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")],
                          log_path=tmp_path / "hub.log").start()

    def agent_process(objects: str) -> AgentProcess:
        return AgentProcess("worker-1", hub.address, tmp_path / objects, log_path=tmp_path / "agent.log").start()

    hub = hub_process()
    agent = agent_process("small.yaml")
    try:
        with hub.channel() as channel:
            client = hub.client(channel)
            assert not client.apply(HUB).rejected
            assert not client.apply(JOB).rejected
            wl = wait_for_workload(client, hub, "given up", lambda w: w["spec"].get("active") is False)
            assert condition(wl, "Evicted")["reason"] == "DeactivatedDueToAdmissionCheck", wl
            name = wl["metadata"]["name"]
            # Given up at once (the shortfall is against the worker's quota total): one eviction, not
            # one every retryInterval until giveUpTimeout (10m); the Why line names the shortfall.
            described = run_cli(["describe", "workload", name, "-n", "team", *hub.connection_args()])
            assert described.returncode == 0, described.stderr
            why = next(line for line in described.stdout.splitlines() if line.strip().startswith("Why:"))
            assert "worker-1: cpu short by 2" in why, described.stdout
            assert hub.log().count("evicted because") == 1, hub.log()[-3000:]

        hub.terminate()
        hub = hub_process()
        with hub.channel() as channel:
            client = hub.client(channel)
            wl = client.get("Workload", name, "team")
            assert wl["spec"]["active"] is False, wl
            assert condition(wl, "QuotaReserved").get("status") != "True", wl

            agent.terminate()
            agent = agent_process("large.yaml")
            resumed = run_cli(["resume", "workload", name, "-n", "team", *hub.connection_args()])
            assert resumed.returncode == 0, resumed.stderr
            wl = wait_for_workload(client, hub, "finished after resume",
                                   lambda w: condition(w, "Finished").get("status") == "True")
            assert wl["spec"]["active"] is True
            assert condition(wl, "Finished")["reason"] == "Succeeded", wl
    finally:
        agent.terminate()
        hub.terminate()
