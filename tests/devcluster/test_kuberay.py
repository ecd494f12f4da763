"""The dev-cluster's simulated KubeRay operator (RayCluster, RayJob, RayService) against a real
SQLite store, driven by a fake clock with the Job controller, kubelet and garbage collector."""

from __future__ import annotations

from typing import Any

from test_devcluster import Clock, advance, cluster

from hub.devcluster.operators import operator_crds
from hub.store import SQLiteStore

NS = "team-a"


def cluster_spec(workers: int = 2, **extra: Any) -> dict[str, Any]:
    def template(name: str) -> dict[str, Any]:
        return {"metadata": {"labels": {"app": "ray"}},
                "spec": {"containers": [{"name": name, "image": "rayproject/ray:2.9.0",
                                         "ports": [{"containerPort": 8265, "name": "dashboard"}]}]}}

    return {"headGroupSpec": {"rayStartParams": {}, "template": template("ray-head")},
            "workerGroupSpecs": [{"groupName": "small-group", "replicas": workers, "minReplicas": 1, "maxReplicas": 5,
                                  "template": template("ray-worker")}], **extra}


def obj(kind: str, name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta, "spec": spec}


def get(store: SQLiteStore, kind: str, name: str) -> dict[str, Any]:
    out = store.get(kind, NS, name)
    assert out is not None, (kind, name)
    return out


def ray_pods(store: SQLiteStore, cluster_name: str) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in store.list("Pod", NS, f"ray.io/cluster={cluster_name}")[0]
            if p["status"].get("phase") not in ("Succeeded", "Failed")}


def test_a_raycluster_gets_head_and_worker_pods_labelled_as_kuberay_and_turns_ready(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    rc = store.create(obj("RayCluster", "rc", cluster_spec()))
    dc.step()
    pods = ray_pods(store, "rc")
    heads = [p for p in pods.values() if p["metadata"]["labels"]["ray.io/node-type"] == "head"]
    workers = [p for p in pods.values() if p["metadata"]["labels"]["ray.io/node-type"] == "worker"]
    assert len(heads) == 1 and len(workers) == 2
    assert heads[0]["metadata"]["name"].startswith("rc-head-")
    assert all(w["metadata"]["name"].startswith("rc-small-group-worker-") for w in workers)
    assert heads[0]["metadata"]["labels"] | {"app": "ray"} == heads[0]["metadata"]["labels"]
    assert {w["metadata"]["labels"]["ray.io/group"] for w in workers} == {"small-group"}
    assert heads[0]["metadata"]["labels"]["ray.io/group"] == "headgroup"
    assert heads[0]["metadata"]["ownerReferences"][0]["uid"] == rc["metadata"]["uid"]
    assert all(p["spec"]["restartPolicy"] == "Always" for p in pods.values())
    st = get(store, "RayCluster", "rc")["status"]
    assert (st["state"], st["readyWorkerReplicas"], st["desiredWorkerReplicas"]) == ("ready", 2, 2)
    assert st["head"]["podName"] == heads[0]["metadata"]["name"] and st["endpoints"] == {"dashboard": "8265"}
    advance(dc, clock, 3600)  # Ray pods run until deleted
    assert len(ray_pods(store, "rc")) == 3 and get(store, "RayCluster", "rc")["status"]["state"] == "ready"


def test_a_raycluster_scales_and_suspends(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(obj("RayCluster", "rc", cluster_spec(workers=3)))
    dc.step()
    assert len(ray_pods(store, "rc")) == 4
    rc = get(store, "RayCluster", "rc")
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    store.update(rc)
    dc.step()
    assert len(ray_pods(store, "rc")) == 2 and get(store, "RayCluster", "rc")["status"]["desiredWorkerReplicas"] == 1
    rc = get(store, "RayCluster", "rc")
    rc["spec"]["suspend"] = True
    store.update(rc)
    dc.step()
    assert ray_pods(store, "rc") == {} and get(store, "RayCluster", "rc")["status"]["state"] == "suspended"
    rc = get(store, "RayCluster", "rc")
    rc["spec"]["suspend"] = False
    store.update(rc)
    dc.step()
    assert len(ray_pods(store, "rc")) == 2 and get(store, "RayCluster", "rc")["status"]["state"] == "ready"


def test_a_rayjob_makes_its_cluster_runs_the_submitter_and_deletes_the_cluster(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    job = store.create(obj("RayJob", "rj", {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True,
                                            "rayClusterSpec": cluster_spec(workers=1)},
                           {"mkhub.dev/sim-duration": "30s"}))
    dc.step()
    st = get(store, "RayJob", "rj")["status"]
    name = st["rayClusterName"]
    assert name.startswith("rj-raycluster-") and st["jobDeploymentStatus"] == "Running" and st["jobStatus"] == "RUNNING"
    rc = get(store, "RayCluster", name)
    assert rc["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert rc["metadata"]["labels"]["ray.io/originated-from-crd"] == "RayJob"
    assert st["rayClusterStatus"]["state"] == "ready"
    submitter = get(store, "Job", "rj")
    assert submitter["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert submitter["spec"]["template"]["spec"]["containers"][0]["name"] == "ray-job-submitter"
    advance(dc, clock, 29)
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Running"
    advance(dc, clock, 1)
    st = get(store, "RayJob", "rj")["status"]
    assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("SUCCEEDED", "Complete") and st["endTime"]
    assert store.get("RayCluster", NS, name) is None
    dc.step()
    assert ray_pods(store, name) == {}  # the garbage collector took the cluster's pods


def test_a_failing_driver_fails_the_rayjob(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(obj("RayJob", "rj", {"submissionMode": "HTTPMode", "shutdownAfterJobFinishes": False,
                                      "rayClusterSpec": cluster_spec(workers=1)},
                     {"mkhub.dev/sim-duration": "5s", "mkhub.dev/sim-exit-code": "1"}))
    dc.step()
    assert store.get("Job", NS, "rj") is None  # HTTPMode: no submitter Job
    advance(dc, clock, 5)
    st = get(store, "RayJob", "rj")["status"]
    assert (st["jobStatus"], st["jobDeploymentStatus"]) == ("FAILED", "Failed")
    assert store.get("RayCluster", NS, st["rayClusterName"]) is not None  # kept: shutdownAfterJobFinishes false


def test_a_suspended_rayjob_has_no_cluster_until_resumed(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(obj("RayJob", "rj", {"suspend": True, "shutdownAfterJobFinishes": True,
                                      "rayClusterSpec": cluster_spec(workers=1)}))
    dc.step()
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Suspended"
    assert store.list("RayCluster", NS)[0] == []
    job = get(store, "RayJob", "rj")
    job["spec"]["suspend"] = False
    store.update(job)
    dc.step()
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Running"
    job = get(store, "RayJob", "rj")
    job["spec"]["suspend"] = True
    store.update(job)
    dc.step()
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Suspended"
    assert store.list("RayCluster", NS)[0] == [] and store.get("Job", NS, "rj") is None


def test_a_rayservice_keeps_a_cluster_running_and_is_ready(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    serve = "applications:\n  - name: fruit_app\n    deployments:\n      - name: MangoStand\n"
    store.create(obj("RayService", "svc", {"serveConfigV2": serve, "rayClusterConfig": cluster_spec(workers=1)}))
    dc.step()
    st = get(store, "RayService", "svc")["status"]
    assert {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "True" and st["serviceStatus"] == "Running"
    assert st["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "RUNNING"
    advance(dc, clock, 3600)
    assert get(store, "RayService", "svc")["status"]["serviceStatus"] == "Running"
    svc = get(store, "RayService", "svc")
    svc["spec"]["rayClusterConfig"]["suspend"] = True
    store.update(svc)
    dc.step()
    assert store.list("RayCluster", NS)[0] == []
    assert {c["type"]: c["status"] for c in get(store, "RayService", "svc")["status"]["conditions"]}["Ready"] == "False"


def test_objects_managed_by_multikueue_are_left_alone(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(obj("RayJob", "rj", {"managedBy": "kueue.x-k8s.io/multikueue", "shutdownAfterJobFinishes": True,
                                      "rayClusterSpec": cluster_spec()}))
    store.create(obj("RayCluster", "rc", {**cluster_spec(), "managedBy": "kueue.x-k8s.io/multikueue"}))
    dc.step()
    assert store.list("RayCluster", NS)[0][0]["metadata"]["name"] == "rc" and len(store.list("RayCluster", NS)[0]) == 1
    assert ray_pods(store, "rc") == {} and "status" not in get(store, "RayJob", "rj")


def test_the_kuberay_crds_are_installed_with_the_other_operators() -> None:
    names = {c["metadata"]["name"] for c in operator_crds()}
    assert {"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"} <= names


def test_the_rayjob_crd_defaults_what_kuberays_does_and_keeps_the_rest() -> None:
    from hub.kubeapi.crds import admit, crd_errors, resource_of

    crd = next(c for c in operator_crds() if c["metadata"]["name"] == "rayjobs.ray.io")
    assert crd_errors(crd) == []
    res = resource_of(crd)
    assert res is not None
    spec = {"entrypoint": "python x.py", "runtimeEnvYAML": "pip: []",
            "rayClusterSpec": {"rayVersion": "2.9.0", **cluster_spec()}}
    spec["rayClusterSpec"]["workerGroupSpecs"][0] = {"groupName": "g", "template": {"spec": {}}}
    out = admit(res, obj("RayJob", "rj", spec), "v1")
    assert out["spec"]["submissionMode"] == "K8sJobMode" and out["spec"]["runtimeEnvYAML"] == "pip: []"
    group = out["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    assert (group["replicas"], group["minReplicas"], group["maxReplicas"], group["numOfHosts"]) == (0, 0, 2147483647, 1)
    assert out["spec"]["rayClusterSpec"]["rayVersion"] == "2.9.0"


def test_a_rayjob_follows_its_cluster_becoming_ready_later(store: SQLiteStore, clock: Clock) -> None:
    """The RayJob is its RayCluster's owner: a change of the cluster alone wakes it."""
    dc = cluster(store, clock)
    spec = cluster_spec(workers=1)
    for template in (spec["headGroupSpec"]["template"], spec["workerGroupSpecs"][0]["template"]):
        template["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    store.create(obj("RayJob", "rj", {"shutdownAfterJobFinishes": True, "rayClusterSpec": spec}))
    dc.step()
    name = get(store, "RayJob", "rj")["status"]["rayClusterName"]
    advance(dc, clock, 10)
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Initializing"
    for pod in ray_pods(store, name).values():
        pod["spec"]["schedulingGates"] = []
        store.update(pod)
    dc.step()
    assert get(store, "RayCluster", name)["status"]["state"] == "ready"
    assert get(store, "RayJob", "rj")["status"]["jobDeploymentStatus"] == "Running"
