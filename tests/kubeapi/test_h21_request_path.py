"""The dev-cluster API server's request path (branch h21): a create only mutating webhooks are
called for (Kueue's Job webhook) calls them in a worker thread and is stored on the event loop
with the turn's other writes (hub.kubeapi.server.KubeAPI._write), answering as before."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import yaml

from hub.service.devcluster import _kube_api

from .conftest import Env
from .test_admission_webhooks import HookServer, add_label, configuration, deny_unless_labelled
from .test_admission_webhooks import hooks as hooks  # noqa: F401 - the fixture
from .test_wrk_inline_writes import _hops


def _wire(env: Env) -> None:
    wired = _kube_api(env.store).writer
    api = env.server.api
    api.writer.mutating = wired.mutating
    api.writer.validating = wired.validating
    api.inline_writes = True


def _configure(env: Env, kind: str, name: str, hooks: HookServer, path: str) -> None:
    env.store.create(yaml.safe_load(configuration(kind, name, hooks, path, ["CREATE"])))


def _config_map(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {"k": "v"}}


def test_a_create_mutated_in_a_thread_is_stored_on_the_loop(env: Env, hooks: HookServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _wire(env)
    hooks.decide["/mutate"] = add_label("team", "platform")
    _configure(env, "MutatingWebhookConfiguration", "team.example.com", hooks, "/mutate")
    hops = _hops(monkeypatch)
    writers: list[str] = []
    real_create = env.store.create

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        writers.append(threading.current_thread().name)
        return real_create(obj)

    monkeypatch.setattr(env.store, "create", create)
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("a"))
    assert status == 201, body
    assert body["metadata"]["labels"] == {"team": "platform"}  # the webhook's patch, in the answer
    assert body["metadata"]["resourceVersion"] and body["metadata"]["uid"]
    stored = env.store.get("ConfigMap", "default", "a")
    assert stored is not None and stored["metadata"]["labels"] == {"team": "platform"}
    assert hops == ["mutate_create"]  # the webhook in a thread, the write not
    assert writers == [env.server.thread.name]  # the event loop's thread, in the turn's transaction

    # generateName, dry run and refusals answer as before.
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps",
                              {**_config_map(""), "metadata": {"generateName": "g-"}})
    assert status == 201 and body["metadata"]["name"].startswith("g-") and body["metadata"]["labels"] == {"team": "platform"}
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("dry"),
                              query=[("dryRun", "All")])
    assert status == 201 and body["metadata"]["labels"] == {"team": "platform"}
    assert env.store.get("ConfigMap", "default", "dry") is None
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("a"))
    assert status == 409 and body["reason"] == "AlreadyExists"
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("Bad_Name"))
    assert status == 422 and body["reason"] == "Invalid"
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", {"kind": "Pod", "metadata": {"name": "x"}})
    assert status == 400 and "does not match the expected kind" in body["message"]
    # The name and existence are checked after the webhook, as before; the body's kind before it.
    assert len(hooks.calls("/mutate")) == 5


def test_a_create_a_validating_webhook_may_see_stays_in_a_thread(env: Env, hooks: HookServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _wire(env)
    hooks.decide["/mutate"] = add_label("team", "platform")
    hooks.decide["/validate"] = deny_unless_labelled("team", "every ConfigMap needs a team label")
    _configure(env, "MutatingWebhookConfiguration", "team.example.com", hooks, "/mutate")
    _configure(env, "ValidatingWebhookConfiguration", "check.example.com", hooks, "/validate")
    hops = _hops(monkeypatch)
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("a"))
    assert status == 201, body
    assert hooks_seen(hooks) == [("/mutate", "a"), ("/validate", "a")]
    assert hooks.calls("/validate")[0]["object"]["metadata"]["labels"] == {"team": "platform"}
    assert hops == ["create"]  # the validating call waits on the hub: never on the loop


def hooks_seen(hooks: HookServer) -> list[tuple[str, str]]:
    return [(r["path"], r["name"]) for r in hooks.requests]


def test_updates_stay_on_the_loop_when_the_webhooks_name_only_creates(env: Env, hooks: HookServer,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """An update or a patch answers 404 for a missing object, so only UPDATE rules may call a webhook
    for it; an apply patch may create, so CREATE rules send it to a thread, and the webhook is called."""
    _wire(env)
    hooks.decide["/mutate"] = add_label("team", "platform")
    _configure(env, "MutatingWebhookConfiguration", "team.example.com", hooks, "/mutate")
    env.store.create({**_config_map("a"), "metadata": {"name": "a", "namespace": "default"}})
    hops = _hops(monkeypatch)
    status, _, body = env.raw("PATCH", "/api/v1/namespaces/default/configmaps/a", {"data": {"k": "w"}},
                              content_type="application/merge-patch+json")
    assert status == 200 and body["data"] == {"k": "w"} and "labels" not in body["metadata"]
    status, _, body = env.raw("PUT", "/api/v1/namespaces/default/configmaps/a",
                              {**_config_map("a"), "metadata": {**body["metadata"]}})
    assert status == 200 and body["data"] == {"k": "v"}
    status, _, body = env.raw("PUT", "/api/v1/namespaces/default/configmaps/missing", _config_map("missing"))
    assert status == 404
    status, _, body = env.raw("PATCH", "/api/v1/namespaces/default/configmaps/missing", {"data": {"k": "w"}},
                              content_type="application/merge-patch+json")
    assert status == 404
    assert hops == [] and hooks.requests == []
    status, _, body = env.raw("PATCH", "/api/v1/namespaces/default/configmaps/b", json.dumps(_config_map("b")),
                              content_type="application/apply-patch+yaml", query=[("fieldManager", "t")])
    assert status == 201, body
    assert body["metadata"]["labels"] == {"team": "platform"}
    assert hops == ["patch"] and hooks_seen(hooks) == [("/mutate", "b")]


def test_namespace_selectors_see_label_changes_and_read_the_namespace_once(
        env: Env, hooks: HookServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The webhook caller keeps its Namespace reads until a Namespace changes (hub.store.sqlite_reads)."""
    _wire(env)
    hooks.decide["/mutate"] = add_label("team", "platform")
    config = yaml.safe_load(configuration("MutatingWebhookConfiguration", "team.example.com", hooks, "/mutate",
                                          ["CREATE"], namespaceSelector={"matchLabels": {"team": "a"}}))
    env.store.create(config)
    reads: list[str] = []
    real_get = env.store.get

    def get(kind: str, namespace: str, name: str) -> Any:
        if kind == "Namespace" and threading.current_thread() is not env.server.thread:
            reads.append(name)  # the webhook caller's, in the worker thread
        return real_get(kind, namespace, name)

    monkeypatch.setattr(env.store, "get", get)
    for name in ("a", "b"):
        status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map(name))
        assert status == 201 and "labels" not in body["metadata"]
    assert reads == ["default"] and hooks.requests == []
    status, _, body = env.raw("PATCH", "/api/v1/namespaces/default", {"metadata": {"labels": {"team": "a"}}},
                              content_type="application/merge-patch+json")
    assert status == 200, body
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("c"))
    assert status == 201 and body["metadata"]["labels"] == {"team": "platform"}
    status, _, body = env.raw("PATCH", "/api/v1/namespaces/default", {"metadata": {"labels": {"team": None}}},
                              content_type="application/merge-patch+json")
    assert status == 200, body
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps", _config_map("d"))
    assert status == 201 and "labels" not in body["metadata"]
    assert hooks_seen(hooks) == [("/mutate", "c")] and reads == ["default"] * 3
