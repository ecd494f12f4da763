"""Topology-aware scheduling in the embedded hub: Nodes and a Topology applied as any object (as
``mkhub apply -f nodes.yaml`` does), a TAS flavor's queue, and a pod group whose Pods, once
admitted, are ungated each with its assigned domain's nodeSelector (Kueue's topology ungater)."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, namespace, seed
from test_hub_pods import admitted, create, gated, pods, start, workloads

from hub.service.apply import Applier
from hub.store import SQLiteStore

RACK, HOST = "cloud.example.com/rack", "kubernetes.io/hostname"

INVENTORY = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: default}
spec:
  levels: [{nodeLabel: cloud.example.com/rack}, {nodeLabel: kubernetes.io/hostname}]
""" + "".join(f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{cloud.example.com/rack: {rack}, kubernetes.io/hostname: {name}, pool: tas}}
status:
  allocatable: {{cpu: "{cpu}", pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
""" for name, rack, cpu in (("r1-a", "r1", 2), ("r1-b", "r1", 2), ("r2-a", "r2", 3)))


def group(name: str, total: int) -> str:
    return "---\n".join(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}-{i}
  namespace: default
  labels: {{kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/pod-group-name: {name}}}
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "{total}"
    kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack
spec:
  restartPolicy: Never
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
""" for i in range(total))


def setup(store: SQLiteStore) -> None:
    rf = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "tas"},
          "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}}
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
          "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
              {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": 100}]}]}]}}
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
          "metadata": {"name": "user-queue", "namespace": "default"}, "spec": {"clusterQueue": "cq"}}
    seed(store, [namespace("default"), rf, cq, lq])
    out = Applier(store).apply(INVENTORY)
    assert not out.rejected and not out.warnings, ([r.error for r in out.results], out.warnings)


def selector(p: dict[str, Any]) -> dict[str, str]:
    return dict(p["spec"].get("nodeSelector") or {})


def test_a_rack_required_group_is_ungated_onto_the_hosts_of_one_rack(store: SQLiteStore) -> None:
    setup(store)
    create(store, group("g", 4))
    rec, _ = start(store)
    rec.round(T0)
    wl = workloads(store)["g"]
    assert admitted(wl), wl.get("status")
    ta = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta == {"levels": [HOST], "slices": [{"domainCount": 2, "valuesPerLevel": [
        {"individual": {"prefix": "r1-", "roots": ["a", "b"]}}], "podCounts": {"universal": 2}}]}
    hosts = sorted(selector(p)[HOST] for p in pods(store).values() if not gated(p))
    assert hosts == ["r1-a", "r1-a", "r1-b", "r1-b"]


def test_a_group_no_rack_can_hold_stays_gated_with_kueues_reason(store: SQLiteStore) -> None:
    setup(store)
    create(store, group("big", 5))
    rec, _ = start(store)
    rec.round(T0)
    wl = workloads(store)["big"]
    assert not admitted(wl) and all(gated(p) for p in pods(store).values())
    reserved = next(c for c in wl["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert reserved["reason"] == "TopologyPlacementFailed"
    assert reserved["message"].endswith(': topology "default" allows to fit only 4 out of 5 pod(s)')


def test_a_node_with_a_bad_field_is_refused_naming_it(store: SQLiteStore) -> None:
    bad = INVENTORY.split("---")[1].replace('cpu: "2"', 'cpu: "two"')
    out = Applier(store).apply(bad)
    assert out.rejected
    assert out.results[0].error.startswith('Node "r1-a" is invalid: status.allocatable[cpu]')
    taint = INVENTORY.split("---")[1].replace("\nstatus:", "\nspec: {taints: [{key: gpu}]}\nstatus:")
    assert Applier(store).apply(taint).results[0].error == 'Node "r1-a" is invalid: spec.taints[0].effect: Required value'
