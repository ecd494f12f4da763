"""TAS across the fleet on real processes: ``mkhub serve`` and two ``mkagent`` whose nodes are
racked differently (worker-1: racks of 2 nodes, worker-2: racks of 4; 4 cpus a node, the same
quota). A 12-pod gang that requires one rack fits only worker-2's racks. The capacity-aware
dispatcher, reading the agents' reports of their largest free domains, sends its copy to worker-2
alone; Kueue's AllAtOnce copies it to both and worker-2's admission wins. The MultiKueueCluster's
``status.fleet.topology`` shows the largest free rack of each worker."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from cli_harness import run_cli

from hub.ctl.client import ControlClient
from hub.demo.processes import AgentProcess, HubProcess

pytestmark = pytest.mark.timeout(180)

RACK, BLOCK, HOST = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block", "kubernetes.io/hostname"


def config(dispatcher: str) -> str:
    return f"""
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
multiKueue:
  dispatcherName: {dispatcher}
"""


def queues(flavor_spec: str, admission_checks: str = "") -> str:
    return f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {{name: tas}}
spec: {flavor_spec}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {{name: cq}}
spec:
  namespaceSelector: {{}}{admission_checks}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas
      resources: [{{name: cpu, nominalQuota: 32}}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {{name: lq, namespace: team}}
spec: {{clusterQueue: cq}}
"""


TOPOLOGY = f"""
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {{name: default}}
spec:
  levels: [{{nodeLabel: {BLOCK}}}, {{nodeLabel: {RACK}}}, {{nodeLabel: {HOST}}}]
"""
TAS_FLAVOR = "{topologyName: default, nodeLabels: {pool: tas}}"


def worker_objects(racks: int, hosts_per_rack: int) -> str:
    docs = [TOPOLOGY]
    for r in range(racks):
        for h in range(hosts_per_rack):
            name = f"r{r}-h{h}"
            docs.append(f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{{BLOCK}: b0, {RACK}: r{r}, {HOST}: {name}, pool: tas}}
status:
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
""")
    return "---".join(docs) + "---" + queues(TAS_FLAVOR)


HUB = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker-1}
spec: {kubeConfig: {locationType: Secret, location: worker-1-kubeconfig}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueCluster
metadata: {name: worker-2}
spec: {kubeConfig: {locationType: Secret, location: worker-2-kubeconfig}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: MultiKueueConfig
metadata: {name: fleet}
spec: {clusters: [worker-1, worker-2]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: AdmissionCheck
metadata: {name: mk}
spec:
  controllerName: kueue.x-k8s.io/multikueue
  parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: fleet}
---
""" + TOPOLOGY + "---" + queues(TAS_FLAVOR, "\n  admissionChecks: [mk]")  # TAS in the manager waits for a worker

GANG = f"""
apiVersion: batch/v1
kind: Job
metadata:
  name: gang
  namespace: team
  labels: {{kueue.x-k8s.io/queue-name: lq}}
  annotations: {{mkhub.dev/sim-duration: 2s}}
spec:
  managedBy: kueue.x-k8s.io/multikueue
  parallelism: 12
  completions: 12
  template:
    metadata:
      annotations: {{kueue.x-k8s.io/podset-required-topology: {RACK}}}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.k8s.io/pause:3.9
        resources: {{requests: {{cpu: "1"}}}}
"""


def until(what: str, hub: HubProcess, check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < deadline, f"{what}\n{hub.log()[-3000:]}"
        time.sleep(0.2)
    return got


def run(tmp_path: Path, dispatcher: str) -> tuple[HubProcess, dict[str, Any], dict[str, Any]]:
    """The gang through a fleet; returns the hub (stopped), the finished hub Workload and the fleet statuses."""
    (tmp_path / "config.yaml").write_text(config(dispatcher))
    (tmp_path / "worker-1.yaml").write_text(worker_objects(racks=4, hosts_per_rack=2))  # racks of 8 cpus
    (tmp_path / "worker-2.yaml").write_text(worker_objects(racks=2, hosts_per_rack=4))  # racks of 16 cpus
    hub = HubProcess(tmp_path / "hub", extra_args=["--config", str(tmp_path / "config.yaml")],
                     log_path=tmp_path / "hub.log").start()
    agents = []
    try:
        with hub.channel() as channel:
            client: ControlClient = hub.client(channel)
            assert not client.apply(HUB).rejected
            agents = [AgentProcess(name, hub.address, tmp_path / f"{name}.yaml", log_path=tmp_path / f"{name}.log").start()
                      for name in ("worker-1", "worker-2")]

            def fleets() -> dict[str, Any] | None:
                out = {name: (client.get("MultiKueueCluster", name).get("status") or {}).get("fleet") or {}
                       for name in ("worker-1", "worker-2")}
                return out if all(f.get("connected") and f.get("topology") for f in out.values()) else None

            fleet = until("both workers report their topology", hub, fleets)
            described = run_cli(["describe", "multikueuecluster", "worker-2", *hub.connection_args()])
            assert described.returncode == 0, described.stderr
            (tmp_path / "described.txt").write_text(described.stdout)
            assert not client.apply(GANG).rejected

            def finished() -> dict[str, Any] | None:
                wls = client.list("Workload", namespace="team")[2]
                done = [w for w in wls if any(c["type"] == "Finished" and c["status"] == "True"
                                              for c in (w.get("status") or {}).get("conditions") or [])]
                return done[0] if done else None

            wl = until("the gang finished", hub, finished, 120)
        return hub, wl, fleet
    finally:
        for a in agents:
            a.terminate()
        hub.terminate()


def largest_free_rack(fleet: dict[str, Any]) -> str:
    return str(next(t for t in fleet["topology"] if t["level"] == RACK)["largestFree"]["cpu"])


def test_capacity_aware_sends_a_rack_required_gang_only_to_the_worker_that_can_place_it(tmp_path: Path) -> None:
    hub, wl, fleet = run(tmp_path, "mkhub.dev/capacity-aware")
    assert wl["status"]["clusterName"] == "worker-2"
    log = hub.log()
    assert "dispatched to worker-2" in log and "dispatched to worker-1" not in log, log[-3000:]
    assert {name: largest_free_rack(f) for name, f in fleet.items()} == {"worker-1": "8", "worker-2": "16"}
    described = (tmp_path / "described.txt").read_text()
    assert RACK in described and "LARGEST FREE DOMAIN" in described, described


def test_all_at_once_copies_it_to_both_and_the_worker_that_places_it_wins(tmp_path: Path) -> None:
    hub, wl, _ = run(tmp_path, "kueue.x-k8s.io/multikueue-dispatcher-all-at-once")
    assert wl["status"]["clusterName"] == "worker-2"
    log = hub.log()
    assert "dispatched to worker-1" in log and "dispatched to worker-2" in log, log[-3000:]
