"""Kueue's plain Pods and pod groups through the hub on a Kubernetes API server, end to end.

``mkhub dev-cluster``, the hub's webhooks registered in it (the pod entries of
manifests/base/webhook.yaml) and ``mkhub serve --kubeconfig --webhook-listen`` with a
Configuration enabling the ``pod`` framework. Kueue's published samples (kueue-pod.yaml,
kueue-pod-group.yaml), unchanged, created with kubectl: each Pod is created gated by the
webhook, gets its Workload (a group one, named as the group, once all its pods exist), is
admitted, ungated with the flavor's nodeSelector, run by the kubelet to Succeeded (the samples
set ``restartPolicy: OnFailure`` and ``Never``, so their pods end), its Workload Finished and
Kueue's finalizer gone. A group that fits only whole stays gated while another Pod holds the quota.
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

from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(240)

EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
POD_SAMPLE = EXAMPLES / "kueue-pod.yaml"
GROUP_SAMPLE = EXAMPLES / "kueue-pod-group.yaml"
GATE = "kueue.x-k8s.io/admission"
FINALIZER = "kueue.x-k8s.io/managed"

# 6 CPUs: one sample Pod (3) and the group (2 x 3) do not fit together.
QUEUES = samples_queue_setup({"cpu": "6"}, node_labels={"pool": "cpu"})

CONFIG = frameworks_config("batch/job", "pod")


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, KubeHub]]:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    with hub_on_dev_cluster(tmp_path, QUEUES, ("--config", str(config))) as running:
        yield running


def get(kc: Path, *what: str) -> dict[str, Any]:
    out = kubectl(kc, "get", *what, "-n", "default", "-o", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def workload_of_pod(kc: Path, pod: str) -> dict[str, Any] | None:
    for wl in get(kc, "workloads")["items"]:
        if any(o.get("kind") == "Pod" and o.get("name") == pod for o in wl["metadata"].get("ownerReferences") or []):
            return wl  # type: ignore[no-any-return]
    return None


def workload(kc: Path, name: str) -> dict[str, Any] | None:
    found = [wl for wl in get(kc, "workloads")["items"] if wl["metadata"]["name"] == name]
    return found[0] if found else None


def create(kc: Path, manifest: str) -> list[str]:
    """``kubectl create -f -``; the created Pods' names."""
    out = kubectl(kc, "create", "-f", "-", "-o", "name", stdin=manifest)
    assert out.returncode == 0, out.stderr
    return [line.rpartition("/")[2] for line in out.stdout.split()]


def pod_table(kc: Path) -> dict[str, str]:
    """``kubectl get pods``: name -> STATUS column."""
    out = kubectl(kc, "get", "pods", "-n", "default")
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split()[:3] == ["NAME", "READY", "STATUS"]
    return {row.split()[0]: row.split()[2] for row in rows}


def succeeded(kc: Path, name: str) -> dict[str, Any] | None:
    pod = get(kc, "pod", name)
    return pod if (pod.get("status") or {}).get("phase") == "Succeeded" else None


def assert_ran_and_released(kc: Path, hub: KubeHub, name: str) -> dict[str, Any]:
    """The Pod ran on the flavor's node to Succeeded and Kueue's finalizer went; returns the Pod."""
    wait_for(f"{name} Succeeded", lambda: succeeded(kc, name), timeout=120, log=hub.log)
    released = wait_for(f"Kueue's finalizer gone from {name}",
                        lambda: (lambda p: p if FINALIZER not in (p["metadata"].get("finalizers") or []) else None)(
                            get(kc, "pod", name)), log=hub.log)
    spec = released["spec"]
    assert spec["nodeSelector"] == {"pool": "cpu"}  # the flavor's nodeLabels, injected at ungating
    assert not spec.get("schedulingGates")
    assert spec["nodeName"] == "cpu-1"
    assert released["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    return released  # type: ignore[no-any-return]


def assert_wl_columns(kc: Path, name: str) -> None:
    table = kubectl(kc, "get", "wl", "-n", "default")  # Kueue's short name and columns
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[:5] == ["NAME", "QUEUE", "RESERVED", "IN", "ADMITTED"]
    row = next(r.split() for r in rows if r.split()[0] == name)
    assert row[1:3] == ["user-queue", "cluster-queue"]


def test_kueues_pod_sample_is_gated_admitted_ungated_and_runs_to_succeeded(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    sample = POD_SAMPLE.read_text()
    dry = kubectl(kc, "create", "--dry-run=server", "-o", "json", "-f", "-", stdin=sample)
    assert dry.returncode == 0, dry.stderr
    gated = json.loads(dry.stdout)  # the webhook's mutation, as the API server stores it
    assert gated["spec"]["schedulingGates"] == [{"name": GATE}]
    assert gated["metadata"]["labels"]["kueue.x-k8s.io/managed"] == "true"
    assert FINALIZER in gated["metadata"]["finalizers"]
    assert gated["spec"]["restartPolicy"] == "OnFailure"  # the sample's: its pod ends

    [name] = create(kc, sample)
    assert name.startswith("kueue-sleep-")
    wl = wait_for("the Pod's Workload", lambda: workload_of_pod(kc, name), log=hub.log)
    assert wl["metadata"]["name"].startswith(f"pod-{name}-")
    owner = wl["metadata"]["ownerReferences"][0]
    assert (owner["apiVersion"], owner["kind"], owner["controller"]) == ("v1", "Pod", True)
    assert [(ps["name"], ps["count"]) for ps in wl["spec"]["podSets"]] == [("main", 1)]

    assert_ran_and_released(kc, hub, name)
    done = wait_for("the Workload Finished", lambda: condition(workload(kc, wl["metadata"]["name"]) or {}, "Finished"),
                    log=hub.log)
    assert done["reason"] == "Succeeded"
    admitted = workload(kc, wl["metadata"]["name"])
    assert admitted is not None
    assert admitted["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"cpu": "cpu-pool"}
    assert pod_table(kc)[name] == "Completed"
    assert_wl_columns(kc, wl["metadata"]["name"])


def test_kueues_pod_group_sample_is_one_workload_named_as_the_group_and_runs(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    names = create(kc, GROUP_SAMPLE.read_text())
    assert [n.rpartition("-")[0] for n in names] == ["sample-leader", "sample-worker"]
    wl = wait_for("the group's Workload", lambda: workload(kc, "sample-group"), log=hub.log)
    owners = sorted(o["name"] for o in wl["metadata"]["ownerReferences"] if o["kind"] == "Pod")
    assert owners == sorted(names)
    assert sum(ps["count"] for ps in wl["spec"]["podSets"]) == 2
    for name in names:
        assert_ran_and_released(kc, hub, name)
    done = wait_for("the group's Workload Finished", lambda: condition(workload(kc, "sample-group") or {}, "Finished"),
                    log=hub.log)
    assert done["reason"] == "Succeeded"
    assert [wl["metadata"]["name"] for wl in get(kc, "workloads")["items"]] == ["sample-group"]
    assert_wl_columns(kc, "sample-group")


def test_a_group_that_fits_only_whole_stays_gated_while_another_pod_holds_the_quota(setup: tuple[Path, KubeHub]) -> None:
    kc, hub = setup
    leader, worker = (doc for doc in yaml.safe_load_all(GROUP_SAMPLE.read_text()) if doc)
    [leader_name] = create(kc, yaml.safe_dump(leader))
    holder = yaml.safe_load(POD_SAMPLE.read_text())  # the sample, named and running until deleted
    holder["metadata"] = {"name": "holder", "labels": holder["metadata"]["labels"],
                          "annotations": {"mkhub.dev/sim-duration": "600s"}}
    create(kc, yaml.safe_dump(holder))

    def holder_running() -> dict[str, Any] | None:
        pod = get(kc, "pod", "holder")
        return pod if (pod.get("status") or {}).get("phase") == "Running" else None

    wait_for("the holder running", holder_running, log=hub.log)
    # The hub saw the leader before the holder: a group is not a Workload until all its pods exist.
    assert workload(kc, "sample-group") is None
    [worker_name] = create(kc, yaml.safe_dump(worker))

    def pending() -> dict[str, Any] | None:
        wl = workload(kc, "sample-group")
        conds = (wl or {}).get("status", {}).get("conditions") or []
        return wl if any(c["type"] == "QuotaReserved" for c in conds) else None

    wl = wait_for("the group's Workload pending", pending, log=hub.log)
    assert not condition(wl, "QuotaReserved")  # 3 of 6 CPUs held; the group needs 6
    table = pod_table(kc)
    assert (table[leader_name], table[worker_name], table["holder"]) == ("SchedulingGated", "SchedulingGated", "Running")
    for name in (leader_name, worker_name):
        assert get(kc, "pod", name)["spec"]["schedulingGates"] == [{"name": GATE}]

    out = kubectl(kc, "delete", "pod", "holder", "-n", "default", "--wait=false")
    assert out.returncode == 0, out.stderr
    for name in (leader_name, worker_name):
        assert_ran_and_released(kc, hub, name)
    done = wait_for("the group's Workload Finished", lambda: condition(workload(kc, "sample-group") or {}, "Finished"),
                    log=hub.log)
    assert done["reason"] == "Succeeded"
    wait_for("the holder gone", lambda: "holder" not in pod_table(kc), log=hub.log)
