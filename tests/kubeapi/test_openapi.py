"""OpenAPI documents: what kubectl explain and kubectl's field-validation probe read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.kubeapi.openapi import (
    RESOURCES,
    document_hash,
    group_versions,
    openapi_v2,
    openapi_v3_bytes,
    openapi_v3_document,
    openapi_v3_for_path,
    openapi_v3_index,
)

GVS = [("", "v1"), ("batch", "v1"), ("coordination.k8s.io", "v1"), ("kueue.x-k8s.io", "v1beta1"),
       ("kueue.x-k8s.io", "v1beta2"), ("apiextensions.k8s.io", "v1"),
       # the kinds of a deployment, stored without being acted on (hub.kubeapi.stored)
       ("apps", "v1"), ("rbac.authorization.k8s.io", "v1"), ("admissionregistration.k8s.io", "v1"),
       ("apiregistration.k8s.io", "v1"), ("scheduling.k8s.io", "v1"),
       ("resource.k8s.io", "v1")]  # DRA's kinds (hub.api.dra)


def _resolve(doc: dict[str, Any], node: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Follow $ref and allOf-wrapped refs, as kubectl explain does."""
    while True:
        if "$ref" in node:
            node = doc_defs(doc, prefix)[node["$ref"].removeprefix(prefix)]
        elif "allOf" in node and len(node["allOf"]) == 1:
            node = node["allOf"][0]
        else:
            return node


def doc_defs(doc: dict[str, Any], prefix: str) -> dict[str, Any]:
    return doc["definitions"] if prefix == "#/definitions/" else doc["components"]["schemas"]


def explain(doc: dict[str, Any], group: str, version: str, dotted: str, prefix: str = "#/components/schemas/") -> dict:
    """kubectl explain KIND.FIELD.FIELD: the kind found by x-kubernetes-group-version-kind, then fields."""
    kind_name, *fields = dotted.split(".")
    matches = [
        s for s in doc_defs(doc, prefix).values()
        if any(g == {"group": group, "version": version, "kind": kind_name}
               for g in s.get("x-kubernetes-group-version-kind", []))
    ]
    assert len(matches) == 1, f"{kind_name} has {len(matches)} schemas"
    node = matches[0]
    for field in fields:
        node = _resolve(doc, node, prefix)
        if node.get("type") == "array":
            node = _resolve(doc, node["items"], prefix)
        node = node["properties"][field]
    return _resolve(doc, node, prefix)


def test_index_lists_every_group_version_with_its_hash() -> None:
    index = openapi_v3_index()
    assert sorted(index["paths"]) == sorted(f"apis/{g}/{v}" if g else f"api/{v}" for g, v in GVS)
    assert sorted(group_versions()) == sorted(GVS)
    for key, entry in index["paths"].items():
        url = entry["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{key}?hash=")
        raw = openapi_v3_for_path(url)
        assert raw is not None and url.endswith(document_hash(raw))


def test_unknown_group_version_has_no_document() -> None:
    assert openapi_v3_document("networking.k8s.io", "v1") is None  # apps/v1 is served since Deployments are stored
    assert openapi_v3_for_path("/openapi/v3/apis/networking.k8s.io/v1") is None
    assert openapi_v3_for_path("/openapi/v3/nonsense") is None


@pytest.mark.parametrize(("group", "version"), GVS)
def test_every_kind_has_a_schema_and_every_ref_resolves(group: str, version: str) -> None:
    doc = openapi_v3_document(group, version)
    assert doc is not None and doc["openapi"].startswith("3.")
    schemas = doc["components"]["schemas"]
    kinds = {r.kind for r in RESOURCES if (r.group, r.version) == (group, version)}
    assert kinds
    for kind in kinds:
        assert explain(doc, group, version, kind)["type"] == "object"
        assert explain(doc, group, version, f"{kind}.metadata.name")["type"] == "string"
        items = explain(doc, group, version, f"{kind}List.items")
        assert items["type"] == "array"
        assert _resolve(doc, items["items"], "#/components/schemas/")["x-kubernetes-group-version-kind"][0]["kind"] == kind
    text = json.dumps(doc)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "#/components/schemas/')[1:]}:
        assert ref in schemas, ref


def test_kubectl_explain_clusterqueue_resource_groups() -> None:
    doc = openapi_v3_document("kueue.x-k8s.io", "v1beta2")
    assert doc is not None
    node = explain(doc, "kueue.x-k8s.io", "v1beta2", "ClusterQueue.spec.resourceGroups")
    assert node["type"] == "array"
    assert set(node["items"]["properties"]) == {"coveredResources", "flavors"}
    quota = explain(doc, "kueue.x-k8s.io", "v1beta2", "ClusterQueue.spec.resourceGroups.flavors.resources.nominalQuota")
    assert quota["x-kubernetes-int-or-string"] is True
    v1 = openapi_v3_document("kueue.x-k8s.io", "v1beta1")
    assert v1 is not None
    assert explain(v1, "kueue.x-k8s.io", "v1beta1", "ClusterQueue.spec.cohort")["type"] == "string"


def test_builtin_kinds_resolve_through_references() -> None:
    batch = openapi_v3_document("batch", "v1")
    assert batch is not None
    containers = explain(batch, "batch", "v1", "Job.spec.template.spec.containers")
    assert containers["type"] == "array"
    assert "resources" in _resolve(batch, containers["items"], "#/components/schemas/")["properties"]
    res = explain(batch, "batch", "v1", "Job.spec.template.spec.containers.resources.requests")
    assert res["type"] == "object"
    assert explain(batch, "batch", "v1", "Job.status.succeeded")["type"] == "integer"
    core = openapi_v3_document("", "v1")
    assert core is not None
    assert explain(core, "", "v1", "Pod.spec.nodeName")["type"] == "string"
    lease = openapi_v3_document("coordination.k8s.io", "v1")
    assert lease is not None
    assert explain(lease, "coordination.k8s.io", "v1", "Lease.spec.holderIdentity")["type"] == "string"


def _first_patch(doc: dict[str, Any], group: str, version: str, kind: str) -> dict[str, Any]:
    """kubectl's supportsQueryParamV3: the first PATCH operation whose GVK extension matches."""
    for item in doc["paths"].values():
        op = item.get("patch")
        if op and op.get("x-kubernetes-group-version-kind") == {"group": group, "version": version, "kind": kind}:
            return dict(op)
    raise AssertionError(f"no PATCH for {group}/{version} {kind}")


@pytest.mark.parametrize("res", RESOURCES, ids=lambda r: f"{r.group_version}/{r.kind}")
def test_field_validation_is_advertised_on_patch(res: Any) -> None:
    doc = openapi_v3_document(res.group, res.version)
    assert doc is not None
    op = _first_patch(doc, res.group, res.version, res.kind)
    query = {p["name"] for p in op["parameters"] if p["in"] == "query"}
    assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= query
    types = set(op["requestBody"]["content"])
    assert ("application/strategic-merge-patch+json" in types) == (res.group != "kueue.x-k8s.io")
    assert {"application/merge-patch+json", "application/json-patch+json", "application/apply-patch+yaml"} <= types


def test_status_subresource_paths_follow_the_crds() -> None:
    doc = openapi_v3_document("kueue.x-k8s.io", "v1beta2")
    assert doc is not None
    paths = doc["paths"]
    assert "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{name}/status" in paths
    assert "/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads/{name}/status" in paths
    assert "/apis/kueue.x-k8s.io/v1beta2/workloads" in paths  # list across namespaces
    assert "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/{name}/status" not in paths


def test_v2_has_definitions_and_the_same_kinds() -> None:
    doc = openapi_v2()
    assert doc["swagger"] == "2.0"
    node = explain(doc, "kueue.x-k8s.io", "v1beta2", "ClusterQueue.spec.resourceGroups", prefix="#/definitions/")
    assert node["type"] == "array"
    assert explain(doc, "batch", "v1", "Job.spec.parallelism", prefix="#/definitions/")["type"] == "integer"
    assert '"allOf"' not in json.dumps(doc)


def test_documents_are_cached_and_callers_get_copies() -> None:
    assert openapi_v3_bytes("batch", "v1") is openapi_v3_bytes("batch", "v1")
    first = openapi_v3_document("batch", "v1")
    assert first is not None
    first["paths"].clear()
    again = openapi_v3_document("batch", "v1")
    assert again is not None and again["paths"]


def test_document_and_schema_for_as_the_server_calls_them() -> None:
    from hub.kubeapi.openapi import document, schema_for

    assert document("v3") == openapi_v3_index()
    doc = document("v3/apis/kueue.x-k8s.io/v1beta2")
    assert doc is not None and "io.x-k8s.kueue.v1beta2.Workload" in doc["components"]["schemas"]
    assert document("v3/api/v1") is not None and document("v2") is not None
    assert document("v3/apis/networking.k8s.io/v1") is None and document("v4") is None
    cq = schema_for("kueue.x-k8s.io", "v1beta1", "ClusterQueue")
    assert cq is not None and "cohort" in cq["properties"]["spec"]["properties"]
    job = schema_for("batch", "v1", "Job")  # described field by field (hub.api.schema.builtin_pod)
    assert job is not None and "backoffLimitPerIndex" in job["properties"]["spec"]["properties"]
    pod = schema_for("", "v1", "Pod")  # updated through the API (hub.kubeapi.updaterules)
    assert pod is not None and "schedulingGates" in pod["properties"]["spec"]["properties"]
    assert schema_for("", "v1", "Node") is None  # read-only: never written through the API
    assert schema_for("kueue.x-k8s.io", "v1", "ClusterQueue") is None
