"""MultiKueue for Deployments, StatefulSets and LeaderWorkerSets (Kueue's serving integrations)
with ``mkagent --kubeconfig`` workers, end to end.

The fleet of :mod:`test_kube_agent` (a manager and two worker dev-clusters, the hub on the manager,
one agent per worker) with the serving frameworks. Kueue's published samples, unchanged, created with
kubectl in the manager, whose controllers make the Pods there (gated, never run): each Deployment Pod,
a Workload of its own, runs in one worker (Kueue's pod adapter); a StatefulSet's Pods, one group made
one at a time, all run in one worker; a LeaderWorkerSet's groups each as a pod group in one worker
(not Kueue's way for these two: it creates the set itself in the worker). The manager's Pods mirror
the worker Pods' status, so the manager's Deployment, StatefulSet and LeaderWorkerSet count their
replicas ready. Scaling down or deleting in the manager removes the worker Pods; kill -9 of a
winning agent neither loses nor duplicates them. What ran where is read from the workers' own API
servers (:class:`kube_fleet.Recorder`).
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

SERVING = "batch/job, deployment, statefulset"
EXAMPLES = Path(__file__).resolve().parent / "kueue-examples"
DEPLOYMENT, STATEFULSET = "nginx-deployment", "nginx-statefulset"


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


@pytest.mark.parametrize("fleet", [{"frameworks": SERVING}], indirect=True)
def test_kueues_statefulset_sample_runs_its_pod_group_in_one_worker_and_scales_to_zero_there(fleet: Fleet) -> None:
    """Its Pods come one at a time (OrderedReady: the next once the last is Ready, here once the
    worker's runs): the group goes with its first Pod and each later Pod joins the winner's copy."""
    create_samples(fleet, "sample-statefulset.yaml")
    pods = wait_for(lambda: mirrored_running(fleet, STATEFULSET + "-", 3), 150, "the StatefulSet's Pods mirrored Running")
    assert_never_ran_in_the_manager(pods)
    at = wait_for(lambda: running_in_workers(fleet, set(pods)), 60, "the StatefulSet's Pods running in a worker")
    assert len(set(at.values())) == 1, f"the StatefulSet's group split over workers: {at}"
    wait_for(lambda: ready_replicas(fleet, "statefulset", STATEFULSET) == 3, 60, "the manager's StatefulSet 3 ready")
    manager(fleet).kubectl("scale", "statefulset", STATEFULSET, "-n", "team-a", "--replicas=0")
    wait_for(lambda: not any(worker_pods(fleet, STATEFULSET + "-").values()), 90, "the worker Pods deleted")
    where(fleet, set(pods))


@pytest.mark.parametrize("fleet", [{"frameworks": SERVING, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_duplicates_the_statefulsets_pods(fleet: Fleet) -> None:
    create_samples(fleet, "sample-statefulset.yaml")
    # Killed once the first Pod runs: the later ones reach the restarted agent's copy.
    first = wait_for(lambda: running_in_workers(fleet, {STATEFULSET + "-0"}), 120, "the first Pod running in a worker")
    winner = first[STATEFULSET + "-0"]
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    pods = wait_for(lambda: mirrored_running(fleet, STATEFULSET + "-", 3), 150, "the StatefulSet's Pods mirrored Running")
    at = wait_for(lambda: running_in_workers(fleet, set(pods)), 60, "the StatefulSet's Pods running in the worker")
    assert set(at.values()) == {winner}, at
    wait_for(lambda: ready_replicas(fleet, "statefulset", STATEFULSET) == 3, 60, "the manager's StatefulSet 3 ready")
    manager(fleet).kubectl("scale", "statefulset", STATEFULSET, "-n", "team-a", "--replicas=0")
    wait_for(lambda: not any(worker_pods(fleet, STATEFULSET + "-").values()), 90, "the worker Pods deleted")
    where(fleet, set(pods))
    assert_never_ran_in_the_manager(pods)
