"""The CustomResourceDefinitions of the Kubeflow operators the dev-cluster simulates: MPIJob
(``mpijobs.kubeflow.org``, v2beta1; :mod:`.mpijobs`) and Trainer v2's TrainJob,
ClusterTrainingRuntime and TrainingRuntime (``*.trainer.kubeflow.org``, v1alpha1; :mod:`.trainjobs`).

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
         columns: list[tuple[str, str, str]], short_names: list[str], scope: str = "Namespaced") -> Object:
    """A namespaced CRD with a status subresource and printer columns (name, type, JSONPath)."""
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"}
    if short_names:
        names["shortNames"] = short_names
    root = _obj({"apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"}, "spec": spec, "status": status})
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": group, "scope": scope, "names": names,
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


TRAINER_GROUP, TRAINER_VERSION = "trainer.kubeflow.org", "v1alpha1"
_TRAINJOB_SPEC = _obj({
    "runtimeRef": _obj({"name": _STR, "apiGroup": {**_STR, "default": TRAINER_GROUP},
                        "kind": {**_STR, "default": "ClusterTrainingRuntime",
                                 "enum": ["ClusterTrainingRuntime", "TrainingRuntime"]}}, ["name"]),
    "initializer": _ANY,
    "trainer": {**_obj({"image": _STR, "numNodes": _INT, "resourcesPerNode": _ANY}),
                "x-kubernetes-preserve-unknown-fields": True},
    "labels": {"type": "object", "additionalProperties": _STR},
    "annotations": {"type": "object", "additionalProperties": _STR},
    "runtimePatches": _list(_ANY),
    "suspend": {**_BOOL, "default": False},
    "managedBy": {**_STR, "default": "trainer.kubeflow.org/trainjob-controller",
                  "enum": ["trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"]},
}, ["runtimeRef"])
_JOBS_STATUS: Schema = _list(_obj({"name": _STR, **{k: _INT for k in ("ready", "succeeded", "failed", "active",
                                                                     "suspended")}}, ["name"]))
_TRAINJOB_STATUS = _obj({
    "conditions": _list(_obj({"type": _STR, "status": _STR, "reason": _STR, "message": _STR,
                              "lastTransitionTime": _STR, "observedGeneration": {"type": "integer"}}, ["type", "status"])),
    "jobsStatus": _JOBS_STATUS, "trainerStatus": _ANY,
})
_RUNTIME_SPEC = _obj({"mlPolicy": _ANY, "podGroupPolicy": _ANY, "template": _obj({"metadata": _ANY, "spec": _ANY})},
                     ["template"])


def trainer_crds() -> list[Object]:
    state = ("State", "string", ".status.conditions[-1:].type")
    age = ("Age", "date", ".metadata.creationTimestamp")
    return [
        _crd(TRAINER_GROUP, TRAINER_VERSION, "TrainJob", "trainjobs", _TRAINJOB_SPEC, _TRAINJOB_STATUS, [state, age], []),
        _crd(TRAINER_GROUP, TRAINER_VERSION, "ClusterTrainingRuntime", "clustertrainingruntimes", _RUNTIME_SPEC, _obj({}),
             [age], [], scope="Cluster"),
        _crd(TRAINER_GROUP, TRAINER_VERSION, "TrainingRuntime", "trainingruntimes", _RUNTIME_SPEC, _obj({}), [age], []),
    ]


def mpi_trainer_crds() -> list[Object]:
    return [mpijob_crd(), *trainer_crds()]
