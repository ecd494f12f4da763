"""TAS for Kueue's pod integration on the worker side of MultiKueue: the Pods an agent creates for a
copy its engine placed by TAS are gated with Kueue's topology gate (the worker's pod webhook puts it;
Kueue's ``prepare`` keeps it when the admission's pod-set info has it, pkg/controller/jobs/pod/
pod_controller.go) and carry the Workload's and pod set's names; the agent's ungater then gives each
its domain's nodeSelector, as Kueue's topology ungater does for any pod of the Workload."""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import replace
from typing import Any

from hub.api.jobkinds.pod import GROUP_NAME_LABEL, GROUP_TOTAL_COUNT_ANNOTATION, SCHEDULING_GATE
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.controllers.cluster import ClusterController
from hub.store.interface import EventType, WatchEvent
from worker_agent.kube.pods import worker_pods
from worker_agent.kube.tas import PodUngate, WorkerTas

from .test_agent_tas_pods import GATE, HOST, RACK, worker

ROLE = "abc123"


def admitted_copy(c: ClusterController, name: str, pod_set: str, count: int) -> Workload:
    """The hub's Workload of a rack-required pod group, admitted by the worker's engine."""
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": name, "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": pod_set, "count": count, "template": {"spec": {
                           "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}},
                           "topologyRequest": {"required": RACK, "podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"}}]}})
    assert isinstance(wl, Workload)
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    c.react(1.0)
    got = c.engine.workloads[f"default/{name}"]
    assert got.is_admitted, got.status
    return got


def manager_pod(name: str, total: int) -> dict[str, Any]:
    """A group's Pod in the manager as Kueue's webhook left it: managed, gated, its role hash."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "3",
                         "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/managed": "true",
                                    GROUP_NAME_LABEL: "g"},
                         "annotations": {"kueue.x-k8s.io/role-hash": ROLE, GROUP_TOTAL_COUNT_ANNOTATION: str(total),
                                         "kueue.x-k8s.io/podset-required-topology": RACK},
                         "finalizers": ["kueue.x-k8s.io/managed"]},
            "spec": {"restartPolicy": "Never", "schedulingGates": [{"name": SCHEDULING_GATE}],
                     "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}


def created(manifest: dict[str, Any], rv: int, second: int) -> WatchEvent:
    out = copy.deepcopy(manifest)
    out["metadata"].update(resourceVersion=str(rv), creationTimestamp=f"2026-01-01T00:00:0{second}Z")
    return WatchEvent(EventType.ADDED, out, rv)


def test_a_tas_placed_pod_groups_copies_are_created_gated_and_ungated_into_one_rack() -> None:
    c = worker()
    wl = admitted_copy(c, "g", ROLE, 3)
    pods = worker_pods({"kind": "List", "items": [manager_pod(f"g-{i}", 3) for i in range(3)]}, wl, "mk",
                       {ROLE: ({"pool": "tas"}, [])})
    for p in pods:
        assert p["spec"]["schedulingGates"] == [{"name": GATE}]  # Kueue's admission gate gone, TAS's kept
        assert p["spec"]["nodeSelector"] == {"pool": "tas"}  # the flavor's placement merged already
        assert p["metadata"]["labels"]["kueue.x-k8s.io/podset"] == ROLE
        assert p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == "g"
    writes: list[tuple[str, object]] = []
    tas = WorkerTas(c, lambda ref, state: writes.append((ref, state)))
    for i, p in enumerate(pods):
        tas.on_pod(created(p, 10 + i, i), 2.0)
    assert tas.flush() == 3
    selectors = {ref: state.selector for ref, state in writes if isinstance(state, PodUngate)}
    assert set(selectors) == {"Pod:default/g-0", "Pod:default/g-1", "Pod:default/g-2"}
    assert Counter(s[HOST] for s in selectors.values()) == {"r2-a": 2, "r2-b": 1}  # r2: the only rack of 3 CPUs


def test_a_copy_not_placed_by_tas_runs_its_pods_ungated() -> None:
    c = worker()
    wl = admitted_copy(c, "g", ROLE, 1)
    assert wl.status.admission is not None
    wl = copy.deepcopy(wl)
    wl.status.admission = replace(wl.status.admission, pod_set_assignments=tuple(
        replace(psa, topology_assignment=None) for psa in wl.status.admission.pod_set_assignments))
    [p] = worker_pods({"kind": "List", "items": [manager_pod("g-0", 1)]}, wl, "mk", {ROLE: ({"pool": "tas"}, [])})
    assert "schedulingGates" not in p["spec"]
    assert "kueue.x-k8s.io/workload" not in p["metadata"]["annotations"]
