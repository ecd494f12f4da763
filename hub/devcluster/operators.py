"""The CustomResourceDefinitions of the operators the dev-cluster simulates: JobSet
(``jobsets.jobset.x-k8s.io``, v1alpha2) and LeaderWorkerSet
(``leaderworkersets.leaderworkerset.x-k8s.io``, v1).

Our own minimal structural schemas, not the operators' generated ones: they name the fields
the simulated controllers (:mod:`.jobsets`, :mod:`.leaderworkersets`) and Kueue's published
examples use, with the defaults the operators' CRDs (or webhooks) give them, and keep pod
and Job templates whole (``x-kubernetes-preserve-unknown-fields``). Fields they do not name
are pruned as kube-apiserver prunes them. Not modelled: the operators' webhooks (their
validation: immutable fields, name lengths) and CEL rules.

:func:`install` stores them when ``mkhub dev-cluster`` starts; a CRD already stored (by an
earlier start, or applied by hand: the operators' own manifests) is left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

from hub.store.interface import AlreadyExists, Object, Store

from .appwrapper_crd import appwrapper_crd
from .kubeflow_crds import kubeflow_crds
from .kubeflow_v2_crds import mpi_trainer_crds
from .kuberay_crds import KUBERAY_CRDS, RAY_GROUP, RAY_VERSION, STATUS_SCHEMA
from .spark_crd import spark_crd

Schema = dict[str, Any]
CRD_API_VERSION = "apiextensions.k8s.io/v1"

JOBSET_GROUP, JOBSET_VERSION, JOBSET_KIND = "jobset.x-k8s.io", "v1alpha2", "JobSet"
LWS_GROUP, LWS_VERSION, LWS_KIND = "leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"
JOBSET_API_VERSION = f"{JOBSET_GROUP}/{JOBSET_VERSION}"
LWS_API_VERSION = f"{LWS_GROUP}/{LWS_VERSION}"

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


# A pod (or Job) template: metadata is what Kueue edits (labels, annotations); the spec is kept whole.
_META: Schema = _obj({"labels": {"type": "object", "additionalProperties": _STR},
                      "annotations": {"type": "object", "additionalProperties": _STR}})
_META["x-kubernetes-preserve-unknown-fields"] = True
_TEMPLATE: Schema = _obj({"metadata": _META, "spec": _ANY})
_CONDITIONS: Schema = _list(_obj({"type": _STR, "status": _STR, "reason": _STR, "message": _STR,
                                  "lastTransitionTime": _STR, "observedGeneration": {"type": "integer"}},
                                 ["type", "status"]))

_JOBSET_SPEC = _obj({
    "replicatedJobs": _list(_obj({
        "name": _STR,
        "groupName": {**_STR, "default": "default"},
        "replicas": {**_INT, "default": 1, "minimum": 0},
        "dependsOn": _list(_obj({"name": _STR, "status": {**_STR, "enum": ["Ready", "Complete"]}}, ["name", "status"])),
        "template": _TEMPLATE,
    }, ["name", "template"])),
    # Defaults below marked "webhook" are JobSet's webhook's, given here by the schema.
    "network": _obj({"enableDNSHostnames": {**_BOOL, "default": True}, "subdomain": _STR,
                     "publishNotReadyAddresses": {**_BOOL, "default": True}}, default={}),  # webhook
    "successPolicy": _obj({"operator": {**_STR, "enum": ["All", "Any"]}, "targetReplicatedJobs": _list(_STR)},
                          ["operator"], default={"operator": "All"}),  # webhook
    "failurePolicy": _obj({"maxRestarts": {**_INT, "minimum": 0},
                           "restartStrategy": {**_STR, "default": "Recreate",
                                               "enum": ["Recreate", "BlockingRecreate", "InPlaceRestart"]},
                           "rules": _list(_ANY)}),
    "startupPolicy": _obj({"startupPolicyOrder": {**_STR, "enum": ["AnyOrder", "InOrder"]}}, ["startupPolicyOrder"],
                          default={"startupPolicyOrder": "AnyOrder"}),  # webhook
    "suspend": _BOOL,
    "coordinator": _ANY,
    "managedBy": _STR,
    "ttlSecondsAfterFinished": {**_INT, "minimum": 0},
})
_JOBSET_STATUS = _obj({
    "conditions": _CONDITIONS,
    "restarts": _INT,
    "restartsCountTowardsMax": _INT,
    "terminalState": _STR,
    "replicatedJobsStatus": _list(_obj({name: _INT for name in ("ready", "succeeded", "failed", "active", "suspended")}
                                       | {"name": _STR}, ["name", "ready", "succeeded", "failed", "active", "suspended"])),
})

_LWS_SPEC = _obj({
    "replicas": {**_INT, "default": 1, "minimum": 0},
    "leaderWorkerTemplate": _obj({
        "leaderTemplate": _TEMPLATE,
        "workerTemplate": _TEMPLATE,
        "size": {**_INT, "default": 1, "minimum": 1},
        "restartPolicy": {**_STR, "default": "RecreateGroupOnPodRestart",
                          "enum": ["RecreateGroupOnPodRestart", "RecreateGroupAfterStart", "Default", "None"]},
        "subGroupPolicy": _ANY,
    }, ["workerTemplate"]),
    "rolloutStrategy": _ANY,
    "startupPolicy": {**_STR, "default": "LeaderCreated", "enum": ["LeaderCreated", "LeaderReady"]},
    "networkConfig": _ANY,
}, ["leaderWorkerTemplate"])
_LWS_STATUS = _obj({"conditions": _CONDITIONS, "readyReplicas": _INT, "updatedReplicas": _INT, "replicas": _INT,
                    "hpaPodSelector": _STR, "observedGeneration": {"type": "integer"}})


def _column(name: str, type_: str, path: str, description: str = "") -> dict[str, Any]:
    out = {"name": name, "type": type_, "jsonPath": path}
    if description:
        out["description"] = description
    return out


def _crd(group: str, version: str, kind: str, plural: str, spec: Schema, status: Schema,
         columns: list[dict[str, Any]], subresources: dict[str, Any], short_names: list[str]) -> Object:
    names: dict[str, Any] = {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"}
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": CRD_API_VERSION, "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}", "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": group, "scope": "Namespaced", "names": names,
            "versions": [{"name": version, "served": True, "storage": True, "subresources": subresources,
                          "additionalPrinterColumns": columns,
                          "schema": {"openAPIV3Schema": _obj({"apiVersion": _STR, "kind": _STR,
                                                              "metadata": {"type": "object"},
                                                              "spec": spec, "status": status})}}],
        },
    }


def jobset_crd() -> Object:
    return _crd(JOBSET_GROUP, JOBSET_VERSION, JOBSET_KIND, "jobsets", _JOBSET_SPEC, _JOBSET_STATUS, [
        _column("TerminalState", "string", ".status.terminalState", "Final state of JobSet"),
        _column("Restarts", "string", ".status.restarts", "Number of restarts"),
        _column("Completed", "string", '.status.conditions[?(@.type=="Completed")].status'),
        _column("Suspended", "string", ".spec.suspend", "JobSet suspended"),
        _column("Age", "date", ".metadata.creationTimestamp", "Time this JobSet was created"),
    ], {"status": {}}, [])


def leaderworkerset_crd() -> Object:
    return _crd(LWS_GROUP, LWS_VERSION, LWS_KIND, "leaderworkersets", _LWS_SPEC, _LWS_STATUS, [
        _column("Ready", "integer", ".status.readyReplicas", "Number of ready replicas"),
        _column("Desired", "integer", ".spec.replicas", "Number of desired replicas"),
        _column("Up-to-date", "integer", ".status.updatedReplicas", "Number of up-to-date replicas"),
        _column("Age", "date", ".metadata.creationTimestamp"),
    ], {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                                "labelSelectorPath": ".status.hpaPodSelector"}}, ["lws"])


def operator_crds() -> list[Object]:
    return [jobset_crd(), leaderworkerset_crd(), *kubeflow_crds(), *mpi_trainer_crds(), appwrapper_crd(), spark_crd(),
            *(_crd(RAY_GROUP, RAY_VERSION, kind, plural, spec, STATUS_SCHEMA, columns, {"status": {}}, [])
              for kind, plural, spec, columns in KUBERAY_CRDS)]  # KubeRay's (hub.devcluster.kuberay)


def install(store: Store, crds: Iterable[Object] | None = None) -> list[str]:
    """Store the operators' CRDs (or ``crds``) that are missing; returns the names of those it stored.
    The API server marks them Established when it starts (:class:`hub.kubeapi.crds.CustomResources`)."""
    created = []
    for crd in operator_crds() if crds is None else crds:
        name = crd["metadata"]["name"]
        if store.get("CustomResourceDefinition", "", name) is not None:
            continue
        with contextlib.suppress(AlreadyExists):  # another writer got there first: theirs stays
            store.create(crd)
            created.append(name)
    return created
