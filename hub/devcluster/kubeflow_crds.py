"""The CustomResourceDefinitions of the Kubeflow operators the dev-cluster simulates: MPIJob
(``mpijobs.kubeflow.org``, v2beta1; :mod:`.mpijobs`).

Our own minimal structural schemas, as :mod:`.operators`' (helpers of the same shape here, so
that the two modules do not import each other): the fields
the simulated operator and Kueue's published examples use, with the defaults the MPI operator
gives them, pod templates kept whole. Not modelled: the operator's validation (mkhub's own
refuses what it refuses: :mod:`hub.api.mpijob_kind`).
"""

from __future__ import annotations

from typing import Any

from hub.store.interface import Object

Schema = dict[str, Any]
_ANY: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STR: Schema = {"type": "string"}
_INT: Schema = {"type": "integer", "format": "int32"}
_BOOL: Schema = {"type": "boolean"}


def _obj(properties: dict[str, Schema], required: list[str] | None = None, **extra: Any) -> Schema:
    out: Schema = {"type": "object", "properties": properties, **extra}
    if required:
        out["required"] = required
    return out


def _list(items: Schema) -> Schema:
    return {"type": "array", "items": items}


# A pod template: metadata is what Kueue edits (labels, annotations); the spec is kept whole.
_META: Schema = {**_obj({"labels": {"type": "object", "additionalProperties": _STR},
                         "annotations": {"type": "object", "additionalProperties": _STR}}),
                 "x-kubernetes-preserve-unknown-fields": True}
_TEMPLATE: Schema = _obj({"metadata": _META, "spec": _ANY})


def _crd(group: str, version: str, kind: str, plural: str, spec: Schema, status: Schema,
         columns: list[tuple[str, str, str]], short_names: list[str]) -> Object:
    """A namespaced CRD with a status subresource and printer columns (name, type, JSONPath)."""
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"}
    if short_names:
        names["shortNames"] = short_names
    root = _obj({"apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"}, "spec": spec, "status": status})
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": group, "scope": "Namespaced", "names": names,
            "versions": [{"name": version, "served": True, "storage": True, "subresources": {"status": {}},
                          "additionalPrinterColumns": [{"name": n, "type": t, "jsonPath": p} for n, t, p in columns],
                          "schema": {"openAPIV3Schema": root}}],
        },
    }

MPIJOB_GROUP, MPIJOB_VERSION, MPIJOB_KIND = "kubeflow.org", "v2beta1", "MPIJob"

_REPLICA: Schema = _obj({"replicas": {**_INT, "minimum": 0}, "restartPolicy": _STR, "template": _TEMPLATE})
_MPIJOB_SPEC = _obj({
    "slotsPerWorker": {**_INT, "default": 1},
    "runLauncherAsWorker": {**_BOOL, "default": False},
    "launcherCreationPolicy": {**_STR, "default": "AtStartup", "enum": ["AtStartup", "WaitForWorkersReady"]},
    "sshAuthMountPath": {**_STR, "default": "/root/.ssh"},
    "mpiImplementation": {**_STR, "default": "OpenMPI", "enum": ["OpenMPI", "Intel", "MPICH"]},
    "runPolicy": _obj({
        "cleanPodPolicy": {**_STR, "default": "None", "enum": ["None", "Running", "All"]},
        "ttlSecondsAfterFinished": _INT, "activeDeadlineSeconds": {"type": "integer"}, "backoffLimit": _INT,
        "schedulingPolicy": _ANY, "suspend": {**_BOOL, "default": False},
        "managedBy": {**_STR, "enum": ["kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"]},
    }, default={}),
    "mpiReplicaSpecs": _obj({"Launcher": _REPLICA, "Worker": _REPLICA}),
}, ["mpiReplicaSpecs"])
_REPLICA_STATUS: Schema = _obj({"active": _INT, "succeeded": _INT, "failed": _INT, "labelSelector": _ANY,
                                "selector": _STR})
_MPIJOB_STATUS = _obj({
    "conditions": _list(_obj({"type": _STR, "status": _STR, "reason": _STR, "message": _STR,
                              "lastUpdateTime": _STR, "lastTransitionTime": _STR}, ["type", "status"])),
    "replicaStatuses": {"type": "object", "additionalProperties": _REPLICA_STATUS},
    "startTime": _STR, "completionTime": _STR, "lastReconcileTime": _STR,
})


def mpijob_crd() -> Object:
    return _crd(MPIJOB_GROUP, MPIJOB_VERSION, MPIJOB_KIND, "mpijobs", _MPIJOB_SPEC, _MPIJOB_STATUS, [
        ("Age", "date", ".metadata.creationTimestamp"), ("State", "string", ".status.conditions[-1:].type"),
    ], ["mpij"])


def kubeflow_crds() -> list[Object]:
    return [mpijob_crd()]
