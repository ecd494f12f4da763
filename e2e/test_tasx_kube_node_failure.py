"""TAS node failure on Kubernetes, end to end: ``mkhub dev-cluster --nodes blocks=2,racks=2,hosts=4``
(16 nodes of 8 CPUs labelled as Kueue's TAS examples read them) with the hub on it (``mkhub serve
--kubeconfig``, its webhooks registered), Kueue's rack-required example Job (10 pods of 1 CPU,
``e2e/kueue-examples/tas``, unchanged) admitted on b1-r1-h1 (8) and b1-r1-h2 (2).

An assigned node that fails through kubectl, as Kueue's node controller and scheduler handle it
(TASFailedNodeReplacement, TASReplaceNodeOnNodeTaints, FailFast; hub/engine/tas_node_failure.py):
``kubectl delete node``, an untolerated ``NoExecute`` taint, or a ``Ready=False`` status patch; the
Workload gets its failed node's pods placed again within the rack its request requires (the other
pods stay), and the Job's pods end up there; with no room left in the rack it is evicted with
Kueue's message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_kube_jobs import kubectl, wait_for
from test_kube_tas_pods import RACK, admitted_assignment, bound_pods, create, items, node_labels, tas_cluster

from hub.api.errors import FieldErrors
from hub.api.topology_assignment import read_topology_assignment
from tests.store.kube.hubproc import KubeHub

pytestmark = pytest.mark.timeout(300)

Cluster = tuple[Path, KubeHub]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of its own per test (each breaks a node)."""
    yield from tas_cluster(tmp_path)


def workload_of(kc: Path, job: str) -> dict[str, Any]:
    [wl] = [w for w in items(kc, "workloads", "-n", "default")
            if (w["metadata"].get("ownerReferences") or [{}])[0].get("name") == job]
    return wl


def assignment_now(kc: Path, job: str) -> dict[str, int]:
    """Pods per node of the Workload's (single) pod set's topology assignment now."""
    admission = (workload_of(kc, job).get("status") or {}).get("admission") or {}
    out: dict[str, int] = {}
    for psa in admission.get("podSetAssignments") or []:
        ta = read_topology_assignment(psa.get("topologyAssignment"), "", FieldErrors())
        for values, n in ta.domains if ta is not None else ():
            out[values[-1]] = out.get(values[-1], 0) + n
    return out


def ok(out: Any) -> None:
    assert out.returncode == 0, out.stderr


def running_job(kc: Path, hub: KubeHub) -> str:
    job = create(kc, "sample-job-required.yaml")
    assert admitted_assignment(kc, hub, job) == {("b1-r1-h1",): 8, ("b1-r1-h2",): 2}
    bound_pods(kc, hub, job, 10)
    return job


def pods_summary(kc: Path, job: str) -> list[tuple[str, str, str, str, bool]]:
    """Each pod's name, phase, node, host selector and gate: what a failure needs to be read."""
    return [(p["metadata"]["name"], p["status"].get("phase", ""), p["spec"].get("nodeName", ""),
             (p["spec"].get("nodeSelector") or {}).get("kubernetes.io/hostname", ""), bool(p["spec"].get("schedulingGates")))
            for p in items(kc, "pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={job}")]


def live_pods_on(kc: Path, job: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for p in items(kc, "pods", "-n", "default", "-l", f"batch.kubernetes.io/job-name={job}"):
        if p["status"].get("phase") in ("Succeeded", "Failed") or p["metadata"].get("deletionTimestamp"):
            continue
        node = p["spec"].get("nodeName", "")
        out[node] = out.get(node, 0) + 1
    return out


@pytest.mark.parametrize("how", ["delete", "taint", "not-ready"])
def test_a_failed_assigned_node_gets_its_pods_placed_again_in_the_required_rack(cluster: Cluster, how: str) -> None:
    kc, hub = cluster
    job = running_job(kc, hub)
    if how == "delete":
        ok(kubectl(kc, "delete", "node", "b1-r1-h2"))
    elif how == "taint":
        ok(kubectl(kc, "taint", "node", "b1-r1-h2", "maintenance=now:NoExecute"))
    else:
        patch = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                            "message": "simulated failure"}]}}
        ok(kubectl(kc, "patch", "node", "b1-r1-h2", "--subresource=status", "--type=merge", "-p", json.dumps(patch)))

    def replaced() -> dict[str, int] | None:
        got = assignment_now(kc, job)
        return got if "b1-r1-h2" not in got and sum(got.values()) == 10 else None

    got = wait_for("the failed node's pods placed again", replaced, log=hub.log)
    # BestFit within the required rack, the 8 pods on b1-r1-h1 staying where they are.
    assert got == {"b1-r1-h1": 8, "b1-r1-h3": 2}
    labels = node_labels(kc)
    assert {labels[n][RACK] for n in got} == {"b1-r1"}
    wait_for("the Job's pods running where the assignment says",
             lambda: live_pods_on(kc, job) == got or None, log=lambda: f"{hub.log()}\n{pods_summary(kc, job)}")
    assert not (workload_of(kc, job).get("status") or {}).get("unhealthyNodes")


def test_a_failed_node_with_no_room_left_in_the_required_rack_evicts_the_workload(cluster: Cluster) -> None:
    """Rack b1-r1 full (the examples' unconstrained and preferred Jobs take the rest of it): the
    required Job's 2 pods of a deleted b1-r1-h2 have nowhere to go in the rack, and Kueue evicts it
    (FailFast) with its message; requeued, it is admitted whole in another rack."""
    kc, hub = cluster
    job = running_job(kc, hub)
    assert admitted_assignment(kc, hub, create(kc, "sample-job-unconstrained.yaml")) == {("b1-r1-h2",): 6}
    preferred = admitted_assignment(kc, hub, create(kc, "sample-job-preferred.yaml"))
    assert {("b1-r1-h3",), ("b1-r1-h4",)} <= set(preferred)
    wl_name = workload_of(kc, job)["metadata"]["name"]
    ok(kubectl(kc, "delete", "node", "b1-r1-h2"))

    def evicted() -> str | None:
        for ev in items(kc, "events", "-n", "default"):
            if ev["involvedObject"].get("name") == wl_name and ev.get("reason") == "Evicted":
                return str(ev.get("message"))
        return None

    message = wait_for("the required Job's Workload evicted", evicted, log=hub.log)
    assert message == "NodeFailures: Workload was evicted as there was no replacement for unhealthy node(s): b1-r1-h2"
    labels = node_labels(kc)
    again = wait_for("the Job admitted again, in one rack without the failed node",
                     lambda: (got := assignment_now(kc, job)) and "b1-r1-h2" not in got and got, log=hub.log)
    assert sum(again.values()) == 10 and len({labels[n][RACK] for n in again}) == 1
