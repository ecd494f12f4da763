"""hub.kubeapi.structural and hub.kubeapi.crds as units: defaults, validation messages, CRD reading."""

from __future__ import annotations

from typing import Any

from hub.kubeapi import crds, structural

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "exclusiveMaximum": True, "maximum": 4},
                "mode": {"type": "string", "default": "fast"},
                "limits": {"type": "object", "additionalProperties": {"type": "integer", "default": 0}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"w": {"type": "number", "default": 1.5}}}},
                "maybe": {"type": "string", "nullable": True},
                "opaque": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
            },
        },
    },
}


def lines(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in structural.validate(SCHEMA, obj)]


def test_defaults_fill_missing_fields_and_nulls_that_are_not_nullable() -> None:
    spec = {"size": 2, "mode": None, "items": [{}, {"w": 3}], "maybe": None}
    out = structural.apply_defaults(SCHEMA, {"spec": spec})
    assert out["spec"]["mode"] == "fast" and out["spec"]["maybe"] is None
    assert out["spec"]["items"] == [{"w": 1.5}, {"w": 3}]


def test_validation_messages_as_kube_apiserver_words_them() -> None:
    assert lines({"spec": {}}) == ["spec.size: Required value"]
    assert lines({"spec": {"size": 4}}) == ["spec.size: Invalid value: 4: spec.size in body should be less than 4"]
    assert lines({"spec": {"size": 0}}) == ["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
    assert lines({"spec": {"size": 2, "limits": {"cpu": "x"}}}) == [
        'spec.limits.cpu: Invalid value: "string": spec.limits.cpu in body must be of type integer: "string"']
    assert lines({"spec": {"size": 2, "port": True}}) == [
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"']
    assert lines({"spec": {"size": 2, "port": "http", "opaque": {"any": [1, {"thing": None}]}, "maybe": None}}) == []
    assert lines({"spec": {"size": True}}) == [
        'spec.size: Invalid value: "boolean": spec.size in body must be of type integer: "boolean"']


def test_a_crd_of_a_builtin_kind_serves_nothing_and_versions_sort_as_kubernetes_sorts_them() -> None:
    crd = {"metadata": {"name": "jobs.example.com"}, "spec": {
        "group": "example.com", "scope": "Namespaced", "names": {"plural": "jobs", "kind": "Job"},
        "versions": [{"name": "v1", "served": True, "storage": True}]}}
    assert crds.resource_of(crd) is None
    crd["spec"]["names"] = {"plural": "widgets", "kind": "Widget"}
    crd["spec"]["versions"] = [{"name": n, "served": True, "storage": n == "v1"} for n in ("v1alpha1", "v1", "v2beta1", "v1beta2")]
    res = crds.resource_of(crd)
    assert res is not None and res.versions == ("v1", "v2beta1", "v1beta2", "v1alpha1") and res.storage == "v1"
    assert crds.crd_errors({**crd, "metadata": {"name": "widgets.example.com"}}) == []


def test_patterns_are_read_as_go_writes_them() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$"},
                                               "word": {"type": "string", "pattern": "^[[:alpha:]]+\\z"},
                                               "any": {"type": "string", "pattern": "^\\p{L}+$"}}}
    assert structural.validate(schema, {"name": "ProvisioningRequestConfig", "word": "abc", "any": "x1"}) == []
    assert [e.path for e in structural.validate(schema, {"name": "-x", "word": "ab1"})] == ["name", "word"]
    crd = {"metadata": {"name": "widgets.example.com"}, "spec": {
        "group": "example.com", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}}
    assert crds.crd_errors(crd) == []  # RE2 syntax Python lacks (\p{L}) is not refused: the check is skipped
