"""LeaderWorkerSets (Kueue's LeaderWorkerSet integration) through the hub on a Kubernetes API server,
end to end with real processes.

``mkhub dev-cluster`` (its simulated LWS operator creates Pods through the API, so the webhooks see
them), the hub's webhooks registered in it and ``mkhub serve --kubeconfig --webhook-listen`` with a
Configuration enabling the ``leaderworkerset.x-k8s.io/leaderworkerset`` framework (the pod
integration implied, as in Kueue). Kueue's published sample, unchanged, created with kubectl: the
webhook marks the leader and worker templates, the Pods are created gated, each group is one
Workload named as Kueue names it with a ``leader`` (1) and a ``worker`` (size - 1) pod set, owned
by the set, admitted whole, its Pods ungated and Running; a group that loses a Pod is re-created whole
and runs again; its group size cannot change; scaling down releases the removed group's Workload; deleting the set removes the
Workloads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_harness import frameworks_config, samples_queue_setup
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for
from test_kube_jobsets import get

from hub.api.jobkinds.leaderworkerset import FRAMEWORK, group_workload_name
from hub.api.jobkinds.pod import SCHEDULING_GATE
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-leaderworkerset.yaml"
QUEUES = samples_queue_setup({"cpu": "4", "memory": "4Gi"}, node_labels={"pool": "cpu"})
CONFIG = frameworks_config("batch/job", FRAMEWORK)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def pods_of(kc: Path, prefix: str) -> list[dict[str, Any]]:
    return sorted((p for p in get(kc, "pods")["items"] if p["metadata"]["name"].startswith(prefix)),
                  key=lambda p: p["metadata"]["name"])


def running(pod: dict[str, Any]) -> bool:
    gates = [g["name"] for g in pod["spec"].get("schedulingGates") or []]
    return (pod.get("status") or {}).get("phase") == "Running" and SCHEDULING_GATE not in gates


def workloads(kc: Path) -> dict[str, dict[str, Any]]:
    return {w["metadata"]["name"]: w for w in get(kc, "workloads")["items"]}


def test_kueues_leaderworkerset_sample_is_a_workload_per_group(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", str(SAMPLE))
    assert dry.returncode == 0, dry.stderr
    lwt = json.loads(dry.stdout)["spec"]["leaderWorkerTemplate"]  # the webhook's mutation, as stored
    for template in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        assert template["metadata"]["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == FRAMEWORK
        assert template["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    created = kubectl(kc, "create", "-f", str(SAMPLE))
    assert created.returncode == 0, created.stderr
    lws = get(kc, "leaderworkerset", "nginx-leaderworkerset")
    uid = lws["metadata"]["uid"]
    names = [group_workload_name("nginx-leaderworkerset", str(i), uid) for i in range(2)]

    def six_running() -> list[dict[str, Any]] | None:
        pods = pods_of(kc, "nginx-leaderworkerset-")
        return pods if len(pods) == 6 and all(running(p) for p in pods) else None

    pods = wait_for("the set's 6 Pods running", six_running, timeout=150, log=hub.log)
    for pod in pods:
        index = pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"]
        assert pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == names[int(index)]
        assert pod["spec"]["nodeSelector"] == {"pool": "cpu"}  # the flavor's nodeLabels, set at ungating
    wls = workloads(kc)
    assert sorted(wls) == sorted(names)  # one Workload per group
    for wl in wls.values():
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
        assert [(o["kind"], o["name"], o["uid"]) for o in wl["metadata"]["ownerReferences"]] == \
            [("LeaderWorkerSet", "nginx-leaderworkerset", uid)]
        assert condition(wl, "Admitted") and not condition(wl, "Finished")
    table = kubectl(kc, "get", "wl", "-n", "default")
    assert table.returncode == 0, table.stderr
    assert len(table.stdout.splitlines()) == 3

    gone = kubectl(kc, "delete", "pod", "nginx-leaderworkerset-0-1", "-n", "default")
    assert gone.returncode == 0, gone.stderr

    def group_replaced() -> list[dict[str, Any]] | None:
        now = six_running()
        return now if now and now[0]["metadata"]["uid"] != pods[0]["metadata"]["uid"] else None

    wait_for("group 0 re-created whole and running again", group_replaced, timeout=150, log=hub.log)
    assert sorted(workloads(kc)) == sorted(names)

    resized = kubectl(kc, "patch", "leaderworkerset", "nginx-leaderworkerset", "-n", "default", "--type=merge",
                      "-p", '{"spec": {"leaderWorkerTemplate": {"size": 4}}}')
    assert resized.returncode != 0 and "spec.leaderWorkerTemplate.size" in resized.stderr  # a group is one Workload
    scaled = kubectl(kc, "scale", "leaderworkerset/nginx-leaderworkerset", "--replicas=1", "-n", "default")
    assert scaled.returncode == 0, scaled.stderr
    left = wait_for("scaled down to one group's Workload",
                    lambda: (lambda w: w if list(w) == [names[0]] and len(pods_of(kc, "nginx-leaderworkerset-")) == 3
                             else None)(workloads(kc)), log=hub.log)
    assert condition(left[names[0]], "Admitted")
    cq = wait_for("the group's quota released", lambda: (lambda c: c if (c.get("status") or {}).get("admittedWorkloads") == 1
                                                        else None)(get(kc, "clusterqueue", "cluster-queue")), log=hub.log)
    assert cq["status"]["admittedWorkloads"] == 1

    deleted = kubectl(kc, "delete", "leaderworkerset", "nginx-leaderworkerset", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the Workloads gone with the set",
             lambda: not workloads(kc) and not pods_of(kc, "nginx-leaderworkerset-"), log=hub.log)


def test_a_group_too_big_for_its_queue_waits_gated_whole(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    big = yaml.safe_load(SAMPLE.read_text())
    big["metadata"]["name"] = "too-big"
    big["spec"]["replicas"] = 1
    big["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(big))  # 0.1 + 2 x 2 CPUs > 4
    assert out.returncode == 0, out.stderr
    uid = get(kc, "leaderworkerset", "too-big")["metadata"]["uid"]
    name = group_workload_name("too-big", "0", uid)

    def pending() -> dict[str, Any] | None:
        w = workloads(kc).get(name)
        tried = w is not None and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions") or [])
        return w if tried else None

    wl = wait_for("the group's Workload pending", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved")
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
    pods = pods_of(kc, "too-big-")
    assert len(pods) == 3
    assert all(SCHEDULING_GATE in [g["name"] for g in p["spec"]["schedulingGates"]] for p in pods)


def test_kueues_sample_with_startup_policy_leader_ready_is_admitted_and_runs(setup: tuple[Path, KubeHub]) -> None:
    """With LeaderReady the LWS controller creates a group's workers only once its leader is ready:
    the hub queues each group from the set itself (as Kueue's reconciler), admits it on its leader
    alone, and the workers join the admitted Workload and run."""
    kc, hub = setup
    sample = yaml.safe_load(SAMPLE.read_text())
    sample["spec"]["startupPolicy"] = "LeaderReady"
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(sample))
    assert out.returncode == 0, out.stderr
    uid = get(kc, "leaderworkerset", "nginx-leaderworkerset")["metadata"]["uid"]
    names = [group_workload_name("nginx-leaderworkerset", str(i), uid) for i in range(2)]

    def six_running() -> list[dict[str, Any]] | None:
        pods = pods_of(kc, "nginx-leaderworkerset-")
        return pods if len(pods) == 6 and all(running(p) for p in pods) else None

    wait_for("the LeaderReady set's 6 Pods running", six_running, timeout=150, log=hub.log)
    wls = workloads(kc)
    assert sorted(wls) == sorted(names)
    for wl in wls.values():
        assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("leader", 1), ("worker", 2)]
        assert condition(wl, "Admitted") and not condition(wl, "Finished")
    lws = wait_for("the set Available", lambda: (lambda s: s if condition(s, "Available") else None)(
        get(kc, "leaderworkerset", "nginx-leaderworkerset")), log=hub.log)
    assert lws["status"]["readyReplicas"] == 2
