"""Pods Kueue did not place, on a hub that watches every Pod: their usage reaches the TAS inventory
as Kueue's non-TAS usage cache takes it, without a Node re-applied, a tree rebuilt or a workload
requeued; freed capacity requeues, batched every 10 s (Kueue's pod usage controller), only the
ClusterQueues whose TAS flavors the freed node serves, and nothing without a TAS flavor."""

from __future__ import annotations

from typing import Any

from hub.api.config import Configuration
from hub.api.meta import parse_time
from hub.api.registry import parse_object
from hub.engine.tas.nontas import REQUEUE_BATCH_SECONDS, requeue_freed
from hub.sim.cluster import SimCluster

T0 = parse_time("2026-01-01T00:00:00Z")
HOST = "kubernetes.io/hostname"


def node(name: str, cpu: int = 4, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {HOST: name, "pool": "tas", **labels}, "resourceVersion": "1"},
            "status": {"allocatable": {"cpu": str(cpu), "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, on: str, cpu: str = "3", phase: str = "Running") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "other", "resourceVersion": "1"},
            "spec": {"nodeName": on, "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": phase}}


def queue(name: str, flavor: str, cpu: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
         "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
             {"name": flavor, "resources": [{"name": "cpu", "nominalQuota": str(cpu)}]}]}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": name, "namespace": "team"},
         "spec": {"clusterQueue": name}},
    ]


def workload(name: str, lq: str, cpu: str, count: int = 1) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": name, "namespace": "team"},
            "spec": {"queueName": lq, "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}}]}}


def cluster(tas: bool = True) -> SimCluster:
    sim = SimCluster("hub", Configuration(), T0)
    objs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "plain"}},
        *queue("plain-cq", "plain", 0),
        node("n1"), node("n2"),
    ]
    if tas:
        objs += [
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "hosts"},
             "spec": {"levels": [{"nodeLabel": HOST}]}},
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "tas"},
             "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "hosts"}},
            *queue("tas-cq", "tas", 100),
        ]
    for obj in objs:
        sim.controller.apply(parse_object(obj), T0)
    return sim


def test_a_bound_pods_usage_rebuilds_no_tree_and_requeues_nothing() -> None:
    sim = cluster()
    engine = sim.engine
    tree = engine.tas.tree("tas")
    version = engine.tas.version
    engine.qm.requeue_cqs.clear()
    sim.controller.apply(parse_object(pod("other-1", "n1")), T0 + 1)
    assert engine.tas.non_tas["n1"] == {"cpu": 3000, "pods": 1}
    assert engine.tas.version == version and engine.tas.tree("tas") is tree
    assert engine.qm.requeue_cqs == set() and engine.tas.freed == set()
    # The next placement counts it: 2 pods of 3 CPUs, one to a node, no longer fit (n1 has 1 CPU left).
    sim.controller.apply(parse_object(workload("wide", "tas-cq", "3", count=2)), T0 + 2)
    sim.controller.settle(T0 + 2)
    assert not engine.workloads["team/wide"].is_quota_reserved
    sim.controller.apply(parse_object(workload("one", "tas-cq", "3")), T0 + 3)
    sim.controller.settle(T0 + 3)
    admission = engine.workloads["team/one"].status.admission
    assert admission is not None
    ta = admission.pod_set_assignments[0].topology_assignment
    assert ta is not None and [values for values, _ in ta.domains] == [("n2",)]

def test_a_node_status_heartbeat_is_no_change() -> None:
    sim = cluster()
    engine = sim.engine
    version = engine.tas.version
    engine.qm.requeue_cqs.clear()
    beat = node("n1")
    beat["metadata"]["resourceVersion"] = "2"
    sim.controller.apply(parse_object(beat), T0 + 1)
    assert engine.tas.version == version and engine.qm.requeue_cqs == set()
    sim.controller.apply(parse_object(node("n1", cpu=8)), T0 + 2)  # allocatable changed: a real change
    assert engine.tas.version > version and "tas-cq" in engine.qm.requeue_cqs


def test_freed_capacity_requeues_after_the_batch_and_only_the_tas_queues_it_serves() -> None:
    sim = cluster()
    engine = sim.engine
    ctl = sim.controller
    for n in ("n1", "n2"):
        ctl.apply(parse_object(pod(f"on-{n}", n)), T0 + 1)
    ctl.apply(parse_object(workload("big", "tas-cq", "3")), T0 + 2)
    ctl.apply(parse_object(workload("blocked", "plain-cq", "1")), T0 + 2)
    ctl.settle(T0 + 2)
    assert not engine.workloads["team/big"].is_quota_reserved  # 1 CPU free on each node
    ctl.delete("Pod", "other", "on-n1", T0 + 3)
    assert engine.tas.freed == {"n1"}
    assert engine.next_wakeup() == T0 + 3 + REQUEUE_BATCH_SECONDS
    ctl.settle(T0 + 5)  # within the batch: the workload waits as in Kueue (its queue is not retried)
    assert not engine.workloads["team/big"].is_quota_reserved
    assert requeue_freed(engine.tas, engine.cqs, T0 + 5) == set()
    assert requeue_freed(engine.tas, engine.cqs, T0 + 13) == {"tas-cq"}  # not plain-cq
    engine.tas.freed, engine.tas.freed_at = {"n1"}, T0 + 3  # put the batch back: drained by the engine's tick
    ctl.settle(T0 + 13)
    assert engine.workloads["team/big"].is_quota_reserved
    assert engine.tas.freed == set() and engine.tas.freed_at is None


def test_a_pod_that_ends_frees_its_node_and_more_usage_is_no_freeing() -> None:
    sim = cluster()
    engine = sim.engine
    sim.controller.apply(parse_object(pod("p", "n1", cpu="1")), T0 + 1)
    sim.controller.apply(parse_object(pod("q", "n1", cpu="1")), T0 + 1)
    assert engine.tas.freed == set()
    sim.controller.apply(parse_object(pod("p", "n1", cpu="1", phase="Succeeded")), T0 + 2)
    assert engine.tas.non_tas["n1"] == {"cpu": 1000, "pods": 1} and engine.tas.freed == {"n1"}


def test_without_a_tas_flavor_freed_capacity_requeues_nothing() -> None:
    sim = cluster(tas=False)
    engine = sim.engine
    sim.controller.apply(parse_object(pod("p", "n1")), T0 + 1)
    sim.controller.delete("Pod", "other", "p", T0 + 2)
    assert requeue_freed(engine.tas, engine.cqs, T0 + 20) == set()
