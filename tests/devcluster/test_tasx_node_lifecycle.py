"""Nodes changed through the API, as a cluster's control plane follows them (hub.devcluster.node_lifecycle):
a deleted node's pods are deleted (PodGC's orphans) and none is bound there again; a NoExecute taint
evicts the pods that do not tolerate it (the taint manager); a node whose Ready condition is not
True gets the node lifecycle controller's ``node.kubernetes.io/not-ready`` taints, a cordoned one
``node.kubernetes.io/unschedulable:NoSchedule``. A deleted pod's Job makes another, bound elsewhere."""

from __future__ import annotations

from typing import Any

from test_devcluster import Clock, cluster, job, pods

from hub.api.meta import Taint
from hub.devcluster.node_lifecycle import scheduling_node
from hub.devcluster.nodes import Node
from hub.store import SQLiteStore

NODES = tuple(Node(n, allocatable={"cpu": 4000, "pods": 110}) for n in ("a", "b"))  # cpu in millicores


def one_cpu_job(name: str, count: int, **pod_spec: Any) -> dict[str, Any]:
    return job(name, parallelism=count, completions=count, pod_spec={"containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}], **pod_spec})


def live_on(store: SQLiteStore) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in pods(store):
        if p["status"].get("phase") in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp"):
            node = p["spec"].get("nodeName", "")
            out[node] = out.get(node, 0) + 1
    return out


def test_a_deleted_nodes_pods_are_made_again_on_the_nodes_left(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, NODES)
    store.create(one_cpu_job("j", 4))
    dc.step()
    assert live_on(store) == {"a": 2, "b": 2}
    store.delete("Node", "", "a")
    dc.step()
    assert live_on(store) == {"b": 4}


def test_a_noexecute_taint_evicts_the_pods_that_do_not_tolerate_it(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, NODES)
    store.create(one_cpu_job("plain", 2))
    store.create(one_cpu_job("tolerant", 2, tolerations=[{"key": "maintenance", "operator": "Exists"}]))
    dc.step()
    node = store.get("Node", "", "a")
    assert node is not None
    on_a = {p["metadata"]["labels"]["job-name"] for p in pods(store) if p["spec"].get("nodeName") == "a"}
    store.update({**node, "spec": {"taints": [{"key": "maintenance", "value": "now", "effect": "NoExecute"}]}})
    dc.step()
    left_on_a = [p for p in pods(store) if p["spec"].get("nodeName") == "a"
                 and p["status"].get("phase") in ("Pending", "Running") and not p["metadata"].get("deletionTimestamp")]
    assert {p["metadata"]["labels"]["job-name"] for p in left_on_a} == on_a & {"tolerant"}
    assert sum(live_on(store).values()) == 4  # the evicted ones made again on b, or a for the tolerant


def test_a_not_ready_or_cordoned_node_is_tainted_as_the_control_plane_taints_it() -> None:
    base: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "labels": {"x": "y"}},
                            "spec": {}, "status": {"allocatable": {"cpu": "2"},
                                                   "conditions": [{"type": "Ready", "status": "True"}]}}
    ready = scheduling_node(base)
    assert ready == Node("n", {"x": "y"}, (), {"cpu": 2000})
    not_ready = scheduling_node({**base, "status": {"conditions": [{"type": "Ready", "status": "False"}]}})
    assert not_ready is not None and not_ready.taints == (
        Taint("node.kubernetes.io/not-ready", "", "NoSchedule"), Taint("node.kubernetes.io/not-ready", "", "NoExecute"))
    cordoned = scheduling_node({**base, "spec": {"unschedulable": True}})
    assert cordoned is not None and cordoned.taints == (Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),)
