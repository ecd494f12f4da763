"""``GET /api/v1/namespaces/{ns}/pods/{name}/log`` through the official client's read_namespaced_pod_log."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hub.service.apply import ensure_namespace

from .conftest import Env


def pod(name: str, *containers: str, phase: str = "Running") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team-a"},
            "spec": {"containers": [{"name": c, "image": "busybox"} for c in containers]}, "status": {"phase": phase}}


def log_lines(env: Env, name: str, lines: list[str]) -> None:
    current = env.store.get("PodLog", "team-a", name)
    if current is None:
        env.store.create({"apiVersion": "mkhub.dev/v1", "kind": "PodLog", "metadata": {"name": name, "namespace": "team-a"},
                          "spec": {"lines": lines}})
    else:
        env.store.update({**current, "spec": {"lines": [*current["spec"]["lines"], *lines]}})


@pytest.fixture
def core(env: Env) -> k8s.CoreV1Api:
    ensure_namespace(env.store, "team-a")
    return k8s.CoreV1Api(env.client)


def test_logs_whole_tail_and_per_container(env: Env, core: k8s.CoreV1Api) -> None:
    env.store.create(pod("one", "main"))
    log_lines(env, "one", ["a", "b", "c"])
    assert core.read_namespaced_pod_log("one", "team-a") == "a\nb\nc\n"
    assert core.read_namespaced_pod_log("one", "team-a", tail_lines=2) == "b\nc\n"
    assert core.read_namespaced_pod_log("one", "team-a", tail_lines=0) == ""
    env.store.create(pod("two", "main", "side"))
    log_lines(env, "two", ["container 'main' started", "container 'side' started", "shared"])
    assert core.read_namespaced_pod_log("two", "team-a", container="side") == "container 'side' started\nshared\n"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "team-a")
    assert err.value.status == 400 and "a container name must be specified for pod two, choose one of: [main side]" in err.value.body
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "team-a", container="nope")
    assert err.value.status == 400 and "container nope is not valid for pod two" in err.value.body
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("missing", "team-a")
    assert err.value.status == 404


def test_follow_streams_new_lines_until_the_pod_ends(env: Env, core: k8s.CoreV1Api) -> None:
    env.store.create(pod("runner", "main"))
    log_lines(env, "runner", ["first"])

    def later() -> None:
        time.sleep(0.5)
        log_lines(env, "runner", ["second"])
        current = env.store.get("Pod", "team-a", "runner")
        assert current is not None
        env.store.update_status({**current, "status": {"phase": "Succeeded"}})
        log_lines(env, "runner", ["exited"])

    writer = threading.Thread(target=later)
    writer.start()
    resp = core.read_namespaced_pod_log("runner", "team-a", follow=True, _preload_content=False)
    got = [line.decode() for line in resp.stream() if line]
    writer.join()
    assert "".join(got) == "first\nsecond\nexited\n"
