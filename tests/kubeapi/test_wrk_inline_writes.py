"""mkhub dev-cluster's API writes on its event loop while no admission webhook's rules name the
request (hub.kubeapi.server.KubeAPI._write), and in a worker thread when one's do."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from hub.kubeapi import server as server_module
from hub.kubeapi.webhooks import VALIDATING, WebhookCaller

from .conftest import Env


def _job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}


def _hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions the server sends to a worker thread."""
    hops: list[str] = []
    real = asyncio.to_thread

    async def recording(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(server_module.asyncio, "to_thread", recording)
    return hops


def test_writes_stay_on_the_loop_without_webhooks(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    api = env.server.api
    api.writer.mutating = WebhookCaller(env.store)
    api.writer.validating = WebhookCaller(env.store, VALIDATING)
    api.inline_writes = True
    hops = _hops(monkeypatch)
    status, _, body = env.raw("POST", "/apis/batch/v1/namespaces/default/jobs", _job("a"))
    assert status == 201, body
    status, _, body = env.raw("PATCH", "/apis/batch/v1/namespaces/default/jobs/a/status", {"status": {"active": 1}},
                              content_type="application/merge-patch+json")
    assert status == 200 and body["status"]["active"] == 1
    status, _, body = env.raw("PATCH", "/apis/batch/v1/namespaces/default/jobs/a", {"spec": {"suspend": "no"}},
                              content_type="application/merge-patch+json")
    assert status == 422 and "suspend" in body["message"]  # refusals as before: the error, not a crash
    assert "create" not in hops and "patch" not in hops

    # A webhook configuration whose rules name nothing: the writes stay on the loop.
    env.store.create({"apiVersion": "admissionregistration.k8s.io/v1", "kind": VALIDATING,
                      "metadata": {"name": "none"}, "webhooks": []})
    status, _, body = env.raw("POST", "/apis/batch/v1/namespaces/default/jobs", _job("b"))
    assert status == 201, body
    assert "create" not in hops

    # Rules naming a Job's create (Kueue's Job webhook; its selector matches none of these): a Job's create
    # goes to a worker thread, a status write or an update of it stays on the loop.
    env.store.create({"apiVersion": "admissionregistration.k8s.io/v1", "kind": VALIDATING,
                      "metadata": {"name": "jobs"}, "webhooks": [{
                          "name": "vjob.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "clientConfig": {"url": "https://127.0.0.1:9/validate"},
                          "objectSelector": {"matchLabels": {"never": "set"}},
                          "rules": [{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"],
                                     "resources": ["jobs"]}]}]})
    status, _, body = env.raw("POST", "/apis/batch/v1/namespaces/default/jobs", _job("c"))
    assert status == 201, body
    assert hops.count("create") == 1
    status, _, body = env.raw("PATCH", "/apis/batch/v1/namespaces/default/jobs/c/status", {"status": {"active": 1}},
                              content_type="application/merge-patch+json")
    assert status == 200
    assert "patch" not in hops
    status, _, body = env.raw("POST", "/api/v1/namespaces/default/configmaps",
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    assert status == 201, body
    assert hops.count("create") == 1

    # An update may create (a PUT or an apply patch of a missing object): asked as both operations.
    hook = env.store.get(VALIDATING, "", "jobs")
    assert hook is not None
    hook["webhooks"][0]["rules"][0]["operations"] = ["UPDATE"]
    env.store.update(hook)
    status, _, body = env.raw("PATCH", "/apis/batch/v1/namespaces/default/jobs/c", {"metadata": {"labels": {"a": "b"}}},
                              content_type="application/merge-patch+json")
    assert status == 200, body
    assert "patch" in hops
