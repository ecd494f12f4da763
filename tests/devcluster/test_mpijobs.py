"""The dev-cluster's simulated MPI operator against a real SQLite store, driven by a fake clock
together with the Job controller, kubelet and garbage collector it relies on."""

from __future__ import annotations

from typing import Any

from test_devcluster import Clock, advance, cluster

from hub.devcluster.mpijobs import JOB_ROLE, REPLICA_INDEX
from hub.devcluster.operators import operator_crds
from hub.store import SQLiteStore

NS = "team-a"


def mpijob(name: str = "pi", *, suspend: bool = False, workers: int = 2, launcher_s: str = "20s",
           worker_s: str = "60s", **spec: Any) -> dict[str, Any]:
    def replica(replicas: int, duration: str) -> dict[str, Any]:
        return {"replicas": replicas, "template": {"metadata": {"annotations": {"mkhub.dev/sim-duration": duration}},
                                                   "spec": {"containers": [{"name": "main", "image": "busybox"}]}}}

    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"runPolicy": {"suspend": suspend, "cleanPodPolicy": "Running"},
                     "mpiReplicaSpecs": {"Launcher": replica(1, launcher_s), "Worker": replica(workers, worker_s)},
                     **spec}}


def status(store: SQLiteStore, name: str = "pi") -> dict[str, Any]:
    obj = store.get("MPIJob", NS, name)
    assert obj is not None
    return dict(obj.get("status") or {})


def conds(st: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in st.get("conditions") or []}


def pods(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS)[0]}


def test_the_mpijob_crd_is_installed_with_the_operators() -> None:
    assert "mpijobs.kubeflow.org" in [c["metadata"]["name"] for c in operator_crds()]


def test_workers_and_launcher_run_and_the_launcher_decides_success(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(mpijob())
    dc.step()
    running = pods(store)
    assert sorted(n for n in running if "-worker-" in n) == ["pi-worker-0", "pi-worker-1"]
    worker = running["pi-worker-1"]
    assert worker["metadata"]["labels"][JOB_ROLE] == "worker" and worker["metadata"]["labels"][REPLICA_INDEX] == "1"
    assert (worker["spec"]["hostname"], worker["spec"]["subdomain"], worker["spec"]["restartPolicy"]) == (
        "pi-worker-1", "pi", "Never")
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"
    launcher = store.get("Job", NS, "pi-launcher")
    assert launcher is not None and launcher["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    dc.step()
    st = status(store)
    assert conds(st)["Created"] == ("True", "MPIJobCreated")
    assert conds(st)["Running"] == ("True", "MPIJobRunning")
    assert st["replicaStatuses"] == {"Launcher": {"active": 1}, "Worker": {"active": 2}}
    advance(dc, clock, 21)
    st = status(store)
    assert conds(st)["Succeeded"] == ("True", "MPIJobSucceeded") and conds(st)["Running"][0] == "False"
    assert st["replicaStatuses"]["Launcher"] == {"succeeded": 1} and "completionTime" in st
    # cleanPodPolicy Running: the workers still running are deleted.
    assert not [n for n in pods(store) if "-worker-" in n]


def test_a_failed_launcher_fails_the_mpijob(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = mpijob(runPolicy={"backoffLimit": 0, "cleanPodPolicy": "None"})
    job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["metadata"]["annotations"]["mkhub.dev/sim-exit-code"] = "1"
    store.create(job)
    dc.step()
    advance(dc, clock, 21)
    st = status(store)
    assert conds(st)["Failed"] == ("True", "MPIJobFailed") and "Succeeded" not in conds(st)
    assert sorted(n for n in pods(store) if "-worker-" in n) == ["pi-worker-0", "pi-worker-1"]  # cleanPodPolicy None


def test_a_suspended_mpijob_runs_nothing_until_resumed_with_kueues_template_edits(store: SQLiteStore,
                                                                                 clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(mpijob(suspend=True))
    dc.step()
    assert not pods(store)
    launcher = store.get("Job", NS, "pi-launcher")
    assert launcher is not None and launcher["spec"]["suspend"] is True
    assert conds(status(store))["Suspended"] == ("True", "MPIJobSuspended")
    job = store.get("MPIJob", NS, "pi")
    assert job is not None
    job["spec"]["runPolicy"]["suspend"] = False
    for replica in job["spec"]["mpiReplicaSpecs"].values():  # what Kueue merges in on admission
        replica["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-a"}
    store.update(job)
    dc.step()
    launcher = store.get("Job", NS, "pi-launcher")
    assert launcher is not None and launcher["spec"]["suspend"] is False
    assert launcher["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "node-a"}
    assert pods(store)["pi-worker-0"]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "node-a"}
    assert conds(status(store))["Suspended"] == ("False", "MPIJobResumed")
    # Suspended again (Kueue evicts it): the workers go, the launcher is suspended.
    job = store.get("MPIJob", NS, "pi")
    assert job is not None
    job["spec"]["runPolicy"]["suspend"] = True
    store.update(job)
    dc.step()
    assert not [n for n in pods(store) if "-worker-" in n]
    launcher = store.get("Job", NS, "pi-launcher")
    assert launcher is not None and launcher["spec"]["suspend"] is True
    assert conds(status(store))["Running"][0] == "False"


def test_wait_for_workers_ready_creates_the_launcher_after_the_workers(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(mpijob(launcherCreationPolicy="WaitForWorkersReady"))
    created = store.get("Job", NS, "pi-launcher")
    assert created is None
    dc.step()
    assert store.get("Job", NS, "pi-launcher") is not None
    assert all(p["status"]["phase"] == "Running" for n, p in pods(store).items() if "-worker-" in n)


def test_an_mpijob_managed_by_multikueue_is_left_alone(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(mpijob(runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    dc.step()
    assert not pods(store) and store.get("Job", NS, "pi-launcher") is None and not status(store)
