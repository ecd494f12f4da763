"""Pure pieces of hub/kubeapi: patches, managed fields, discovery documents, protobuf bodies, field selectors."""

from __future__ import annotations

from typing import Any

import pytest

from hub.kubeapi import discovery, managed, protobuf
from hub.kubeapi.errors import ApiError
from hub.kubeapi.patch import json_patch, merge_patch, strategic_merge_patch
from hub.kubeapi.reads import parse_field_selector

from .conftest import Env


def test_merge_patch_rfc7386() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"b": None, "e": 3}, "d": [2]}) == {"a": {"c": 2, "e": 3}, "d": [2]}


def test_json_patch_operations() -> None:
    doc = {"a": [1, 2], "b": {"c": "x"}}
    out = json_patch(doc, [
        {"op": "add", "path": "/a/-", "value": 3},
        {"op": "move", "from": "/b/c", "path": "/d"},
        {"op": "copy", "from": "/d", "path": "/e~1f"},
        {"op": "test", "path": "/a/2", "value": 3},
    ])
    assert out == {"a": [1, 2, 3], "b": {}, "d": "x", "e/f": "x"} and doc == {"a": [1, 2], "b": {"c": "x"}}
    with pytest.raises(ApiError) as failed:
        json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])
    assert failed.value.code == 422


def test_strategic_merge_patch_directives() -> None:
    live: dict[str, Any] = {"spec": {"containers": [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}]},
                                                   {"name": "b", "image": "2"}],
                                    "tolerations": [{"key": "k"}], "finalizers": ["f1"]}}
    patch = {"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}, {"name": "b", "$patch": "delete"}],
        "tolerations": [{"key": "other"}],
        "finalizers": ["f2"],
    }}
    out = strategic_merge_patch(live, patch)["spec"]
    assert out["containers"] == [{"name": "a", "image": "1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]
    assert out["tolerations"] == [{"key": "other"}]  # no patch strategy: replaced
    assert out["finalizers"] == ["f1", "f2"]
    replaced = strategic_merge_patch(live, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced == {"spec": {"containers": []}}
    retained = strategic_merge_patch({"s": {"a": 1, "b": 2}}, {"s": {"$retainKeys": ["b", "c"], "c": 3}})
    assert retained == {"s": {"b": 2, "c": 3}}


def test_fields_v1_round_trip_and_update_ownership() -> None:
    paths = {("spec", "a"), ("spec", "b", "c"), ("metadata", "labels", "x")}
    encoded = managed.encode_fields(paths)
    assert encoded == {"f:metadata": {"f:labels": {"f:x": {}}}, "f:spec": {"f:a": {}, "f:b": {"f:c": {}}}}
    assert managed.decode_fields(encoded) == paths
    assert managed.decode_fields({"f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}}}}}) == {("spec", "containers")}
    old = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "n"}, "spec": {"a": 1, "b": 2}}
    first = managed.record_update(None, old, "alice", "v1", "t")
    new = {**old, "spec": {"a": 1, "b": 3}, "metadata": {"name": "n", "managedFields": first}}
    entries = managed.record_update(old | {"metadata": {"name": "n", "managedFields": first}}, new, "bob", "v1", "t")
    owners = {e["manager"]: managed.decode_fields(e["fieldsV1"]) for e in entries}
    assert owners == {"alice": {("spec", "a")}, "bob": {("spec", "b")}}


def test_discovery_documents() -> None:
    core = discovery.api_resource_list("", "v1")
    assert core is not None
    names = {r["name"]: r for r in core["resources"]}
    assert names["pods"]["verbs"] == ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                      "watch"] and names["namespaces"]["namespaced"] is False
    assert "namespaces/status" in names and "pods/status" in names and "events/status" not in names
    assert names["nodes"]["verbs"] == names["pods"]["verbs"] and "nodes/status" in names  # kubectl taints, deletes them
    groups = {g["name"]: g for g in discovery.api_group_list()["groups"]}
    assert groups["kueue.x-k8s.io"]["preferredVersion"]["version"] == "v1beta2"
    assert [v["version"] for v in groups["kueue.x-k8s.io"]["versions"]] == ["v1beta2", "v1beta1"]
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    assert discovery.wants_aggregated(accept) == discovery.AGGREGATED_V2 and discovery.wants_aggregated("application/json") is None
    agg = discovery.aggregated(False, discovery.AGGREGATED_V2)
    kueue = next(i for i in agg["items"] if i["metadata"]["name"] == "kueue.x-k8s.io")
    cq = next(r for r in kueue["versions"][0]["resources"] if r["resource"] == "clusterqueues")
    assert cq["scope"] == "Cluster" and cq["shortNames"] == ["cq"] and cq["subresources"][0]["subresource"] == "status"


def test_protobuf_namespace_as_kubectl_sends_it() -> None:
    # The bytes kubectl 1.32 sends for `kubectl create namespace foo` (captured with -v=9).
    body = bytes.fromhex(
        "6b387300 0a0f0a02 76311209 4e616d65 73706163 65121b0a 130a0366 6f6f1200"
        "1a002200 2a003200 38004200 12001a02 0a001a00 2200"
    )
    # as kubectl's JSON form of it: empty spec and status, Go's zero values left out
    assert protobuf.decode(body) == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"},
                                     "spec": {}, "status": {}}
    assert protobuf.decode(b"k8s\x00\x0a\x0b\x0a\x02v1\x12\x03Pod") is None
    assert protobuf.decode(b"{}") is None


def test_field_selectors() -> None:
    assert parse_field_selector("metadata.name=a,metadata.namespace!=b") == [("metadata.name", True, "a"), ("metadata.namespace", False, "b")]
    with pytest.raises(ApiError):
        parse_field_selector("status.phase=Running")
    assert parse_field_selector("status.phase=Running", "Pod") == [("status.phase", True, "Running")]
    assert parse_field_selector("involvedObject.name=w,involvedObject.kind=Workload", "Event")[1] == ("involvedObject.kind", True, "Workload")


def test_discovery_over_http(env: Env) -> None:
    status, _, version = env.raw("GET", "/version")
    assert status == 200 and version["major"] == "1" and version["minor"] == "32"
    status, _, group = env.raw("GET", "/apis/kueue.x-k8s.io/v1beta1")
    assert status == 200 and group["groupVersion"] == "kueue.x-k8s.io/v1beta1"
    status, headers, agg = env.raw("GET", "/apis", accept="application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    assert status == 200 and agg["kind"] == "APIGroupDiscoveryList" and "as=APIGroupDiscoveryList" in headers["Content-Type"]
    status, _, missing = env.raw("GET", "/apis/example.com/v1/things")
    assert status == 404 and missing["reason"] == "NotFound"
    status, _, index = env.raw("GET", "/openapi/v3")
    assert status == 200 and "apis/kueue.x-k8s.io/v1beta2" in index["paths"]


def _pb_field(number: int, value: bytes | int) -> bytes:
    def varint(n: int) -> bytes:
        n &= (1 << 64) - 1
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    return varint(number << 3 | 2) + varint(len(value)) + value


def test_protobuf_special_types_and_meaningful_zeros() -> None:
    """Deployment as client-go encodes it: replicas 0 (a pointer, kept), maxSurge as a string and
    maxUnavailable as an int (IntOrString), a Quantity, a zero Time (omitted), a negative int64."""
    f = _pb_field
    quantity = f(1, b"500m")
    container = f(1, b"c") + f(2, b"nginx") + f(8, f(2, f(1, b"cpu") + f(2, quantity)))
    pod = f(2, container) + f(4, -1)  # terminationGracePeriodSeconds -1
    template = f(1, f(11, f(1, b"app") + f(2, b"web"))) + f(2, pod)
    strategy = f(1, b"RollingUpdate") + f(2, f(1, f(1, 0) + f(2, 1)) + f(2, f(1, 1) + f(3, b"50%")))
    spec = f(1, 0) + f(2, f(1, f(1, b"app") + f(2, b"web"))) + f(3, template) + f(4, strategy) + f(5, 0)
    meta = f(1, b"web") + f(8, b"") + f(7, 0)
    body = b"k8s\x00" + f(1, f(1, b"apps/v1") + f(2, b"Deployment")) + f(2, f(1, meta) + f(2, spec) + f(3, b""))
    assert protobuf.decode(body) == {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "status": {},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "50%"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"terminationGracePeriodSeconds": -1, "containers": [
                                  {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "500m"}}}]}}},
    }
