"""DRA as Kueue accounts for it (hub.api.dra): the kinds' checks, the Configuration's
deviceClassMappings, and the devices a pod template's resource claims count per pod."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.config import parse_configuration
from hub.api.dra import CLAIMS_NOT_SUPPORTED, ClaimSpec, DeviceClassMapping, pod_set_device_requests
from hub.api.errors import ValidationError
from hub.api.registry import parse_object

MAPPINGS = (DeviceClassMapping("example.com/gpu", ("gpu.example.com", "a100.example.com")),)


def template(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"spec": {"devices": {"requests": list(requests)}}}}


def claims_of(*manifests: dict[str, Any]) -> dict[tuple[str, str, str], ClaimSpec]:
    out = {}
    for m in manifests:
        obj = parse_object(m)
        out[(obj.kind, obj.meta.namespace, obj.meta.name)] = obj.claim
    return out


def pod(*claims: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "c", "image": "x"}], "resourceClaims": list(claims)}}


def count(pod_template: dict[str, Any], *templates: dict[str, Any]) -> tuple[dict[str, int], str]:
    known = claims_of(*templates)
    return pod_set_device_requests(0, "main", pod_template, "team-a", MAPPINGS,
                                   lambda kind, ns, name: known.get((kind, ns, name)))


def test_devices_are_counted_per_class_and_summed_over_claims() -> None:
    two = template("two", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}})
    one = template("one", {"name": "gpu", "exactly": {"deviceClassName": "a100.example.com"}},  # count: 1
                   {"name": "watch", "exactly": {"deviceClassName": "gpu.example.com", "adminAccess": True}})
    got = count(pod({"name": "a", "resourceClaimTemplateName": "two"}, {"name": "b", "resourceClaimTemplateName": "one"}),
                two, one)
    assert got == ({"example.com/gpu": 3}, "")
    assert count({"spec": {"containers": []}}) == ({}, "")


def test_kueue_messages_for_what_it_does_not_admit() -> None:
    fpga = template("fpga", {"name": "f", "exactly": {"deviceClassName": "fpga.example.com"}})
    assert count(pod({"name": "f", "resourceClaimTemplateName": "fpga"}), fpga)[1] == (
        'spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: Not found: '
        '"DeviceClass fpga.example.com is not mapped in DRA configuration for podset main"')
    assert count(pod({"name": "g", "resourceClaimTemplateName": "missing"}))[1] == (
        "spec.podSets[0].template.spec.resourceClaims[0]: Internal error: failed to get claim spec for "
        'ResourceClaimTemplate missing in podset main: resourceclaimtemplates.resource.k8s.io "missing" not found')
    every = template("every", {"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All"}})
    assert "AllocationMode 'All' is not supported" in count(pod({"name": "g", "resourceClaimTemplateName": "every"}), every)[1]
    first = template("first", {"name": "g", "firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]})
    assert "FirstAvailable device selection is not supported" in count(
        pod({"name": "g", "resourceClaimTemplateName": "first"}), first)[1]
    assert count(pod({"name": "g", "resourceClaimName": "shared"}))[1] == CLAIMS_NOT_SUPPORTED


def test_device_requests_are_checked_as_kube_apiserver_checks_them() -> None:
    bad = template("bad", {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": 0}},
                   {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "All", "count": 2}},
                   {"name": "Bad_Name"})
    with pytest.raises(ValidationError) as err:
        parse_object(bad)
    text = str(err.value)
    assert "spec.spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero" in text
    assert 'spec.spec.devices.requests[1].name: Duplicate value: "gpu"' in text
    assert "spec.spec.devices.requests[1].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'" in text
    assert "spec.spec.devices.requests[2].name: Invalid value" in text
    assert "spec.spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required" in text
    with pytest.raises(ValidationError, match=r"spec.spec.devices.requests\[0\].exactly.deviceClassName: Required value"):
        parse_object(template("none", {"name": "gpu", "exactly": {}}))


def test_configuration_device_class_mappings() -> None:
    config = parse_configuration({"resources": {"deviceClassMappings": [
        {"name": "example.com/gpu", "deviceClassNames": ["gpu-a100.example.com", "gpu-h100.example.com"]}]}})
    assert config.device_class_mappings == (
        DeviceClassMapping("example.com/gpu", ("gpu-a100.example.com", "gpu-h100.example.com")),)
    for mappings, message in (
        ([{"name": "a", "deviceClassNames": ["x"]}, {"name": "b", "deviceClassNames": ["x"]}],
         'resources.deviceClassMappings[1].deviceClassNames[0]: Invalid value: "x": device class already mapped to resource a'),
        ([{"name": "a", "deviceClassNames": []}], "resources.deviceClassMappings[0].deviceClassNames: Required value"),
        ([{"name": "a", "deviceClassNames": ["x"]}, {"name": "a", "deviceClassNames": ["y"]}],
         'resources.deviceClassMappings[1].name: Duplicate value: "a"'),
        ([{"name": "gpu.memory", "deviceClassNames": ["x"], "sources": [{"counter": {"name": "memory"}}]}],
         "resources.deviceClassMappings[0].sources: Unsupported value: mkhub counts devices only"),
    ):
        with pytest.raises(ValidationError) as err:
            parse_configuration({"resources": {"deviceClassMappings": mappings}})
        assert message in str(err.value)
