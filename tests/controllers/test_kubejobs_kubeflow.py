"""A PyTorchJob on the job framework in the hub: on a store whose cluster runs it (the Kubernetes
store), admission injects the flavors per replica type and unsuspends ``spec.runPolicy.suspend``,
eviction suspends and restores; in embedded mode the hub runs it and writes the training
operator's status."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, cluster_queue, is_true, local_queue, namespace, seed
from test_kubejobs import ClusterStore, feed, tainted_flavor

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore

PYTORCH = parse_configuration({"integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]}})


def pytorchjob(workers: int = 2) -> dict[str, Any]:
    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "template": {"metadata": {"annotations": {"mkhub.dev/sim-duration": "1s"}}, "spec": {
            "containers": [{"name": "pytorch", "image": "img", "resources": {"requests": {"cpu": "1"}}}]}}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "pt", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
            "spec": {"pytorchReplicaSpecs": {"Worker": replica(workers), "Master": replica(1)},
                     "runPolicy": {"suspend": True}}}


def the_job(store: SQLiteStore) -> dict[str, Any]:
    got = store.get("PyTorchJob", "team", "pt")
    assert got is not None
    return got


def the_workload(store: SQLiteStore) -> dict[str, Any]:
    (wl,) = store.list("Workload")[0]
    return wl


def test_admission_runs_it_in_the_cluster_and_eviction_stops_it() -> None:
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(3), local_queue(), pytorchjob()])
    rec = HubReconciler(store, PYTORCH, T0, ready_delay=0.0)
    rec.load(T0)
    _, since = store.list("PyTorchJob")
    rec.round(T0)
    wl = the_workload(store)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]
    stored = the_job(store)
    assert stored["spec"]["runPolicy"]["suspend"] is False and "suspend" not in stored["spec"]
    for rs in stored["spec"]["pytorchReplicaSpecs"].values():
        assert rs["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    assert "status" not in stored  # the training operator writes it
    stored["status"] = {"conditions": [{"type": "Running", "status": "True", "reason": "R", "message": "m"}]}
    store.update_status(stored)
    since = feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    wl = the_workload(store)  # ready, with no PodsReady written: Kueue writes it only with waitForPodsReady
    assert rec.engine.is_pods_ready(f"team/{wl['metadata']['name']}") and not is_true(wl, "PodsReady")

    wl = the_workload(store)
    wl["spec"]["active"] = False
    store.update(wl)
    feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    stored = the_job(store)
    assert stored["spec"]["runPolicy"]["suspend"] is True
    assert all("nodeSelector" not in rs["template"]["spec"] for rs in stored["spec"]["pytorchReplicaSpecs"].values())
    store.close()


def test_a_pytorchjob_created_running_is_suspended_until_admitted() -> None:
    store = ClusterStore(":memory:")
    running = pytorchjob(workers=5)
    running["spec"]["runPolicy"] = {}
    seed(store, [namespace(), tainted_flavor(), cluster_queue(3), local_queue(), running])
    rec = HubReconciler(store, PYTORCH, T0, ready_delay=0.0)
    rec.load(T0)
    rec.round(T0)
    assert the_job(store)["spec"]["runPolicy"]["suspend"] is True  # 6 cpu asked, 3 there: stopped
    store.close()


def test_embedded_the_hub_runs_it_and_writes_the_operators_status() -> None:
    store = SQLiteStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(3), local_queue(), pytorchjob()])
    rec = HubReconciler(store, PYTORCH, T0, ready_delay=0.0)
    rec.load(T0)
    rec.round(T0)
    assert the_job(store)["spec"]["runPolicy"]["suspend"] is False
    for t in range(1, 40):
        rec.round(T0 + t)
        if is_true(the_workload(store), "Finished"):
            break
    rec.round(T0 + 41)
    status = the_job(store)["status"]
    types = {c["type"]: c["status"] for c in status["conditions"]}
    assert types["Created"] == "True" and types["Succeeded"] == "True", status
    assert status["replicaStatuses"] == {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    store.close()
