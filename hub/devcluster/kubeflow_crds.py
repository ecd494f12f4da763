"""The CustomResourceDefinitions of the Kubeflow training operator (``kubeflow.org/v1``) the
dev-cluster simulates (:mod:`.kubeflow`): ``pytorchjobs``, ``tfjobs``, ``xgboostjobs``,
``paddlejobs`` and ``jaxjobs``.

Our own minimal structural schemas, as :mod:`.operators`' for JobSet: the replica specs (a map
of replica type to ``replicas``, ``restartPolicy`` and a pod template kept whole), ``runPolicy``
as the operator and Kueue read it, the kinds' other spec fields kept as written
(``elasticPolicy``, ``successPolicy``...), and the operator's status. The printer columns are the
operator's (``State``: the last condition's type, ``Age``).
"""

from __future__ import annotations

from typing import Any

from hub.api.kubeflow_kind import FAMILY, RESTART_POLICIES, KubeflowKind
from hub.store.interface import Object

KUBEFLOW_GROUP, KUBEFLOW_VERSION = "kubeflow.org", "v1"
Schema = dict[str, Any]
_ANY: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STR: Schema = {"type": "string"}
_INT: Schema = {"type": "integer", "format": "int32"}
_BOOL: Schema = {"type": "boolean"}


def _obj(properties: dict[str, Schema], required: list[str] | None = None) -> Schema:
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}


def _list(items: Schema) -> Schema:
    return {"type": "array", "items": items}


# A pod template: the metadata Kueue edits, the spec kept whole.
_TEMPLATE: Schema = _obj({"metadata": {**_obj({"labels": {"type": "object", "additionalProperties": _STR},
                                               "annotations": {"type": "object", "additionalProperties": _STR}}),
                                       "x-kubernetes-preserve-unknown-fields": True},
                          "spec": _ANY})

_REPLICA: Schema = _obj({"replicas": {**_INT, "minimum": 0}, "restartPolicy": {**_STR, "enum": list(RESTART_POLICIES)},
                         "template": _TEMPLATE})
_RUN_POLICY: Schema = _obj({
    "suspend": {**_BOOL, "default": False},
    "managedBy": _STR,
    "cleanPodPolicy": {**_STR, "enum": ["All", "Running", "None"]},
    "backoffLimit": _INT,
    "activeDeadlineSeconds": {"type": "integer", "format": "int64"},
    "ttlSecondsAfterFinished": _INT,
    "schedulingPolicy": _ANY,
})
_CONDITION: Schema = _obj({name: _STR for name in ("type", "status", "reason", "message", "lastUpdateTime",
                                                    "lastTransitionTime")}, ["type", "status"])
_REPLICA_STATUS: Schema = _obj({"active": _INT, "succeeded": _INT, "failed": _INT, "labelSelector": _ANY,
                                "selector": _STR})
_STATUS: Schema = _obj({
    "conditions": _list(_CONDITION),
    "replicaStatuses": {"type": "object", "additionalProperties": _REPLICA_STATUS},
    "startTime": _STR, "completionTime": _STR, "lastReconcileTime": _STR,
})


def _spec(replica_field: str) -> Schema:
    spec = _obj({replica_field: {"type": "object", "additionalProperties": _REPLICA}, "runPolicy": _RUN_POLICY},
                [replica_field])
    spec["x-kubernetes-preserve-unknown-fields"] = True  # elasticPolicy, nprocPerNode, successPolicy...
    return spec


def _crd(kind: KubeflowKind) -> Object:
    root = _obj({"apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"},
                 "spec": _spec(kind.replica_field), "status": _STATUS})
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{kind.plural}.{KUBEFLOW_GROUP}", "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": KUBEFLOW_GROUP, "scope": "Namespaced",
            "names": {"plural": kind.plural, "singular": kind.kind.lower(), "kind": kind.kind, "listKind": f"{kind.kind}List"},
            "versions": [{"name": KUBEFLOW_VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                          "additionalPrinterColumns": [
                              {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
                              {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
                          "schema": {"openAPIV3Schema": root}}],
        },
    }


def kubeflow_crds() -> list[Object]:
    return [_crd(k) for k in FAMILY.values()]
