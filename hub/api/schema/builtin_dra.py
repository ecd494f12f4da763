"""OpenAPI schemas of ``resource.k8s.io/v1`` DeviceClass, ResourceClaim and ResourceClaimTemplate,
under Kubernetes' definition names, written from Kubernetes' API reference.

The fields a device request has are described (what Kueue reads and what DRA's examples set);
opaque driver configuration, constraints and a claim's status are kept as written.
"""

from __future__ import annotations

from .builtin import META, QUANTITY, Schema, _bool, _int, _kind, _list, _list_kind, _map, _obj, _s, ref

RESOURCE = "io.k8s.api.resource.v1"
GROUP = "resource.k8s.io"


def _opaque(description: str) -> Schema:
    return {"description": description, "type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _request_fields(name_doc: str) -> dict[str, Schema]:
    return {
        "name": _s(name_doc),
        "deviceClassName": _s("The DeviceClass whose devices may satisfy this request."),
        "selectors": _list(ref(f"{RESOURCE}.DeviceSelector"), "CEL selectors a device must match.",
                           list_type="atomic"),
        "allocationMode": _s("ExactCount (the default) or All."),
        "count": _int("Devices wanted with ExactCount (default 1).", "int64"),
        "tolerations": _list(_opaque("A toleration of a device taint."), "Device taints tolerated.",
                             list_type="atomic"),
        "capacity": _obj("Capacity wanted from consumable-capacity devices.", {
            "requests": _map("Capacity by name.", ref(QUANTITY))}),
    }


def dra_definitions() -> dict[str, Schema]:
    exact = _request_fields("")
    exact.pop("name")
    exact["adminAccess"] = _bool("Ask for administrative access (monitoring); no exclusive use.")
    return {
        f"{RESOURCE}.DeviceSelector": _obj("A device selector.", {
            "cel": _obj("A CEL expression over a device.", {"expression": _s("The expression.")}, ("expression",)),
        }),
        f"{RESOURCE}.ExactDeviceRequest": _obj("A request for devices of one class.", exact, ("deviceClassName",)),
        f"{RESOURCE}.DeviceSubRequest": _obj("One alternative of a firstAvailable request.",
                                             _request_fields("Name of the alternative."), ("name", "deviceClassName")),
        f"{RESOURCE}.DeviceRequest": _obj("A request for devices: exactly, or the first available alternative.", {
            "name": _s("Name of the request, referenced by containers' resources.claims."),
            "exactly": ref(f"{RESOURCE}.ExactDeviceRequest", "The devices wanted."),
            "firstAvailable": _list(ref(f"{RESOURCE}.DeviceSubRequest"), "Alternatives, in order of preference.",
                                    list_type="atomic"),
        }, ("name",)),
        f"{RESOURCE}.DeviceClaim": _obj("The devices a claim asks for.", {
            "requests": _list(ref(f"{RESOURCE}.DeviceRequest"), "The device requests.", list_type="atomic"),
            "constraints": _list(_opaque("A constraint across requests."), "Constraints.", list_type="atomic"),
            "config": _list(_opaque("Driver configuration."), "Configuration.", list_type="atomic"),
        }),
        f"{RESOURCE}.ResourceClaimSpec": _obj("What a claim asks for.", {
            "devices": ref(f"{RESOURCE}.DeviceClaim", "The devices."),
        }),
        f"{RESOURCE}.ResourceClaimTemplateSpec": _obj("The claim made for each pod.", {
            "metadata": ref(f"{META}.ObjectMeta", "Labels and annotations of the claims made."),
            "spec": ref(f"{RESOURCE}.ResourceClaimSpec", "The claims' spec."),
        }, ("spec",)),
        f"{RESOURCE}.DeviceClassSpec": _obj("Which devices the class selects.", {
            "selectors": _list(ref(f"{RESOURCE}.DeviceSelector"), "CEL selectors a device must match.",
                               list_type="atomic"),
            "config": _list(_opaque("Driver configuration."), "Configuration.", list_type="atomic"),
            "extendedResourceName": _s("The extended resource a pod may request this class's devices by."),
        }),
        f"{RESOURCE}.DeviceClass": _kind(GROUP, "v1", "DeviceClass", "A class of devices.", {
            "spec": ref(f"{RESOURCE}.DeviceClassSpec", "The class's selectors and configuration."),
        }),
        f"{RESOURCE}.DeviceClassList": _list_kind(GROUP, "v1", "DeviceClass", f"{RESOURCE}.DeviceClass"),
        f"{RESOURCE}.ResourceClaim": _kind(GROUP, "v1", "ResourceClaim", "A request for devices.", {
            "spec": ref(f"{RESOURCE}.ResourceClaimSpec", "What is asked for (immutable)."),
            "status": _opaque("The allocation and the pods using the claim."),
        }),
        f"{RESOURCE}.ResourceClaimList": _list_kind(GROUP, "v1", "ResourceClaim", f"{RESOURCE}.ResourceClaim"),
        f"{RESOURCE}.ResourceClaimTemplate": _kind(GROUP, "v1", "ResourceClaimTemplate",
                                                   "The claim made for each pod referencing it.", {
            "spec": ref(f"{RESOURCE}.ResourceClaimTemplateSpec", "The claims' template."),
        }),
        f"{RESOURCE}.ResourceClaimTemplateList": _list_kind(GROUP, "v1", "ResourceClaimTemplate",
                                                            f"{RESOURCE}.ResourceClaimTemplate"),
    }
