"""Every kind the API serves is in the OpenAPI v3 document of its group-version.

kubectl validates each object of a file by finding its kind (x-kubernetes-group-version-kind
on an operation) in that document; a kind missing there sends it to the OpenAPI v2 fallback,
which it asks for as protobuf only, and the whole file fails with "the server was unable to
respond with a content type that the client supports". Topology, ProvisioningRequestConfig and
Node were missing.
"""

from __future__ import annotations

import pytest

from hub.kubeapi import resources
from hub.kubeapi.fields import crd_schema
from hub.kubeapi.openapi import openapi_v3_document


def _kinds_in(group: str, version: str) -> set[str]:
    doc = openapi_v3_document(group, version)
    assert doc is not None, f"no document for {group}/{version}"
    found = set()
    for operations in doc["paths"].values():
        for op in operations.values():
            if isinstance(op, dict) and "x-kubernetes-group-version-kind" in op:
                gvk = op["x-kubernetes-group-version-kind"]
                assert (gvk["group"], gvk["version"]) == (group, version)
                found.add(gvk["kind"])
    return found


@pytest.mark.parametrize("res", resources.RESOURCES, ids=lambda r: f"{r.group or 'core'}.{r.kind}")
def test_every_served_kind_is_in_its_document(res: resources.Resource) -> None:
    for version in res.versions:
        assert res.kind in _kinds_in(res.group, version), f"{res.kind} missing from {res.group}/{version}"


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_passive_kueue_kinds_are_checked_against_their_schema(version: str) -> None:
    topology = crd_schema("kueue.x-k8s.io", version, "Topology")
    assert topology is not None
    levels = topology["properties"]["spec"]["properties"]["levels"]
    assert (levels["minItems"], levels["maxItems"]) == (1, 16)
    assert set(levels["items"]["properties"]) == {"nodeLabel"}
    config = crd_schema("kueue.x-k8s.io", version, "ProvisioningRequestConfig")
    assert config is not None
    spec = config["properties"]["spec"]
    assert spec["required"] == ["provisioningClassName"]
    assert spec["properties"]["retryStrategy"]["default"] == {
        "backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}
