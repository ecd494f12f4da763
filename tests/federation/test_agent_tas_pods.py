"""TAS on the worker side of MultiKueue (an agent in Kubernetes mode): a copy its engine admitted
with a topology assignment is created with Kueue's topology gate, the copy's name and the pod set's
in its pod template; the worker pods made from it are ungated each with its domain's nodeSelector,
written on the writer threads; a worker Node's allocatable comes with its status."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hub.api.config import parse_configuration
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController
from hub.controllers.simrunner import SimRunner
from hub.engine.engine import Engine
from hub.store.interface import EventType, WatchEvent
from worker_agent.kube.cluster import _without_status
from worker_agent.kube.jobs import worker_job
from worker_agent.kube.tas import PodFail, PodUngate, WorkerTas

RACK, HOST = "cloud.example.com/rack", "kubernetes.io/hostname"
GATE = "kueue.x-k8s.io/topology"


def node(name: str, rack: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {RACK: rack, HOST: name, "pool": "tas"}},
            "status": {"allocatable": {"cpu": "2", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}


OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "metadata": {"name": "default"},
     "spec": {"levels": [{"nodeLabel": RACK}, {"nodeLabel": HOST}]}},
    node("r1-a", "r1"), node("r2-a", "r2"), node("r2-b", "r2"),
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "tas"},
     "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "default"}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
     "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
         {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": 100}]}]}]}},
    {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": {"name": "q", "namespace": "default"},
     "spec": {"clusterQueue": "cq"}},
]

TEMPLATE: dict[str, Any] = {
    "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}

JOB: dict[str, Any] = {"apiVersion": "batch/v1", "kind": "Job",
                       "metadata": {"name": "train", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
                       "spec": {"parallelism": 3, "completions": 3, "managedBy": "kueue.x-k8s.io/multikueue",
                                "template": TEMPLATE}}


def worker(nodes_with_status: bool = True) -> ClusterController:
    """The agent's engine on the worker's objects as its Kubernetes watch hands them over."""
    c = ClusterController(Engine(parse_configuration({}), 0.0), SimRunner())
    for obj in OBJECTS:
        c.apply(parse_object(_without_status(obj) if nodes_with_status else {k: v for k, v in obj.items() if k != "status"}), 0.0)
    return c


def admitted_copy(c: ClusterController) -> Workload:
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "job-train-1", "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 3, "template": copy.deepcopy(TEMPLATE),
                                                               "topologyRequest": {"required": RACK}}]}})
    assert isinstance(wl, Workload)
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    c.react(1.0)
    got = c.engine.workloads["default/job-train-1"]
    assert got.is_admitted, got.status
    return got


def pod(manifest: dict[str, Any], i: int, rv: int, node_name: str = "", second: int | None = None) -> WatchEvent:
    """A pod of the worker Job, as its controller makes it from the template."""
    template = manifest["spec"]["template"]
    out = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {**copy.deepcopy(template["metadata"]), "name": f"train-{i}", "namespace": "default",
                        "resourceVersion": str(rv), "creationTimestamp": f"2026-01-01T00:00:0{i if second is None else second}Z"},
           "spec": copy.deepcopy(template["spec"])}
    if node_name:
        out["spec"]["nodeName"] = node_name
    return WatchEvent(EventType.ADDED, out, rv)


def test_a_tas_admitted_copy_is_created_gated_and_its_pods_are_ungated_into_one_rack() -> None:
    c = worker()
    wl = admitted_copy(c)
    manifest = worker_job(JOB, wl, "multikueue", {"main": ({"pool": "tas"}, [])})
    template = manifest["spec"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": GATE}]
    assert template["spec"]["nodeSelector"] == {"pool": "tas"}
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "job-train-1"
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"

    writes: list[tuple[str, object]] = []
    tas = WorkerTas(c, lambda ref, state: writes.append((ref, state)))
    for i in range(3):
        tas.on_pod(pod(manifest, i, 10 + i), 2.0)
    assert tas.flush() == 3
    assert sorted(ref for ref, _ in writes) == ["Pod:default/train-0", "Pod:default/train-1", "Pod:default/train-2"]
    selectors = [state.selector for _, state in writes if isinstance(state, PodUngate)]
    # By host (Kueue's assignment names the lowest level): r2's, the only rack of 3 CPUs.
    assert Counter(s[HOST] for s in selectors) == {"r2-a": 2, "r2-b": 1}
    assert tas.flush() == 0  # nothing due until a pod changes


def test_a_worker_pod_tas_did_not_place_takes_its_nodes_room() -> None:
    c = worker()
    tas = WorkerTas(c, lambda ref, state: None)
    other = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "namespace": "default", "resourceVersion": "5"},
             "spec": {"nodeName": "r2-a", "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}
    tas.on_pod(WatchEvent(EventType.ADDED, other, 5), 1.0)
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "job-train-1", "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 3, "template": copy.deepcopy(TEMPLATE),
                                                               "topologyRequest": {"required": RACK}}]}})
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    assert not c.engine.workloads["default/job-train-1"].is_admitted  # r2's 4 CPUs less the pod's 2: no rack holds 3
    tas.on_pod(WatchEvent(EventType.DELETED, other, 6), 2.0)
    c.settle(3.0)
    # Freed room requeues the TAS queues in Kueue's 10 s batches (hub.engine.tas.nontas), not per pod event.
    assert not c.engine.workloads["default/job-train-1"].is_admitted
    c.settle(12.0)
    assert c.engine.workloads["default/job-train-1"].is_admitted


def test_a_worker_nodes_status_is_read_its_allocatable_is_tass_inventory() -> None:
    assert _without_status(OBJECTS[2])["status"]["allocatable"]["cpu"] == "2"
    assert "status" not in _without_status(OBJECTS[-1])  # a Kueue object's status is not the agent's to read
    c = worker(nodes_with_status=False)
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "w", "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": copy.deepcopy(TEMPLATE),
                                                               "topologyRequest": {"required": RACK}}]}})
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    assert not c.engine.workloads["default/w"].is_admitted  # Nodes without their status: no room anywhere


def test_the_pods_of_a_copy_placed_by_implied_tas_are_its_workloads_usage_not_counted_again() -> None:
    """Kueue's non-TAS usage skips pods with a TAS annotation (``utiltas.IsTAS``); a pod set placed by
    implied TAS gets ``podset-unconstrained-topology`` in its template, so its pods count once."""
    c = worker()
    plain = {"metadata": {}, "spec": copy.deepcopy(TEMPLATE["spec"])}  # no TAS annotation: implied TAS
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "job-train-1", "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 4, "template": plain}]}})
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    c.react(1.0)
    first = c.engine.workloads["default/job-train-1"]
    assert first.is_admitted and first.status.admission is not None
    assert first.status.admission.pod_set_assignments[0].topology_assignment is not None
    job = copy.deepcopy(JOB)
    job["spec"]["template"] = plain
    manifest = worker_job(job, first, "multikueue", {"main": ({"pool": "tas"}, [])})
    assert manifest["spec"]["template"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
    tas = WorkerTas(c, lambda ref, state: None)
    # Its 4 pods bound where the assignment put them (4 of the worker's 6 CPUs): no node loses room.
    hosts = [h for values, n in first.status.admission.pod_set_assignments[0].topology_assignment.domains
             for h in [values[-1]] * n]
    assert not any([tas.on_pod(pod(manifest, i, 20 + i, node_name=h), 2.0) for i, h in enumerate(hosts)])
    assert not c.pods.tas.node_usage
    # The 2 CPUs left still take a 2-pod workload (counted twice, the nodes would look full).
    second = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                           "metadata": {"name": "job-more-1", "namespace": "default"},
                           "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2, "template": plain}]}})
    c.engine.apply(second, 3.0)
    c.run_cycle(3.0)
    assert c.engine.workloads["default/job-more-1"].is_admitted


def test_a_pod_whose_ungate_is_queued_keeps_its_slot_until_the_write_shows() -> None:
    """The writes land after the loop moves on: pods arriving meanwhile (created in the same second,
    sorting first by name) and a stale gated event of the queued pod must not give its slot away."""
    c = worker()
    wl = admitted_copy(c)
    manifest = worker_job(JOB, wl, "multikueue", {"main": ({"pool": "tas"}, [])})
    landed: dict[str, dict[str, str]] = {}  # the first ungate of a pod is the one that lands

    def desire(ref: str, state: object) -> None:
        assert isinstance(state, PodUngate)
        landed.setdefault(ref, state.selector)

    tas = WorkerTas(c, desire)
    tas.on_pod(pod(manifest, 2, 10, second=0), 2.0)
    assert tas.flush() == 1
    assert landed == {"Pod:default/train-2": {HOST: "r2-a"}}
    tas.on_pod(pod(manifest, 2, 11, second=0), 2.0)  # a status change from before the write: still gated
    for i in (0, 1):
        tas.on_pod(pod(manifest, i, 12 + i, second=0), 2.0)
    tas.flush()
    assert Counter(s[HOST] for s in landed.values()) == {"r2-a": 2, "r2-b": 1}


def test_a_pod_ungated_onto_a_worker_node_that_then_fails_is_failed_by_the_agent() -> None:
    """The worker's Kueue node controller (TASReplaceNodeOnPodTermination), in the agent: a copy's pod
    ungated onto a node and still Pending there when the node fails can never run; it is failed
    (TerminatedByKueue, UnschedulableOnAssignedNode) on the writer threads, stamped with the
    loop's time, while a pod already running there is left alone."""
    c = worker()
    c.apply(parse_object(_without_status(node("r2-c", "r2"))), 0.0)  # rack r2 holds 6: a spare host for the replacement
    wl = admitted_copy(c)
    manifest = worker_job(JOB, wl, "multikueue", {"main": ({"pool": "tas"}, [])})
    writes: list[tuple[str, object]] = []
    tas = WorkerTas(c, lambda ref, state: writes.append((ref, state)))
    for i in range(3):
        tas.on_pod(pod(manifest, i, 10 + i), 2.0)
    tas.flush()
    placed = {ref.removeprefix("Pod:default/"): state.selector[HOST] for ref, state in writes if isinstance(state, PodUngate)}
    [doomed] = [host for host, n in Counter(placed.values()).items() if n == 2]
    [running, pending] = sorted(name for name, host in placed.items() if host == doomed)
    for name, host in placed.items():  # the echoes of the ungates; one pod on the doomed node runs
        i = int(name.rsplit("-", 1)[1])
        ev = pod(manifest, i, 20 + i, node_name=host if name != pending else "")
        ev.object["spec"].pop("schedulingGates", None)
        ev.object["spec"]["nodeSelector"] = {"pool": "tas", HOST: host}
        if name != pending:
            ev.object["status"] = {"phase": "Running"}
        tas.on_pod(WatchEvent(EventType.MODIFIED, ev.object, ev.resource_version), 3.0)
    writes.clear()
    assert tas.flush() == 0 and writes == []  # nothing stranded while the node is healthy

    failed = node(doomed, doomed[:2])
    failed["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    c.apply(parse_object(_without_status(failed)), 4.0)
    c.settle(4.0)
    c.settle(5.0)
    tas.flush()
    fails = [(ref, state) for ref, state in writes if isinstance(state, PodFail)]
    assert [ref for ref, _ in fails] == [f"Pod:default/{pending}"]
    assert fails[0][1].at == c.engine.now
    tas.flush()
    assert [ref for ref, state in writes if isinstance(state, PodFail)] == [f"Pod:default/{pending}"]  # queued once
