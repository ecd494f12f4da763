"""The CustomResourceDefinitions of the dev-cluster's simulated KubeRay operator (``ray.io/v1``
RayCluster, RayJob, RayService), for :mod:`.operators`.

Our own minimal schemas, not KubeRay's generated ones: the specs and statuses are kept whole
(``x-kubernetes-preserve-unknown-fields``: Kueue's samples use many fields the simulation does
not read), with the defaults KubeRay's CRDs give the fields the simulated controllers
(:mod:`.kuberay`) and Kueue read (worker replicas 0, minReplicas 0, maxReplicas 2147483647,
numOfHosts 1, submissionMode K8sJobMode) and KubeRay's printer columns.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

RAY_GROUP, RAY_VERSION = "ray.io", "v1"
RAY_API_VERSION = f"{RAY_GROUP}/{RAY_VERSION}"
RAYCLUSTER_KIND, RAYJOB_KIND, RAYSERVICE_KIND = "RayCluster", "RayJob", "RayService"

_INT: Schema = {"type": "integer", "format": "int32"}


def _kept(properties: dict[str, Schema] | None = None) -> Schema:
    """An object kept whole, with typed (and defaulted) fields where named."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": properties or {}}


_WORKER_GROUP = _kept({
    "groupName": {"type": "string"},
    "replicas": {**_INT, "default": 0, "minimum": 0},
    "minReplicas": {**_INT, "default": 0, "minimum": 0},
    "maxReplicas": {**_INT, "default": 2147483647, "minimum": 0},
    "numOfHosts": {**_INT, "default": 1},
    "template": _kept(),
})
_CLUSTER_SPEC = _kept({
    "headGroupSpec": _kept({"template": _kept()}),
    "workerGroupSpecs": {"type": "array", "items": _WORKER_GROUP},
    "suspend": {"type": "boolean"},
    "managedBy": {"type": "string"},
    "enableInTreeAutoscaling": {"type": "boolean"},
})
_RAYJOB_SPEC = _kept({
    "rayClusterSpec": _CLUSTER_SPEC,
    "submissionMode": {"type": "string", "default": "K8sJobMode"},
    "suspend": {"type": "boolean"},
    "shutdownAfterJobFinishes": {"type": "boolean"},
    "managedBy": {"type": "string"},
    "submitterPodTemplate": _kept(),
})
_RAYSERVICE_SPEC = _kept({"rayClusterConfig": _CLUSTER_SPEC, "managedBy": {"type": "string"}})


def _column(name: str, type_: str, path: str, priority: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        out["priority"] = priority
    return out


_AGE = _column("age", "date", ".metadata.creationTimestamp")

# (kind, plural, spec schema, printer columns), as :func:`hub.devcluster.operators._crd` takes them.
KUBERAY_CRDS: tuple[tuple[str, str, Schema, list[dict[str, Any]]], ...] = (
    (RAYCLUSTER_KIND, "rayclusters", _CLUSTER_SPEC, [
        _column("desired workers", "integer", ".status.desiredWorkerReplicas"),
        _column("available workers", "integer", ".status.availableWorkerReplicas"),
        _column("cpus", "string", ".status.desiredCPU"),
        _column("memory", "string", ".status.desiredMemory"),
        _column("gpus", "string", ".status.desiredGPU"),
        _column("status", "string", ".status.state"),
        _AGE,
        _column("head pod IP", "string", ".status.head.podIP", 1),
    ]),
    (RAYJOB_KIND, "rayjobs", _RAYJOB_SPEC, [
        _column("job status", "string", ".status.jobStatus"),
        _column("deployment status", "string", ".status.jobDeploymentStatus"),
        _column("ray cluster name", "string", ".status.rayClusterName"),
        _column("start time", "string", ".status.startTime"),
        _column("end time", "string", ".status.endTime"),
        _AGE,
    ]),
    (RAYSERVICE_KIND, "rayservices", _RAYSERVICE_SPEC, [
        _column("service status", "string", ".status.serviceStatus"),
        _column("num serve endpoints", "integer", ".status.numServeEndpoints"),
        _AGE,
    ]),
)
STATUS_SCHEMA: Schema = _kept()
