"""MultiKueue for Deployments (Kueue's serving integration, through its pod adapter) with
``mkagent --kubeconfig`` workers, end to end.

The fleet of :mod:`test_kube_agent` (a manager and two worker dev-clusters, the hub on the manager,
one agent per worker) with the ``deployment`` framework. Kueue's published sample, unchanged, created
with kubectl in the manager: as Kueue's MultiKueue does it, the manager's Deployment makes its Pods
there (gated, never run) and each Pod, a Workload of its own, runs in one worker. The manager's Pods
mirror the worker Pods' status, so the manager's Deployment counts its replicas ready. Scaling down or
deleting in the manager removes the worker Pods; kill -9 of a winning agent neither loses nor
duplicates them. Kueue's LeaderWorkerSet sample likewise, each group as a pod group (not Kueue's
way: it creates the set in the worker). What ran where is read from the workers' own API servers
(:class:`kube_fleet.Recorder`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_kube_agent
from kube_fleet import agent, wait_for
from test_kube_agent import Fleet
from test_kube_agent_pods import GATE

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("kubectl_required")]

SERVING = "batch/job, deployment"
EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
DEPLOYMENT = "nginx-deployment"


def manager(fleet: Fleet) -> Any:
    assert fleet.manager is not None
    return fleet.manager


def manager_pods(fleet: Fleet, prefix: str) -> dict[str, dict[str, Any]]:
    items = manager(fleet).get("pods", "-n", "team-a")["items"]
    return {p["metadata"]["name"]: p for p in items if p["metadata"]["name"].startswith(prefix)}


def worker_pods(fleet: Fleet, prefix: str) -> dict[str, dict[str, str]]:
    """Worker -> name -> uid of the Pods called ``prefix...`` its API server has now."""
    out: dict[str, dict[str, str]] = {}
    for name, dc in fleet.workers.items():
        out[name] = {p["metadata"]["name"]: p["metadata"]["uid"] for p in dc.get("pods", "-n", "team-a")["items"]
                     if p["metadata"]["name"].startswith(prefix) and not p["metadata"].get("deletionTimestamp")}
    return out


def where(fleet: Fleet, names: set[str]) -> dict[str, str]:
    """Pod name -> the worker whose API server ever had it; asserts none was in two workers or made twice."""
    out: dict[str, str] = {}
    for worker, rec in fleet.recorders.items():
        for n in names:
            uids = rec.pods_named(f"team-a/{n}")
            if uids:
                assert n not in out, f"{n} made in {out[n]} and {worker}"
                assert len(uids) == 1, f"{n} made {len(uids)} times in {worker}"
                out[n] = worker
    return out


def running_in_workers(fleet: Fleet, names: set[str]) -> dict[str, str] | None:
    at = where(fleet, names)
    if set(at) != names or not all(fleet.recorders[w].pod_phase(f"team-a/{n}") == "Running" for n, w in at.items()):
        return None
    return at


def mirrored_running(fleet: Fleet, prefix: str, count: int) -> dict[str, dict[str, Any]] | None:
    """The manager's ``count`` Pods called ``prefix...``, once all show Running (the worker's) and Ready."""
    pods = manager_pods(fleet, prefix)
    ok = len(pods) == count and all(
        (p.get("status") or {}).get("phase") == "Running"
        and any(c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or [])
        for p in pods.values())
    return pods if ok else None


def assert_never_ran_in_the_manager(pods: dict[str, dict[str, Any]]) -> None:
    for n, p in pods.items():
        assert any(g.get("name") == GATE for g in p["spec"].get("schedulingGates") or []), f"{n} ungated in the manager"
        assert not p["spec"].get("nodeName"), f"{n} bound in the manager"


def ready_replicas(fleet: Fleet, kind: str, name: str) -> int:
    return int((manager(fleet).get(kind, name, "-n", "team-a").get("status") or {}).get("readyReplicas") or 0)


def create_samples(fleet: Fleet, *files: str) -> None:
    for f in files:
        manager(fleet).kubectl("create", "-n", "team-a", "-f", str(EXAMPLES / f))


@pytest.mark.parametrize("fleet", [{"frameworks": SERVING}], indirect=True)
def test_kueues_deployment_sample_runs_its_pods_in_the_workers_and_scales_down_there(fleet: Fleet) -> None:
    create_samples(fleet, "sample-deployment.yaml")
    pods = wait_for(lambda: mirrored_running(fleet, DEPLOYMENT + "-", 3), 120, "the Deployment's Pods mirrored Running")
    assert_never_ran_in_the_manager(pods)
    wait_for(lambda: running_in_workers(fleet, set(pods)), 60, "each of the Deployment's Pods running in one worker")
    wait_for(lambda: ready_replicas(fleet, "deployment", DEPLOYMENT) == 3, 60, "the manager's Deployment 3 ready")
    # Scaling down in the manager removes the worker Pods of the Pods it deleted.
    manager(fleet).kubectl("scale", "deployment", DEPLOYMENT, "-n", "team-a", "--replicas=1")

    def scaled() -> bool:
        kept = set(manager_pods(fleet, DEPLOYMENT + "-"))
        return len(kept) == 1 and {n for per in worker_pods(fleet, DEPLOYMENT + "-").values() for n in per} == kept

    wait_for(scaled, 90, "the worker Pods of the scaled-down replicas deleted")
    wait_for(lambda: ready_replicas(fleet, "deployment", DEPLOYMENT) == 1, 60, "the manager's Deployment 1 ready")
    # Deleting the Deployment in the manager removes its last worker Pod.
    manager(fleet).kubectl("delete", "deployment", DEPLOYMENT, "-n", "team-a")
    wait_for(lambda: not any(worker_pods(fleet, DEPLOYMENT + "-").values()), 90, "the Deployment's worker Pods deleted")
    where(fleet, set(pods))  # nothing made twice along the way


@pytest.mark.parametrize("fleet", [{"frameworks": SERVING, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_duplicates_the_deployments_pods(fleet: Fleet) -> None:
    create_samples(fleet, "sample-deployment.yaml")
    pods = wait_for(lambda: mirrored_running(fleet, DEPLOYMENT + "-", 3), 120, "the Deployment's Pods mirrored Running")
    at = wait_for(lambda: running_in_workers(fleet, set(pods)), 60, "the Deployment's Pods running in the workers")
    winner = sorted(at.values())[0]
    before = worker_pods(fleet, DEPLOYMENT + "-")
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: "restored" in fleet.agents[winner].log(), 60, "the restarted agent restored its copies")
    # Scaling to zero after the restart still reaches the worker: the restarted agent follows its Pods.
    assert worker_pods(fleet, DEPLOYMENT + "-") == before, "worker Pods lost or re-created"
    assert mirrored_running(fleet, DEPLOYMENT + "-", 3), "the manager's Pods no longer Running"
    where(fleet, set(pods))
    manager(fleet).kubectl("scale", "deployment", DEPLOYMENT, "-n", "team-a", "--replicas=0")
    wait_for(lambda: not any(worker_pods(fleet, DEPLOYMENT + "-").values()), 90, "the worker Pods deleted")
    where(fleet, set(pods))
    assert_never_ran_in_the_manager(pods)


@pytest.mark.parametrize("fleet", [{"frameworks": "batch/job, leaderworkerset.x-k8s.io/leaderworkerset"}], indirect=True)
def test_kueues_leaderworkerset_sample_runs_each_group_as_a_pod_group_in_one_worker(fleet: Fleet) -> None:
    """Not Kueue's way (Kueue creates the set itself in the worker, all groups in one): here each
    group's Workload goes as a pod group, its Pods run together in one worker, and the manager's
    Pods show their status, so the manager's LeaderWorkerSet counts its groups ready."""
    create_samples(fleet, "sample-leaderworkerset.yaml")
    prefix = "nginx-leaderworkerset-"
    pods = wait_for(lambda: mirrored_running(fleet, prefix, 6), 120, "the set's Pods mirrored Running")
    assert_never_ran_in_the_manager(pods)
    at = wait_for(lambda: running_in_workers(fleet, set(pods)), 60, "the groups running in the workers")
    for group in ("0", "1"):
        members = {n for n, p in pods.items() if p["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"] == group}
        assert len({at[n] for n in members}) == 1, f"group {group} split over workers: {at}"
    wait_for(lambda: ready_replicas(fleet, "leaderworkerset", "nginx-leaderworkerset") == 2, 60,
             "the manager's LeaderWorkerSet 2 groups ready")
    manager(fleet).kubectl("delete", "leaderworkerset", "nginx-leaderworkerset", "-n", "team-a")
    wait_for(lambda: not any(worker_pods(fleet, prefix).values()), 90, "the set's worker Pods deleted")
    where(fleet, set(pods))
