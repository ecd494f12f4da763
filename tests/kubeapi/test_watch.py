"""Watch through the official kubernetes client: chunked JSON events, resume, bookmarks, timeout, 410."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes
import pytest
from kubernetes import watch

from .conftest import Env, ServerThread, make_store

G = "kueue.x-k8s.io"


def flavor(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": name, "labels": labels}}


def raw_events(env: Env, query: dict[str, str], *, plural: str = "resourceflavors") -> list[dict[str, Any]]:
    """Every event line of one watch request that ends by its timeoutSeconds."""
    custom = env.custom()
    response = custom.list_cluster_custom_object(G, "v1beta1", plural, watch=True, _preload_content=False, **query)
    try:
        return [json.loads(line) for line in response.data.decode().splitlines() if line.strip()]
    finally:
        response.release_conn()


def test_watch_from_a_list_then_resume_from_an_event(env: Env) -> None:
    custom = env.custom()
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("a"))
    listed = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors")
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("b"))
    custom.patch_cluster_custom_object(G, "v1beta1", "resourceflavors", "b", {"metadata": {"labels": {"x": "1"}}})
    custom.delete_cluster_custom_object(G, "v1beta1", "resourceflavors", "a")
    events = raw_events(env, {"resource_version": listed["metadata"]["resourceVersion"], "timeout_seconds": 1})
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen == [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
    assert all(e["object"]["apiVersion"] == f"{G}/v1beta1" for e in events)
    resumed = raw_events(env, {"resource_version": events[0]["object"]["metadata"]["resourceVersion"], "timeout_seconds": 1})
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in resumed] == seen[1:]


def test_watch_without_resource_version_starts_with_the_current_objects(env: Env) -> None:
    env.custom().create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("a"))
    w = watch.Watch()
    events = list(w.stream(env.custom().list_cluster_custom_object, G, "v1beta2", "resourceflavors", timeout_seconds=1))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]
    assert events[0]["object"]["apiVersion"] == f"{G}/v1beta2"


def test_bookmarks(env: Env) -> None:
    custom = env.custom()
    created = custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("a"))
    rv = created["metadata"]["resourceVersion"]
    events = raw_events(env, {"resource_version": rv, "allow_watch_bookmarks": True, "timeout_seconds": 2})
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks and all(e["object"]["metadata"]["resourceVersion"] == rv for e in bookmarks)
    assert bookmarks[0]["object"]["kind"] == "ResourceFlavor"
    assert not [e for e in raw_events(env, {"resource_version": rv, "timeout_seconds": 1}) if e["type"] == "BOOKMARK"]


def test_label_selected_watch_sees_objects_enter_and_leave(env: Env) -> None:
    custom = env.custom()
    start = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors")["metadata"]["resourceVersion"]
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("a", tier="gold"))
    custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("b", tier="silver"))
    custom.patch_cluster_custom_object(G, "v1beta1", "resourceflavors", "a", {"metadata": {"labels": {"tier": "silver"}}})
    custom.patch_cluster_custom_object(G, "v1beta1", "resourceflavors", "b", {"metadata": {"labels": {"tier": "gold"}}})
    events = raw_events(env, {"resource_version": start, "label_selector": "tier=gold", "timeout_seconds": 1})
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "b")]


def test_namespaced_watch_sees_only_its_namespace(env: Env) -> None:
    core = env.core()
    start = core.list_namespaced_event("default").metadata.resource_version
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    for ns in ("default", "other"):
        core.create_namespaced_event(ns, {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"e-{ns}"}, "reason": "R",
                                          "involvedObject": {"kind": "Pod", "name": "p"}})
    w = watch.Watch()
    events = list(w.stream(core.list_namespaced_event, "default", resource_version=start, timeout_seconds=1))
    assert [e["object"].metadata.name for e in events] == ["e-default"]


def test_a_compacted_resource_version_is_an_expired_error_event(tmp_path: Path) -> None:
    store = make_store(tmp_path / "small.db", log_retention=1, watch_cache=1)
    server = ServerThread(store)
    config = kubernetes.client.Configuration()
    config.host = server.url
    client = kubernetes.client.ApiClient(config)
    try:
        custom = kubernetes.client.CustomObjectsApi(client)
        for i in range(6):
            custom.create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor(f"f{i}"))
        response = custom.list_cluster_custom_object(G, "v1beta1", "resourceflavors", watch=True, resource_version="2",
                                                     timeout_seconds=5, _preload_content=False)
        events = [json.loads(line) for line in response.data.decode().splitlines() if line.strip()]
        assert response.status == 200 and [e["type"] for e in events] == ["ERROR"]
        status = events[0]["object"]
        assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
        assert status["message"].startswith("too old resource version: 2")
        # The client's own watch helper turns it into an ApiException(410), so informers re-list.
        with pytest.raises(kubernetes.client.exceptions.ApiException) as gone:
            list(watch.Watch().stream(custom.list_cluster_custom_object, G, "v1beta1", "resourceflavors",
                                      resource_version="2", timeout_seconds=5))
        assert gone.value.status == 410
    finally:
        client.close()
        server.close()
        store.close()


def test_watch_as_table_rows(env: Env) -> None:
    start = env.custom().list_cluster_custom_object(G, "v1beta1", "resourceflavors")["metadata"]["resourceVersion"]
    env.custom().create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("a"))
    env.custom().create_cluster_custom_object(G, "v1beta1", "resourceflavors", flavor("b"))
    status, _, body = env.raw("GET", f"/apis/{G}/v1beta1/resourceflavors",
                              accept="application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                              query=[("watch", "true"), ("resourceVersion", start), ("timeoutSeconds", "1")])
    events = [json.loads(line) for line in body.splitlines()] if isinstance(body, str) else [body]
    assert status == 200 and [e["object"]["kind"] for e in events] == ["Table", "Table"]
    assert [e["object"]["rows"][0]["cells"][0] for e in events] == ["a", "b"]
    assert [c["name"] for c in events[0]["object"]["columnDefinitions"]] == ["Name", "Age"]
