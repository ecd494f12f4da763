"""``GET /api/v1/namespaces/{ns}/pods/{name}/log`` through the official client's read_namespaced_pod_log: the
dev-cluster kubelet's lines, built from the pod when read (no stored log object)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from hub.devcluster.kubelet import Kubelet
from hub.devcluster.nodes import Node
from hub.service.apply import ensure_namespace

from .conftest import Env

T0 = 1_750_000_000.0  # 2025-06-15T15:06:40Z
START = "2025-06-15T15:06:40Z"


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def pod(name: str, *containers: str, duration: str = "30s", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "annotations": {"mkhub.dev/sim-duration": duration}},
            "spec": {"containers": [{"name": c, "image": f"img-{c}"} for c in containers], "restartPolicy": "Never", **spec}}


@pytest.fixture
def core(env: Env) -> k8s.CoreV1Api:
    ensure_namespace(env.store, "team-a")
    return k8s.CoreV1Api(env.client)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kubelet(env: Env, clock: Clock) -> Kubelet:
    running = Kubelet(env.store, (Node("node-a"),), clock, default_duration=10.0)
    env.server.api.pod_log_lines = running.log_lines  # as the dev-cluster wires its kubelet
    return running


def test_logs_whole_tail_and_per_container(env: Env, core: k8s.CoreV1Api, kubelet: Kubelet, clock: Clock) -> None:
    env.store.create(pod("one", "main"))
    kubelet.reconcile("team-a", "one")
    started = (f"{START} container 'main' (image 'img-main') started on node node-a\n"
               f"{START} simulated run of 30s (mkhub dev-cluster: no real containers)\n")
    assert core.read_namespaced_pod_log("one", "team-a") == started
    clock.t += 30
    kubelet.reconcile("team-a", "one")
    ended = "2025-06-15T15:07:10Z container 'main' exited with code 0 (Completed)\n"
    assert core.read_namespaced_pod_log("one", "team-a") == started + ended
    assert core.read_namespaced_pod_log("one", "team-a", tail_lines=2) == started.splitlines(True)[1] + ended
    assert core.read_namespaced_pod_log("one", "team-a", tail_lines=0) == ""
    assert env.store.list("PodLog")[0] == []  # nothing stored for them

    clock.t = T0
    env.store.create(pod("two", "main", "side", duration="5s"))
    kubelet.reconcile("team-a", "two")
    assert core.read_namespaced_pod_log("two", "team-a", container="side") == (
        f"{START} container 'side' (image 'img-side') started on node node-a\n"
        f"{START} simulated run of 5s (mkhub dev-cluster: no real containers)\n")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "team-a")
    assert err.value.status == 400 and "a container name must be specified for pod two, choose one of: [main side]" in err.value.body
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "team-a", container="nope")
    assert err.value.status == 400 and "container nope is not valid for pod two" in err.value.body
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("missing", "team-a")
    assert err.value.status == 404


def test_a_killed_pod_and_one_deleted_before_binding(env: Env, core: k8s.CoreV1Api, kubelet: Kubelet, clock: Clock) -> None:
    env.store.create(pod("killed", "main"))
    kubelet.reconcile("team-a", "killed")
    gated = pod("gated", "main", schedulingGates=[{"name": "wait"}])
    for p in (env.store.get("Pod", "team-a", "killed"), env.store.create(gated)):
        assert p is not None
        env.store.update({**p, "metadata": {**p["metadata"], "finalizers": ["test/hold"]}})
        env.store.delete("Pod", "team-a", p["metadata"]["name"])
    clock.t += 3
    kubelet.reconcile("team-a", "killed")
    kubelet.reconcile("team-a", "gated")
    assert core.read_namespaced_pod_log("killed", "team-a").splitlines()[-1] == (
        "2025-06-15T15:06:43Z container 'main' exited with code 137 (Error)")
    # Never bound: only the kill, as the kubelet wrote it.
    assert core.read_namespaced_pod_log("gated", "team-a") == "2025-06-15T15:06:43Z container 'main' exited with code 137 (Error)\n"


def test_no_lines_for_a_status_the_kubelet_did_not_write(env: Env, core: k8s.CoreV1Api, kubelet: Kubelet) -> None:
    # Kueue's MultiKueue copies a worker Pod's status into the manager's gated, unbound Pod.
    created = env.store.create(pod("mirror", "main", schedulingGates=[{"name": "kueue.x-k8s.io/admission"}]))
    env.store.update_status({**created, "status": {"phase": "Succeeded", "startTime": START, "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": START}}}]}})
    assert core.read_namespaced_pod_log("mirror", "team-a") == ""


def test_no_kubelet_no_lines(env: Env, core: k8s.CoreV1Api) -> None:
    env.store.create(pod("plain", "main", nodeName="node-a"))
    assert core.read_namespaced_pod_log("plain", "team-a") == ""


def test_follow_streams_new_lines_until_the_pod_ends(env: Env, core: k8s.CoreV1Api, kubelet: Kubelet, clock: Clock) -> None:
    env.store.create(pod("runner", "main", duration="2s"))
    kubelet.reconcile("team-a", "runner")

    def later() -> None:
        time.sleep(0.5)
        clock.t += 2
        kubelet.reconcile("team-a", "runner")

    writer = threading.Thread(target=later)
    writer.start()
    resp = core.read_namespaced_pod_log("runner", "team-a", follow=True, _preload_content=False)
    got = [line.decode() for line in resp.stream() if line]
    writer.join()
    assert "".join(got) == (f"{START} container 'main' (image 'img-main') started on node node-a\n"
                            f"{START} simulated run of 2s (mkhub dev-cluster: no real containers)\n"
                            "2025-06-15T15:06:42Z container 'main' exited with code 0 (Completed)\n")
