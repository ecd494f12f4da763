"""Topology-aware scheduling when the cluster runs the pods (a store with ``runs_jobs``, as the
Kubernetes store): an admitted TAS Job's template carries Kueue's topology gate, the Workload's
name and the pod set's; the pods its controller makes from it are ungated by the hub each with its
domain's nodeSelector (Kueue's topology ungater), and eviction restores the template. A bound pod
Kueue did not place takes its node's room from the next placement (Kueue's non-TAS usage)."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from hub_objects import T0, is_true, job, seed
from test_kubejobs import ClusterStore, feed, hub
from test_tas_hub_pods import HOST, setup

from hub.api.config import Configuration
from hub.api.jobkinds.pod import read_pod
from hub.controllers.hub import HubReconciler
from hub.controllers.tas_pods import TasPods
from hub.engine.engine import Engine
from hub.store import SQLiteStore

GATE = "kueue.x-k8s.io/topology"


def tas_job(name: str, pods: int) -> dict[str, Any]:
    out = job(name, duration="600s", ns="default", parallelism=pods)
    out["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue"
    out["spec"]["template"] = {"metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.example.com/rack"}},
                               "spec": {"restartPolicy": "Never", "containers": [
                                   {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}
    return out


def stored_job(store: SQLiteStore, name: str) -> dict[str, Any]:
    got = store.get("Job", "default", name)
    assert got is not None
    return got


def job_pods(store: SQLiteStore, name: str, count: int) -> None:
    """What the Job controller creates: ``count`` pods from the Job's template."""
    stored = stored_job(store, name)
    template = stored["spec"]["template"]
    for i in range(count):
        store.create({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {**copy.deepcopy(template.get("metadata") or {}), "name": f"{name}-{i}", "namespace": "default",
                                   "labels": {**(template.get("metadata") or {}).get("labels", {}), "batch.kubernetes.io/job-name": name}},
                      "spec": copy.deepcopy(template["spec"])})


def pods_of(store: SQLiteStore, name: str) -> list[dict[str, Any]]:
    return [p for p in store.list("Pod")[0] if p["metadata"]["labels"].get("batch.kubernetes.io/job-name") == name]


def hosts(pods: list[dict[str, Any]]) -> Counter[str]:
    return Counter((p["spec"].get("nodeSelector") or {}).get(HOST, "") for p in pods)


def gates(p: dict[str, Any]) -> set[str]:
    return {g["name"] for g in p["spec"].get("schedulingGates") or []}


def start(store: SQLiteStore) -> tuple[HubReconciler, int]:
    setup(store)
    rec = hub(store)
    return rec, store.list("Pod")[1]


def admitted(store: SQLiteStore, objects: list[dict[str, Any]]) -> tuple[HubReconciler, int]:
    """The hub on ``store`` with the TAS setup and ``objects`` (a TAS Job) seen and its first round run."""
    rec, since = start(store)
    seed(store, objects)
    since = feed(rec, store, since, T0)
    rec.round(T0)
    return rec, since


def test_an_admitted_tas_jobs_pods_are_ungated_onto_their_domains_and_eviction_restores_the_template() -> None:
    store = ClusterStore(":memory:")
    rec, since = admitted(store, [tas_job("train", 4)])
    stored = stored_job(store, "train")
    assert stored["spec"]["suspend"] is False
    template = stored["spec"]["template"]
    wl_name = store.list("Workload")[0][0]["metadata"]["name"]
    assert template["spec"]["schedulingGates"] == [{"name": GATE}]
    assert template["metadata"]["annotations"]["kueue.x-k8s.io/workload"] == wl_name
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"

    job_pods(store, "train", 4)
    assert all(gates(p) == {GATE} for p in pods_of(store, "train"))
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    pods = pods_of(store, "train")
    assert all(not gates(p) for p in pods)
    assert hosts(pods) == {"r1-a": 2, "r1-b": 2}  # the rack that holds 4: its two hosts, as assigned
    assert all(p["spec"]["nodeSelector"]["pool"] == "tas" for p in pods)  # the flavor's label stays

    # A replacement pod (one failed) is ungated into the slot its predecessor left.
    failed = pods[0]
    failed["status"] = {"phase": "Failed"}
    store.update_status(failed)
    store.create({**copy.deepcopy({k: v for k, v in failed.items() if k != "status"}),
                  "metadata": {**{k: v for k, v in failed["metadata"].items()
                                  if k not in ("uid", "resourceVersion", "creationTimestamp")}, "name": "train-new"},
                  "spec": {**copy.deepcopy(stored_job(store, "train")["spec"]["template"]["spec"])}})
    since = feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    live = [p for p in pods_of(store, "train") if (p.get("status") or {}).get("phase") != "Failed"]
    assert hosts(live) == {"r1-a": 2, "r1-b": 2}

    wl = store.list("Workload")[0][0]
    wl["spec"]["active"] = False
    store.update(wl)
    since = feed(rec, store, since, T0 + 3)
    rec.round(T0 + 3)
    template = stored_job(store, "train")["spec"]["template"]
    assert "schedulingGates" not in template["spec"]  # restored from the Workload's pod set
    assert "kueue.x-k8s.io/workload" not in (template["metadata"].get("annotations") or {})
    store.close()


def test_a_restarted_hub_ungates_what_the_last_one_left_gated() -> None:
    store = ClusterStore(":memory:")
    rec, since = start(store)
    seed(store, [tas_job("train", 4)])
    feed(rec, store, since, T0)
    rec.round(T0)
    job_pods(store, "train", 4)  # created while no hub ran
    again = hub(store, T0 + 5)
    again.round(T0 + 5)
    assert hosts(pods_of(store, "train")) == {"r1-a": 2, "r1-b": 2}
    store.close()


def test_a_bound_pod_kueue_did_not_place_takes_its_nodes_room() -> None:
    store = ClusterStore(":memory:")
    rec, since = start(store)
    # 1 of r2-a's 3 CPUs taken: a 3-pod rack-required Job no longer fits rack r2 (BestFit's pick
    # when it is empty) and goes to r1.
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "namespace": "default"},
                  "spec": {"nodeName": "r2-a", "containers": [{"name": "c", "image": "busybox",
                                                               "resources": {"requests": {"cpu": "1"}}}]}})
    seed(store, [tas_job("train", 3)])
    since = feed(rec, store, since, T0)
    rec.round(T0)
    wl = store.list("Workload")[0][0]
    assert is_true(wl, "Admitted")
    [psa] = wl["status"]["admission"]["podSetAssignments"]
    assert psa["topologyAssignment"]["slices"][0]["valuesPerLevel"][0]["individual"]["roots"] == ["a", "b"]
    # Gone (or finished), the pod frees the room: the next Job of 3 takes r2 again.
    store.delete("Pod", "default", "other")
    seed(store, [tas_job("second", 3)])
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    second = next(w for w in store.list("Workload")[0] if "second" in w["metadata"]["name"])
    assert is_true(second, "Admitted")
    ta = second["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta["slices"][0]["valuesPerLevel"][0] == {"universal": "r2-a"}
    store.close()


def test_an_event_older_than_the_ungating_write_does_not_free_its_slot() -> None:
    tas = TasPods(Engine(Configuration(), T0))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "resourceVersion": "10",
                        "annotations": {"kueue.x-k8s.io/workload": "wl", "kueue.x-k8s.io/podset-required-topology": "rack"},
                        "labels": {"kueue.x-k8s.io/podset": "main"}},
           "spec": {"nodeSelector": {HOST: "r1-a"}, "containers": [{"name": "c", "image": "busybox"}]}}
    tas.apply_pod(read_pod(pod))
    stale = copy.deepcopy(pod)
    stale["metadata"]["resourceVersion"] = "7"
    stale["spec"]["schedulingGates"] = [{"name": GATE}]
    tas.apply_pod(read_pod(stale))
    [held] = tas.members["default/wl"].values()
    assert held.scheduling_gates == ()  # still the ungated version


class BoundBeforeTheAnswer(ClusterStore):
    """The Kubernetes store's answer to a write whose newer version its informer brought first (the
    kubelet bound the pod at once): resourceVersion 0, "the cache no longer shows it"."""

    def modify(self, kind: str, namespace: str, name: str, change: Any, *, status: bool = False) -> Any:
        current = self.get(kind, namespace, name)
        if current is None or not change(current):
            return None
        written = self.update(current)
        if kind != "Pod":
            return written
        bound = copy.deepcopy(written)
        bound["spec"]["nodeName"] = bound["spec"]["nodeSelector"][HOST]
        self.update(bound)
        written["metadata"]["resourceVersion"] = "0"
        return written


def test_an_ungated_pod_keeps_its_slot_when_the_write_answer_shows_no_version() -> None:
    store = BoundBeforeTheAnswer(":memory:")
    rec, since = admitted(store, [tas_job("train", 4)])
    template = stored_job(store, "train")["spec"]["template"]

    def pod(name: str) -> dict[str, Any]:
        meta = copy.deepcopy(template["metadata"])
        meta.update(name=name, namespace="default", creationTimestamp="2026-01-01T00:00:00Z")
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": copy.deepcopy(template["spec"])}

    for name in ("train-x", "train-y"):  # the first two the Job controller made, ungated onto r1-a
        store.create(pod(name))
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    assert hosts(pods_of_template(store)) == {"r1-a": 2}
    for name in ("train-a", "train-b"):  # the other two, seen before the first two's bindings
        store.create(pod(name))
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            if ev.object["metadata"]["name"] in ("train-a", "train-b"):
                rec.observe(ev, T0 + 2)
    rec.round(T0 + 2)
    assert hosts(pods_of_template(store)) == {"r1-a": 2, "r1-b": 2}  # not three on a host of two CPUs
    store.close()


def pods_of_template(store: SQLiteStore) -> list[dict[str, Any]]:
    return [p for p in store.list("Pod")[0] if not gates(p)]


def test_pods_ungated_onto_a_node_that_then_fails_are_failed_and_their_replacements_go_to_the_new_node() -> None:
    """Kueue's node controller (TASReplaceNodeOnPodTermination): a pod ungated onto a node and still
    Pending there when the node fails (or leaves the assignment) can never run; it is failed with
    UnschedulableOnAssignedNode, and the pod its Job makes instead is ungated onto the replacement."""
    store = ClusterStore(":memory:")
    spare = {"apiVersion": "v1", "kind": "Node",  # rack r2 now holds 5: BestFit takes r1 (4), with a spare host
             "metadata": {"name": "r2-b", "labels": {"cloud.example.com/rack": "r2", HOST: "r2-b", "pool": "tas"}},
             "status": {"allocatable": {"cpu": "2", "pods": "110"}, "conditions": [{"type": "Ready", "status": "True"}]}}
    rec, since = admitted(store, [spare, tas_job("train", 2)])
    job_pods(store, "train", 2)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    [(first, n)] = hosts(pods_of(store, "train")).items()
    assert n == 2 and first.startswith("r1-")
    bound = pods_of(store, "train")[0]  # one is already running there: Kueue fails only Pending pods
    bound["spec"]["nodeName"] = first
    bound = store.update(bound)
    bound["status"] = {"phase": "Running"}
    store.update_status(bound)

    node = store.get("Node", "", first)
    assert node is not None
    node["status"]["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    store.update_status(node)
    since = feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    since = feed(rec, store, since, T0 + 3)
    rec.round(T0 + 3)
    wl = store.list("Workload")[0][0]
    [psa] = wl["status"]["admission"]["podSetAssignments"]
    other = "r1-b" if first == "r1-a" else "r1-a"
    assert psa["topologyAssignment"]["slices"][0]["valuesPerLevel"][0] == {"universal": other}  # replaced in the rack
    by_name = {p["metadata"]["name"]: p for p in pods_of(store, "train")}
    assert by_name[bound["metadata"]["name"]]["status"]["phase"] == "Running"
    [failed] = [p for name, p in by_name.items() if name != bound["metadata"]["name"]]
    assert failed["status"]["phase"] == "Failed"
    assert {(c["type"], c["reason"]) for c in failed["status"]["conditions"]} == {("TerminatedByKueue", "UnschedulableOnAssignedNode")}

    store.create({"apiVersion": "v1", "kind": "Pod",  # the Job controller's replacement, from the template
                  "metadata": {**copy.deepcopy(stored_job(store, "train")["spec"]["template"]["metadata"]),
                               "name": "train-new", "namespace": "default"},
                  "spec": copy.deepcopy(stored_job(store, "train")["spec"]["template"]["spec"])})
    since = feed(rec, store, since, T0 + 4)
    rec.round(T0 + 4)
    new = store.get("Pod", "default", "train-new")
    assert new is not None and not gates(new) and new["spec"]["nodeSelector"][HOST] == other
    store.close()
