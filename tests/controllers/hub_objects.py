"""Manifests for the hub reconciler's tests (no processes, no sleeping: time is passed in)."""

from __future__ import annotations

from typing import Any

from hub.store import SQLiteStore

T0 = 1_800_000_000.0  # an arbitrary wall-clock start; every test passes time explicitly


def namespace(name: str = "team") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def flavor(name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name}}


def cluster_queue(cpu: int | str = 3, name: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}]}
            ],
        },
    }


def local_queue(name: str = "lq", ns: str = "team", cq: str = "cq") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


_POD = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}


def workload(name: str, duration: str = "10s", ns: str = "team", created: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "annotations": {"mkhub.dev/sim-duration": duration}}
    if created:
        meta["creationTimestamp"] = created
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": _POD}], **spec},
    }


def job(name: str, duration: str = "10s", ns: str = "team", parallelism: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"kueue.x-k8s.io/queue-name": "lq"},
            "annotations": {"mkhub.dev/sim-duration": duration},
        },
        "spec": {"parallelism": parallelism, "suspend": True, "template": _POD},
    }


def setup_objects(cpu: int = 3) -> list[dict[str, Any]]:
    return [namespace(), flavor(), cluster_queue(cpu), local_queue()]


def seed(store: SQLiteStore, objects: list[dict[str, Any]]) -> None:
    with store.batch():
        for obj in objects:
            store.create(obj)


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def is_true(obj: dict[str, Any], type_: str) -> bool:
    return conditions(obj).get(type_) == "True"
