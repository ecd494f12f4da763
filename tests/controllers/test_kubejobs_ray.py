"""The hub's KubeRay integrations when the cluster runs them (a store with ``runs_jobs``, as the
Kubernetes store): a RayService is started and stopped through ``spec.rayClusterConfig.suspend``,
a RayCluster's Workload stays admitted while the cluster runs."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, cluster_queue, is_true, local_queue, namespace, seed
from test_kubejobs import ClusterStore, feed, tainted_flavor

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore

RAY = parse_configuration({"integrations": {"frameworks": ["batch/job", "ray.io/raycluster", "ray.io/rayservice"]}})
CLUSTER = {"headGroupSpec": {"template": {"spec": {"containers": [
    {"name": "h", "image": "ray", "resources": {"requests": {"cpu": "1"}}}]}}}}


def ray(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "ray.io/v1", "kind": kind,
            "metadata": {"name": "r", "namespace": "team", "labels": {"kueue.x-k8s.io/queue-name": "lq"}}, "spec": spec}


def hub(store: SQLiteStore) -> HubReconciler:
    rec = HubReconciler(store, RAY, T0, ready_delay=0.0)
    rec.load(T0)
    return rec


def workload(store: SQLiteStore) -> dict[str, Any]:
    (wl,) = store.list("Workload")[0]
    return wl


def test_a_rayservice_runs_and_stops_through_its_cluster_config() -> None:
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(),
                 ray("RayService", {"rayClusterConfig": {**CLUSTER, "suspend": True}})])
    rec = hub(store)
    _, since = store.list("RayService")
    rec.round(T0)
    svc = store.get("RayService", "team", "r")
    assert svc is not None and "suspend" not in svc["spec"]
    config = svc["spec"]["rayClusterConfig"]
    assert config["suspend"] is False and config["headGroupSpec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    wl = workload(store)
    wl["spec"]["active"] = False  # deactivated: Kueue evicts it
    store.update(wl)
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    svc = store.get("RayService", "team", "r")
    assert svc is not None and "suspend" not in svc["spec"]
    assert svc["spec"]["rayClusterConfig"]["suspend"] is True
    assert "nodeSelector" not in svc["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    store.close()


def test_a_rayclusters_workload_stays_admitted_while_it_runs() -> None:
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), ray("RayCluster", {**CLUSTER, "suspend": True})])
    rec = hub(store)
    _, since = store.list("RayCluster")
    rec.round(T0)
    rc = store.get("RayCluster", "team", "r")
    assert rc is not None and rc["spec"]["suspend"] is False
    rc["status"] = {"state": "ready"}
    store.update_status(rc)
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 3600)
    wl = workload(store)
    assert is_true(wl, "Admitted") and rec.engine.is_pods_ready(f"team/{wl['metadata']['name']}")
    assert not is_true(wl, "PodsReady") and not is_true(wl, "Finished")  # no waitForPodsReady: no PodsReady
    store.close()


def test_a_rayjob_on_an_existing_cluster_is_not_queued() -> None:
    """Kueue's RayJob Skip: ``clusterSelector`` (no rayClusterSpec) runs on a cluster that holds the quota."""
    rayjob_config = parse_configuration({"integrations": {"frameworks": ["batch/job", "ray.io/rayjob"]}})
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(),
                 ray("RayJob", {"entrypoint": "python x.py", "clusterSelector": {"ray.io/cluster": "shared"}})])
    rec = HubReconciler(store, rayjob_config, T0, ready_delay=0.0)
    rec.load(T0)
    rec.round(T0)
    assert store.list("Workload")[0] == []
    store.close()
