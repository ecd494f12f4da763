"""The dev-cluster's simulated Kubeflow training operator (hub.devcluster.kubeflow) against a real
SQLite store driven by a fake clock: pods per replica, suspend, status, success and failure as the
operator decides them."""

from __future__ import annotations

from typing import Any

from test_devcluster import Clock, advance, cluster

from hub.api.schema.columns import evaluate
from hub.devcluster.kubeflow import controllers
from hub.devcluster.kubeflow_crds import kubeflow_crds
from hub.devcluster.nodes import Node
from hub.devcluster.runtime import DevCluster
from hub.kubeapi.crds import admit, crd_errors, resource_of
from hub.kubeapi.tables import json_path
from hub.store import SQLiteStore

NS = "team-a"


def replica(n: int, container: str, **extra: Any) -> dict[str, Any]:
    return {"replicas": n, "restartPolicy": "OnFailure", "template": {
        "metadata": {"labels": {"app": "train"}},
        "spec": {"containers": [{"name": container, "image": "img"}], **extra}}}


def pytorchjob(name: str = "pt", workers: int = 2, suspend: bool | None = None, **master: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Master": replica(1, "pytorch", **master),
                                                    "Worker": replica(workers, "pytorch")}}
    if suspend is not None:
        spec["runPolicy"] = {"suspend": suspend}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS)[0]}


def the(store: SQLiteStore, kind: str = "PyTorchJob", name: str = "pt") -> dict[str, Any]:
    obj = store.get(kind, NS, name)
    assert obj is not None
    return obj


def conds(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def test_pods_per_replica_with_the_operators_names_and_labels(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    created = store.create(pytorchjob())
    dc.step()
    got = pods(store)
    assert sorted(got) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    worker = got["pt-worker-1"]
    assert worker["metadata"]["labels"] == {"app": "train", "training.kubeflow.org/job-name": "pt",
                                            "training.kubeflow.org/operator-name": "pytorchjob-controller",
                                            "training.kubeflow.org/replica-type": "worker",
                                            "training.kubeflow.org/replica-index": "1"}
    assert got["pt-master-0"]["metadata"]["labels"]["training.kubeflow.org/job-role"] == "master"
    assert worker["spec"]["restartPolicy"] == "OnFailure"
    ref = worker["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["uid"], ref["controller"]) == ("PyTorchJob", created["metadata"]["uid"], True)
    status = the(store)["status"]
    assert conds(the(store)) == {"Created": "True", "Running": "True"}
    assert status["replicaStatuses"] == {"Master": {"active": 1}, "Worker": {"active": 2}}
    assert status["conditions"][-1]["reason"] == "PyTorchJobRunning"  # the State column shows the last one

    advance(dc, clock, 11)  # the pods' run time (10s) is over: the Master succeeded
    obj = the(store)
    assert conds(obj) == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert obj["status"]["replicaStatuses"] == {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    assert obj["status"]["conditions"][-1]["type"] == "Succeeded" and obj["status"]["completionTime"]
    assert [(c["type"], c["reason"]) for c in obj["status"]["conditions"]] == [
        ("Created", "PyTorchJobCreated"), ("Running", "PyTorchJobRunning"), ("Succeeded", "PyTorchJobSucceeded")]
    events = {e["reason"] for e in store.list("Event", NS)[0] if e["involvedObject"]["kind"] == "PyTorchJob"}
    assert events == {"PyTorchJobCreated", "PyTorchJobRunning", "PyTorchJobSucceeded"}


def test_suspend_creates_no_pods_and_deletes_running_ones(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(pytorchjob(suspend=True))
    dc.step()
    assert pods(store) == {}
    obj = the(store)
    assert conds(obj) == {"Created": "True", "Suspended": "True"} and "startTime" not in obj["status"]
    obj["spec"]["runPolicy"]["suspend"] = False
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]  # Kueue's
    store.update(obj)
    dc.step()
    got = pods(store)
    assert len(got) == 3 and got["pt-worker-0"]["spec"]["tolerations"] == [{"operator": "Exists"}]
    assert conds(the(store)) == {"Created": "True", "Suspended": "False", "Running": "True"}
    assert the(store)["status"]["startTime"]
    obj = the(store)
    obj["spec"]["runPolicy"]["suspend"] = True
    store.update(obj)
    dc.step()
    advance(dc, clock, 1)
    assert pods(store) == {}
    assert conds(the(store)) == {"Created": "True", "Suspended": "True", "Running": "False"}


def test_a_failed_pod_fails_the_job(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = pytorchjob()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"] = {
        "mkhub.dev/sim-exit-code": "3", "mkhub.dev/sim-duration": "2s"}
    store.create(job)
    dc.step()
    advance(dc, clock, 3)
    obj = the(store)
    assert conds(obj)["Failed"] == "True" and "Succeeded" not in conds(obj)
    failed = next(c for c in obj["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == ("PyTorchJobFailed",
                                                     "PyTorchJob team-a/pt has failed because Worker replica(s) failed.")


def test_success_is_the_operators_per_kind(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    # JAXJob: only Workers, all of them; TFJob without a Chief: worker 0, whatever the others do.
    slow = {"mkhub.dev/sim-duration": "60s"}
    jax = {"apiVersion": "kubeflow.org/v1", "kind": "JAXJob", "metadata": {"name": "jax", "namespace": NS},
           "spec": {"jaxReplicaSpecs": {"Worker": replica(2, "jax")}}}
    tf = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf", "namespace": NS},
          "spec": {"tfReplicaSpecs": {"PS": replica(1, "tensorflow"), "Worker": replica(2, "tensorflow")}}}
    tf["spec"]["tfReplicaSpecs"]["PS"]["template"]["metadata"]["annotations"] = slow
    store.create(jax)
    store.create(tf)
    dc.step()
    pod = pods(store)["tf-worker-1"]  # worker 1 runs on
    pod["metadata"]["annotations"] = slow
    store.update(pod)
    dc.step()
    assert sorted(pods(store)) == ["jax-worker-0", "jax-worker-1", "tf-ps-0", "tf-worker-0", "tf-worker-1"]
    advance(dc, clock, 11)
    assert conds(the(store, "JAXJob", "jax"))["Succeeded"] == "True"
    assert conds(the(store, "TFJob", "tf"))["Succeeded"] == "True"
    assert the(store, "TFJob", "tf")["status"]["replicaStatuses"] == {"PS": {"active": 1},
                                                                      "Worker": {"active": 1, "succeeded": 1}}


def test_clean_pod_policy_running_deletes_the_pods_left_running(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = pytorchjob()
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]["annotations"] = {"mkhub.dev/sim-duration": "1h"}
    store.create(job)
    dc.step()
    advance(dc, clock, 11)
    assert conds(the(store))["Succeeded"] == "True"
    dc.step()
    assert sorted(pods(store)) == ["pt-master-0"]


def test_jobs_managed_by_multikueue_are_left_alone_and_restarts_make_no_second_pod(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = pytorchjob()
    job["spec"]["runPolicy"] = {"managedBy": "kueue.x-k8s.io/multikueue"}
    store.create(job)
    store.create(pytorchjob("other"))
    dc.step()
    assert sorted(pods(store)) == ["other-master-0", "other-worker-0", "other-worker-1"] and "status" not in the(store)
    uids = {n: p["metadata"]["uid"] for n, p in pods(store).items()}
    again = DevCluster(store, (Node("node-a"),), clock=clock, default_duration=10.0)
    again.start()
    again.step()
    assert {n: p["metadata"]["uid"] for n, p in pods(store).items()} == uids


def test_without_operators_nothing_runs_them(store: SQLiteStore, clock: Clock) -> None:
    dc = DevCluster(store, (Node("node-a"),), clock=clock, operators=False)
    dc.start()
    store.create(pytorchjob())
    dc.step()
    assert pods(store) == {}
    assert set(controllers(store, clock)) == {"PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"}


def test_the_crds_serve_the_family_with_the_operators_columns() -> None:
    for crd in kubeflow_crds():
        assert crd_errors(crd) == []
    res = resource_of(kubeflow_crds()[0])
    assert res is not None and (res.kind, res.group, res.plural, res.has_status) == (
        "PyTorchJob", "kubeflow.org", "pytorchjobs", True)
    assert [c.name for c in res.table_columns("v1")][:3] == ["Name", "State", "Age"]
    state = {"status": {"conditions": [{"type": "Created"}, {"type": "Running"}]}}
    assert json_path(state, ".status.conditions[-1:].type") == "Running"  # kubectl's slice: the last condition
    assert evaluate(".status.conditions[-1:].type", state) == ["Running"]
    out = admit(res, {**pytorchjob(), "spec": {**pytorchjob()["spec"], "nprocPerNode": "2", "runPolicy": {}}}, "v1")
    assert out["spec"]["runPolicy"] == {"suspend": False}  # the operator's default
    assert out["spec"]["nprocPerNode"] == "2" and out["spec"]["pytorchReplicaSpecs"] == pytorchjob()["spec"]["pytorchReplicaSpecs"]
