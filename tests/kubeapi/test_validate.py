"""hub.kubeapi.validate: objects checked against served OpenAPI documents, field by field."""

from __future__ import annotations

from typing import Any

import pytest

from hub.kubeapi.openapi import openapi_v2, openapi_v3_document
from hub.kubeapi.validate import kind_schema, problems, resolve


def deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                     {"name": "c", "image": "i", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}},
                      "ports": [{"containerPort": 80}],
                      "readinessProbe": {"httpGet": {"port": "http"}}}]}},
                 **spec},
    }


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    doc = openapi_v3_document("apps", "v1")
    assert doc is not None
    found = kind_schema(doc, "apps", "v1", "Deployment")
    assert found is not None
    return found


def test_a_valid_object_has_no_problems(schema: dict[str, Any]) -> None:
    # quantities as numbers or strings, int-or-string ports by name or number
    assert problems(schema, deployment(strategy={"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}})) == []


def test_unknown_fields_wrong_types_and_missing_required_fields_name_their_paths(schema: dict[str, Any]) -> None:
    obj = deployment(replicas=True, paused="no")
    obj["metadata"]["labelz"] = {}
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = [1]
    container["ports"][0]["containerPort"] = 80.5
    del container["name"]
    assert sorted(problems(schema, obj)) == sorted([
        "metadata.labelz: field not declared in schema",
        "spec.replicas: Invalid value: true: must be of type integer",
        'spec.paused: Invalid value: "no": must be of type boolean',
        "spec.template.spec.containers[0].resources.requests.cpu: Invalid value: [...]: must be of type "
        "quantity (a number or a string such as 500m, 1Gi)",
        "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 80.5: must be of type integer",
        "spec.template.spec.containers[0].name: Required value",
    ])


def test_enums_and_preserved_subtrees() -> None:
    schema = {"type": "object", "properties": {
        "mode": {"type": "string", "enum": ["A", "B"]},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }}
    assert problems(schema, {"mode": "C", "free": {"anything": 1}}) == ['mode: Unsupported value: "C": supported values: "A", "B"']


def test_swagger_v2_documents_and_kueue_kinds_resolve_too() -> None:
    found = kind_schema(openapi_v2(), "kueue.x-k8s.io", "v1beta2", "LocalQueue")
    assert found is not None
    assert problems(found, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue", "metadata": {"name": "q"},
                            "spec": {"clusterQueue": 1}}) == ["spec.clusterQueue: Invalid value: 1: must be of type string"]


def test_a_reference_that_does_not_resolve_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot resolve"):
        resolve({"$ref": "#/components/schemas/missing"}, {})
