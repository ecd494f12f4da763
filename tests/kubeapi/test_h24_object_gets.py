"""The GET of one object (branch h24): it does not build the CRDs' discovery entries
(hub.kubeapi.server.KubeAPI._fixed; only the discovery documents under /apis name the groups the
CRDs serve, and they stay as they were), and with inline writes it is read on the event loop."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Env
from .test_wrk_inline_writes import _hops

CRD = Path(__file__).parent / "crds" / "crontab.yaml"


def test_an_object_get_leaves_the_discovery_groups_alone(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    env.store.create(yaml.safe_load(CRD.read_text()))
    env.server.api.crds.follow()
    assert env.raw("POST", "/apis/batch/v1/namespaces/default/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}},
    })[0] == 201
    crds = env.server.api.crds
    calls: list[int] = []
    real = crds.extra_groups

    def counted() -> Any:
        calls.append(1)
        return real()

    monkeypatch.setattr(crds, "extra_groups", counted)
    for path in ("/apis/batch/v1/namespaces/default/jobs/j", "/apis/batch/v1/namespaces/default/jobs",
                 "/apis/stable.example.com/v1/namespaces/default/crontabs"):
        assert env.raw("GET", path)[0] == 200, path
    assert calls == []
    status, _, groups = env.raw("GET", "/apis")
    assert status == 200 and "stable.example.com" in [g["name"] for g in groups["groups"]]
    status, _, group = env.raw("GET", "/apis/stable.example.com")
    assert status == 200 and group["preferredVersion"]["version"] == "v1"
    status, _, resources = env.raw("GET", "/apis/stable.example.com/v1")
    assert status == 200 and [r["name"] for r in resources["resources"]][:1] == ["crontabs"]
    assert len(calls) == 3


def test_an_object_get_is_read_on_the_loop_unless_a_turn_holds_the_store(
        env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """With inline writes (the dev-cluster's own SQLite store) a GET reads on the event loop; while a
    turn's writes are open (not committed: this thread is their writer) it reads what is committed,
    in a thread, as every GET did before."""
    api = env.server.api
    path = "/api/v1/namespaces/default/configmaps/a"
    assert env.raw("POST", "/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})[0] == 201
    hops = _hops(monkeypatch)
    readers: list[str] = []
    real_get = env.store.get

    def get(*args: Any) -> Any:
        readers.append(threading.current_thread().name)
        return real_get(*args)

    monkeypatch.setattr(env.store, "get", get)
    api.inline_writes = False
    status, _, body = env.raw("GET", path)
    assert (status, body["data"], hops) == (200, {"k": "v"}, ["get_stored"])
    api.inline_writes = True
    status, _, body = env.raw("GET", path)
    assert (status, body["data"], hops) == (200, {"k": "v"}, ["get_stored"])  # no hop more
    assert readers[-1] == env.server.thread.name
    assert env.raw("GET", "/api/v1/namespaces/default/configmaps/b")[0] == 404
    monkeypatch.setattr(api, "_group", object())  # a turn's writes, open
    status, _, body = env.raw("GET", path)
    assert (status, body["data"], hops[-1]) == (200, {"k": "v"}, "get_stored")
    assert readers[-1] != env.server.thread.name
