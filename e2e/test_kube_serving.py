"""Deployments and StatefulSets (Kueue's serving integrations) through the hub on a Kubernetes API
server, end to end with real processes.

``mkhub dev-cluster`` (its Deployment/ReplicaSet and StatefulSet controllers create Pods through the
API, so the webhooks see them), the hub's webhooks registered in it and ``mkhub serve --kubeconfig
--webhook-listen`` with a Configuration enabling the ``deployment`` and ``statefulset`` frameworks
(the pod integration implied, as in Kueue). Kueue's published samples, unchanged, created with
kubectl: the webhook marks the pod template, the Pods are created gated, queued (a Workload per
Deployment Pod; one Workload for the StatefulSet's Pods), admitted, ungated with the flavor's node
labels and Running; scaling a Deployment down releases its Pods' Workloads, a StatefulSet goes to
zero replicas (Pods and Workload gone) and back; deleting the Deployment or StatefulSet removes the
Workloads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_kube_jobs import condition, hub_on_dev_cluster, kubectl, wait_for
from test_kube_jobsets import QUEUES, get

from hub.api.jobkinds.pod import SCHEDULING_GATE
from hub.api.jobkinds.serving import statefulset_workload_name
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta1", "kind": "Configuration",
    "integrations": {"frameworks": ["batch/job", "deployment", "statefulset"]},
}


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


def test_kueues_deployment_sample_runs_a_workload_per_pod_and_scales(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sample = EXAMPLES / "sample-deployment.yaml"
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", str(sample))
    assert dry.returncode == 0, dry.stderr
    template = json.loads(dry.stdout)["spec"]["template"]["metadata"]  # the webhook's mutation, as stored
    assert template["annotations"]["kueue.x-k8s.io/pod-suspending-parent"] == "deployment"
    assert template["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    assert template["labels"]["kueue.x-k8s.io/managed"] == "true"
    created = kubectl(kc, "create", "-f", str(sample))
    assert created.returncode == 0, created.stderr

    def three_running() -> list[dict[str, Any]] | None:
        pods = pods_of(kc, "nginx-deployment-")
        return pods if len(pods) == 3 and all(running(p) for p in pods) else None

    pods = wait_for("the Deployment's 3 Pods running", three_running, timeout=120, log=hub.log)
    assert all(p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in pods)  # the flavor's nodeLabels
    assert all("kueue.x-k8s.io/managed" not in (p["metadata"].get("finalizers") or []) for p in pods)
    wls = wait_for("a Workload per Pod admitted", lambda: (lambda w: w if len(w) == 3 and all(
        condition(x, "Admitted") for x in w.values()) else None)(workloads(kc)), log=hub.log)
    owners = sorted(w["metadata"]["ownerReferences"][0]["name"] for w in wls.values())
    assert owners == [p["metadata"]["name"] for p in pods]
    assert all(w["spec"]["podSets"][0]["count"] == 1 for w in wls.values())
    assert not any(condition(w, "Finished") for w in wls.values())  # serving: runs while the Deployment wants it
    table = kubectl(kc, "get", "wl", "-n", "default")
    assert table.returncode == 0, table.stderr
    assert len(table.stdout.splitlines()) == 4 and all("user-queue" in row for row in table.stdout.splitlines()[1:])

    scaled = kubectl(kc, "scale", "deployment/nginx-deployment", "--replicas=1", "-n", "default")
    assert scaled.returncode == 0, scaled.stderr
    left = wait_for("scaled down to one Workload", lambda: (lambda w: w if len(w) == 1 else None)(workloads(kc)),
                    log=hub.log)
    cq = wait_for("the quota released", lambda: (lambda c: c if (c.get("status") or {}).get("admittedWorkloads") == 1
                                                 else None)(json.loads(kubectl(kc, "get", "clusterqueue", "cluster-queue",
                                                                               "-o", "json").stdout)), log=hub.log)
    assert cq["status"]["admittedWorkloads"] == 1
    assert list(left.values())[0]["metadata"]["ownerReferences"][0]["name"] in {p["metadata"]["name"] for p in pods}

    deleted = kubectl(kc, "delete", "deployment", "nginx-deployment", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the Workloads gone with the Deployment", lambda: not workloads(kc) and not pods_of(kc, "nginx-deployment-"),
             log=hub.log)


def test_kueues_statefulset_sample_is_one_workload_admitted_whole(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sample = EXAMPLES / "sample-statefulset.yaml"
    created = kubectl(kc, "create", "-f", str(sample))
    assert created.returncode == 0, created.stderr
    name = statefulset_workload_name("nginx-statefulset")

    def three_running() -> list[dict[str, Any]] | None:
        pods = pods_of(kc, "nginx-statefulset-")
        return pods if len(pods) == 3 and all(running(p) for p in pods) else None

    pods = wait_for("the StatefulSet's 3 Pods running", three_running, timeout=120, log=hub.log)
    assert [p["metadata"]["name"] for p in pods] == [f"nginx-statefulset-{i}" for i in range(3)]
    assert all(p["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"] == name for p in pods)
    assert all(p["spec"]["nodeSelector"] == {"pool": "cpu"} for p in pods)
    wls = workloads(kc)
    assert list(wls) == [name]  # one Workload for the whole set
    wl = wls[name]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 3)]
    sts = get(kc, "statefulset", "nginx-statefulset")
    owner = wl["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["uid"]) for o in owner] == [("StatefulSet", "nginx-statefulset", sts["metadata"]["uid"])]
    assert condition(wl, "Admitted") and not condition(wl, "Finished")
    table = kubectl(kc, "get", "wl", "-n", "default")
    assert table.returncode == 0, table.stderr
    assert table.stdout.splitlines()[1].split()[:3] == [name, "user-queue", "cluster-queue"]
    gone = kubectl(kc, "delete", "pod", "nginx-statefulset-0", "-n", "default")
    assert gone.returncode == 0, gone.stderr

    def replaced() -> list[dict[str, Any]] | None:
        pods = three_running()
        return pods if pods and pods[0]["metadata"]["uid"] != pods_before[0]["metadata"]["uid"] else None

    pods_before = pods
    wait_for("pod 0 re-created and running in the same Workload", replaced, timeout=120, log=hub.log)
    assert workloads(kc)[name]["metadata"]["uid"] == wl["metadata"]["uid"]  # the StatefulSet's: it stays
    refused = kubectl(kc, "patch", "statefulset", "nginx-statefulset", "-n", "default", "--type=merge",
                      "-p", '{"spec": {"replicas": 2}}')
    assert refused.returncode != 0 and "spec.replicas" in refused.stderr  # Kueue: only to and from zero

    def scale(n: int) -> bool:
        out = kubectl(kc, "patch", "statefulset", "nginx-statefulset", "-n", "default", "--type=merge",
                      "-p", json.dumps({"spec": {"replicas": n}}))
        return out.returncode == 0  # refused while the scale-down's Pods are still there

    assert scale(0)
    wait_for("the Pods and the Workload gone at zero", lambda: not workloads(kc) and not pods_of(kc, "nginx-statefulset-"),
             log=hub.log)
    wait_for("scaled up from zero", lambda: scale(2), log=hub.log)

    def two_running() -> list[dict[str, Any]] | None:
        pods = pods_of(kc, "nginx-statefulset-")
        return pods if len(pods) == 2 and all(running(p) for p in pods) else None

    wait_for("the StatefulSet's 2 Pods running", two_running, timeout=120, log=hub.log)
    again = workloads(kc)[name]  # the same name: one Workload per StatefulSet, made again for 2 Pods
    assert [(ps["name"], ps["count"]) for ps in again["spec"]["podSets"]] == [("main", 2)] and condition(again, "Admitted")

    deleted = kubectl(kc, "delete", "statefulset", "nginx-statefulset", "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    wait_for("the Workload gone with the StatefulSet",
             lambda: not workloads(kc) and not pods_of(kc, "nginx-statefulset-"), log=hub.log)


def test_a_statefulset_too_big_for_its_queue_waits_gated_whole(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    big = yaml.safe_load("\n".join(line for line in (EXAMPLES / "sample-statefulset.yaml").read_text().splitlines()
                                   if not line.startswith("#")))
    big["metadata"]["name"] = "too-big"
    big["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"  # 3 x 2 CPUs > 4
    out = kubectl(kc, "create", "-f", "-", stdin=yaml.safe_dump(big))
    assert out.returncode == 0, out.stderr
    name = statefulset_workload_name("too-big")

    def pending() -> dict[str, Any] | None:
        w = workloads(kc).get(name)
        tried = w is not None and any(c["type"] == "QuotaReserved" for c in (w.get("status") or {}).get("conditions") or [])
        return w if tried else None

    wl = wait_for("the StatefulSet's Workload pending", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved") and wl["spec"]["podSets"][0]["count"] == 3
    [pod] = pods_of(kc, "too-big-")  # OrderedReady: the next ordinal waits for this one
    assert SCHEDULING_GATE in [g["name"] for g in pod["spec"]["schedulingGates"]]
    assert (pod.get("status") or {}).get("phase") == "Pending"


def test_a_statefulset_scaled_with_kubectl_scale_counts_its_group_from_its_replicas(setup: tuple[Path, KubeHub]) -> None:
    """The scale subresource passes no webhook: the template keeps its old total count, and the new
    Pods' group counts the set's current replicas, as Kueue's StatefulSet pod reconciler writes it."""
    kc, hub = setup
    created = kubectl(kc, "create", "-f", str(EXAMPLES / "sample-statefulset.yaml"))
    assert created.returncode == 0, created.stderr
    name = statefulset_workload_name("nginx-statefulset")

    def running_pods(n: int) -> Any:
        def check() -> list[dict[str, Any]] | None:
            pods = pods_of(kc, "nginx-statefulset-")
            return pods if len(pods) == n and all(running(p) for p in pods) else None
        return check

    wait_for("the StatefulSet's 3 Pods running", running_pods(3), timeout=120, log=hub.log)
    down = kubectl(kc, "scale", "statefulset/nginx-statefulset", "--replicas=0", "-n", "default")
    assert down.returncode == 0, down.stderr
    wait_for("the Pods and the Workload gone at zero", lambda: not workloads(kc) and not pods_of(kc, "nginx-statefulset-"),
             log=hub.log)
    up = kubectl(kc, "scale", "statefulset/nginx-statefulset", "--replicas=2", "-n", "default")
    assert up.returncode == 0, up.stderr
    pods = wait_for("the StatefulSet's 2 Pods running", running_pods(2), timeout=120, log=hub.log)
    assert all(p["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == "2" for p in pods)
    wl = workloads(kc)[name]
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 2)] and condition(wl, "Admitted")
