"""The CustomResourceDefinition of the dev-cluster's simulated AppWrapper controller
(:mod:`.appwrappers`): ``appwrappers.workload.codeflare.dev``, our own minimal schema (components
kept whole, as the real CRD keeps them with ``x-kubernetes-preserve-unknown-fields``)."""

from __future__ import annotations

from typing import Any

from hub.store.interface import Object

KIND = "AppWrapper"

_STR = {"type": "string"}
_ANY = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}


def appwrapper_crd() -> Object:
    """``appwrappers.workload.codeflare.dev``: served v1beta2, status subresource, short name ``aw``
    and the AppWrapper project's printer columns."""
    component = _obj({
        "annotations": {"type": "object", "additionalProperties": _STR},
        "podSets": {"type": "array", "items": _obj({"path": _STR, "replicas": {"type": "integer", "format": "int32"},
                                                    "annotations": {"type": "object", "additionalProperties": _STR}},
                                                   ["path"])},
        "podSetInfos": {"type": "array", "items": _ANY},
        "template": {**_ANY, "x-kubernetes-embedded-resource": True},
    }, ["template"])
    conditions = {"type": "array", "items": _obj({"type": _STR, "status": _STR, "reason": _STR, "message": _STR,
                                                  "lastTransitionTime": _STR}, ["type", "status"])}
    schema = _obj({
        "apiVersion": _STR, "kind": _STR, "metadata": {"type": "object"},
        "spec": _obj({"components": {"type": "array", "items": component}, "suspend": {"type": "boolean"},
                      "managedBy": _STR}, ["components"]),
        "status": _obj({"phase": _STR, "resettingCount": {"type": "integer", "format": "int32"},
                        "conditions": conditions, "componentStatus": {"type": "array", "items": _ANY}}),
    })

    def column(name: str, path: str, type_: str = "string") -> dict[str, Any]:
        return {"name": name, "type": type_, "jsonPath": path}

    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "appwrappers.workload.codeflare.dev",
                     "labels": {"app.kubernetes.io/managed-by": "mkhub-dev-cluster"}},
        "spec": {
            "group": "workload.codeflare.dev", "scope": "Namespaced",
            "names": {"plural": "appwrappers", "singular": "appwrapper", "kind": KIND, "listKind": "AppWrapperList",
                      "shortNames": ["aw"]},
            "versions": [{"name": "v1beta2", "served": True, "storage": True, "subresources": {"status": {}},
                          "additionalPrinterColumns": [
                              column("Status", ".status.phase"),
                              column("Quota Reserved", '.status.conditions[?(@.type=="QuotaReserved")].status'),
                              column("Resources Deployed", '.status.conditions[?(@.type=="ResourcesDeployed")].status'),
                              column("Unhealthy", '.status.conditions[?(@.type=="Unhealthy")].status'),
                              column("Age", ".metadata.creationTimestamp", "date")],
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }
