"""MultiKueue for plain Pods and pod groups with ``mkagent --kubeconfig`` workers, end to end.

The fleet of :mod:`test_kube_agent` (a manager and two worker dev-clusters, the hub on the
manager or embedded, one agent per worker) with Kueue's pod integration enabled. A pod group (and
a single Pod) created in the manager is admitted by the hub as one Workload, dispatched to both
workers and run in exactly one of them: the winner's agent creates each Pod there once (Kueue's
gate gone, the local flavor's nodeSelector in, the origin label), and the manager's Pods, which stay
gated and never run, show the worker Pods' status (Succeeded). kill -9 of the winning agent, or of
the hub, mid-run neither loses nor duplicates the group. What ran where is read from the workers'
own API servers (:class:`kube_fleet.Recorder`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import Proc, agent, wait_for
from test_kube_agent import Fleet

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

PODS = "batch/job, pod"
GATE = "kueue.x-k8s.io/admission"


def pod(name: str, duration: str, group: str = "", total: int = 2) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "user-queue"}
    annotations = {"mkhub.dev/sim-duration": duration}
    if group:
        labels["kueue.x-k8s.io/pod-group-name"] = group
        annotations["kueue.x-k8s.io/pod-group-total-count"] = str(total)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "labels": labels, "annotations": annotations},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}


def group(name: str, duration: str) -> tuple[str, list[str]]:
    names = [f"{name}-leader", f"{name}-worker"]
    return yaml.safe_dump_all([pod(n, duration, name) for n in names]), names


def manager_pod(fleet: Fleet, name: str) -> dict[str, Any]:
    if fleet.manager is not None:
        return dict(fleet.manager.get("pod", name, "-n", "team-a"))
    return dict(json.loads(fleet.mkhub("get", "pod", name, "-n", "team-a", "-o", "json").stdout))


def made_on(fleet: Fleet, names: list[str]) -> dict[str, dict[str, set[str]]]:
    """Worker -> pod name -> the uids of that pod its API server ever had (for the pods it had)."""
    out: dict[str, dict[str, set[str]]] = {}
    for worker, rec in fleet.recorders.items():
        seen = {n: rec.pods_named(f"team-a/{n}") for n in names if rec.pods_named(f"team-a/{n}")}
        if seen:
            out[worker] = seen
    return out


def pods_winner(fleet: Fleet, names: list[str]) -> str:
    made = wait_for(lambda: made_on(fleet, names), 60, f"{names} created in a worker")
    assert len(made) == 1, made
    return str(next(iter(made)))


def assert_ran_once(fleet: Fleet, names: list[str]) -> str:
    """Every pod was created in one worker only, once, and succeeded there."""
    made = made_on(fleet, names)
    assert len(made) == 1, f"pods made in more than one worker: {made}"
    worker, seen = next(iter(made.items()))
    assert {n: len(uids) for n, uids in seen.items()} == dict.fromkeys(names, 1), f"pods made more than once: {seen}"
    return worker


def workload_finished(fleet: Fleet, name: str) -> dict[str, Any] | None:
    """The manager's Workload called ``name`` (a group's) once Finished."""
    if fleet.manager is not None:
        items = fleet.manager.get("workloads", "-n", "team-a")["items"]
    else:
        items = json.loads(fleet.mkhub("get", "workloads", "-n", "team-a", "-o", "json").stdout)["items"]
    for wl in items:
        owners = {r.get("name") for r in wl["metadata"].get("ownerReferences") or []}
        if (wl["metadata"]["name"] == name or name in owners) and any(
                c["type"] == "Finished" and c["status"] == "True" for c in (wl.get("status") or {}).get("conditions") or []):
            return dict(wl)
    return None


def mirrored_succeeded(fleet: Fleet, names: list[str]) -> bool:
    return all((manager_pod(fleet, n).get("status") or {}).get("phase") == "Succeeded" for n in names)


def assert_manager_pods_never_ran(fleet: Fleet, names: list[str]) -> None:
    for n in names:
        got = manager_pod(fleet, n)
        assert any(g.get("name") == GATE for g in got["spec"].get("schedulingGates") or []), f"{n} was ungated in the manager"
        assert not got["spec"].get("nodeName"), f"{n} was bound in the manager"


@pytest.mark.parametrize("fleet", [{"frameworks": PODS}, {"frameworks": PODS, "hub": "embedded"}], indirect=True,
                         ids=["manager-cluster", "embedded-hub"])
def test_a_pod_group_and_a_pod_run_in_exactly_one_worker_and_the_manager_mirrors_them(fleet: Fleet) -> None:
    text, names = group("grp", "2s")
    fleet.submit(text)
    fleet.submit(yaml.safe_dump(pod("solo", "1s")))
    winner = pods_winner(fleet, names)
    solo_winner = pods_winner(fleet, ["solo"])
    # The worker's Pods: the manager's, admitted by the worker's Kueue (the agent).
    rec = fleet.recorders[winner]
    wait_for(lambda: all(rec.pod_phase(f"team-a/{n}") == "Succeeded" for n in names), 90, "the group Succeeded in the worker")
    worker_pods = {p["metadata"]["name"]: p for p in fleet.workers[winner].get("pods", "-n", "team-a")["items"]}
    for n in names:
        if n in worker_pods:  # it may be deleted already: the hub's Workload may have finished
            p = worker_pods[n]
            assert p["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
            assert p["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] == "grp"
            assert not p["spec"].get("schedulingGates") and p["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
    hub_wl = wait_for(lambda: workload_finished(fleet, "grp"), 60, "the group's Workload finished")
    assert hub_wl["status"].get("clusterName") == winner
    wait_for(lambda: workload_finished(fleet, "solo"), 60, "the Pod's Workload finished")
    assert_ran_once(fleet, names)
    assert assert_ran_once(fleet, ["solo"]) == solo_winner
    # The manager's Pods show the worker's phase, and never ran there.
    wait_for(lambda: mirrored_succeeded(fleet, [*names, "solo"]), 30, "the manager's Pods Succeeded")
    assert_manager_pods_never_ran(fleet, [*names, "solo"])
    # Finished: the worker's Pods are deleted (Kueue removes a finished Workload's remote objects).
    wait_for(lambda: not fleet.workers[winner].get("pods", "-n", "team-a")["items"], 30, "the worker Pods deleted")


@pytest.mark.parametrize("fleet", [{"frameworks": PODS, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_duplicates_the_pod_group(fleet: Fleet) -> None:
    text, names = group("steady", "6s")
    fleet.submit(text)
    winner = pods_winner(fleet, names)
    rec = fleet.recorders[winner]
    wait_for(lambda: all(rec.pod_phase(f"team-a/{n}") == "Running" for n in names), 30, "the group running")
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: workload_finished(fleet, "steady"), 90, "the group's Workload finished")
    assert assert_ran_once(fleet, names) == winner
    assert "restored 1 workload copies" in fleet.agents[winner].log()
    wait_for(lambda: mirrored_succeeded(fleet, names), 30, "the manager's Pods Succeeded")


@pytest.mark.parametrize("fleet", [{"frameworks": PODS, "lost_timeout": 45.0},
                                   {"frameworks": PODS, "lost_timeout": 45.0, "hub": "embedded"}], indirect=True,
                         ids=["manager-cluster", "embedded-hub"])
def test_kill_9_of_the_hub_neither_loses_nor_duplicates_the_pod_group(fleet: Fleet) -> None:
    text, names = group("kept", "6s")
    fleet.submit(text)
    winner = pods_winner(fleet, names)
    rec = fleet.recorders[winner]
    wait_for(lambda: all(rec.pod_phase(f"team-a/{n}") == "Running" for n in names), 30, "the group running")
    fleet.hub.kill()
    fleet.hub = Proc(fleet.hub.cmd, fleet.hub.log_path).start()
    wait_for(lambda: fleet.mkhub("get", "clusterqueues", check=False).returncode == 0, 60, "the hub serving again")
    wait_for(lambda: workload_finished(fleet, "kept"), 90, "the group's Workload finished")
    assert assert_ran_once(fleet, names) == winner
    wait_for(lambda: mirrored_succeeded(fleet, names), 30, "the manager's Pods Succeeded")
    assert_manager_pods_never_ran(fleet, names)
