"""MultiKueue for Kubeflow Training v1 jobs, end to end: a PyTorchJob created in the manager (kubectl
against the manager dev-cluster with the hub on it, or ``mkhub create`` on an embedded hub) runs in
exactly one of two worker dev-clusters, by their simulated training operator, and the manager's
PyTorchJob shows the worker's status (Succeeded, replicaStatuses); kill -9 of the winning agent, or
of the hub, mid-run neither loses nor duplicates it. The fleet (dev-clusters, hub, agents) is
test_kube_agent's; what ran where is read from the workers' own API servers."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections import defaultdict
from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import DevCluster, Proc, agent, wait_for
from test_kube_agent import WORKERS, Fleet

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

FRAMEWORKS = "batch/job, kubeflow.org/pytorchjob"
PODS = ("master-0", "worker-0", "worker-1")


def pytorchjob(name: str, duration: str = "1s") -> str:
    """A Master and two Workers of 1 cpu each, each pod running ``duration``, for a MultiKueue queue."""
    def replica(n: int) -> dict[str, Any]:
        return {"replicas": n, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {"mkhub.dev/sim-duration": duration}},
            "spec": {"containers": [{"name": "pytorch", "image": "docker.io/kubeflowkatib/pytorch-mnist-cpu:v1beta1-21320b6",
                                     "resources": {"requests": {"cpu": "1"}}}]}}}

    return yaml.safe_dump({
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(2)}},
    })


class JobWatch:
    """Every PyTorchJob (or object at ``path``) one worker's API server reports over its watch (uids,
    and each as first seen)."""

    def __init__(self, cluster: DevCluster, path: str = "/apis/kubeflow.org/v1/pytorchjobs") -> None:
        self.cluster = cluster
        self.path = path
        self.uids: dict[str, set[str]] = defaultdict(set)
        self.first: dict[str, dict[str, Any]] = {}
        self.status: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self) -> None:
        rv = ""
        while not self._stop.is_set():
            query = f"?watch=1&resourceVersion={rv}" if rv else "?watch=1"
            try:
                with urllib.request.urlopen(f"{self.cluster.server}{self.path}{query}", timeout=30) as resp:
                    for raw in resp:
                        if self._stop.is_set():
                            return
                        event = json.loads(raw) if raw.strip() else {}
                        if event.get("type") == "ERROR":
                            rv = ""
                            break
                        obj = event.get("object") or {}
                        meta = obj.get("metadata") or {}
                        rv = str(meta.get("resourceVersion") or rv)
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            key = f"{meta.get('namespace')}/{meta.get('name')}"
                            with self.lock:
                                self.uids[key].add(str(meta.get("uid")))
                                self.first.setdefault(key, obj)
                                if event["type"] != "DELETED":
                                    self.status[key] = obj.get("status") or {}
            except (OSError, ValueError):
                time.sleep(0.1)  # the server restarted, or the watch timed out: watch again

    def made(self, key: str) -> set[str]:
        with self.lock:
            return set(self.uids.get(key, set()))

    def succeeded(self, key: str) -> bool:
        with self.lock:
            conditions = (self.status.get(key) or {}).get("conditions") or []
        return any(c.get("type") == "Succeeded" and c.get("status") == "True" for c in conditions)

    def stop(self) -> None:
        self._stop.set()


def watches(f: Fleet) -> dict[str, JobWatch]:
    return {name: JobWatch(dc) for name, dc in f.workers.items()}


def winner_of(seen: dict[str, JobWatch], name: str) -> str:
    key = f"team-a/{name}"
    made = wait_for(lambda: {n: w.made(key) for n, w in seen.items() if w.made(key)}, 60, f"{name} created in a worker")
    assert len(made) == 1, made
    return str(next(iter(made)))


def assert_ran_once(f: Fleet, seen: dict[str, JobWatch], name: str) -> None:
    """Created in one worker only, once, and each of its pods ran once there."""
    key = f"team-a/{name}"
    made = {n: w.made(key) for n, w in seen.items() if w.made(key)}
    assert len(made) == 1 and all(len(uids) == 1 for uids in made.values()), f"{name} made more than once: {made}"
    where = next(iter(made))
    for pod in PODS:
        uids = f.recorders[where].pods_named(f"team-a/{name}-{pod}")
        assert len(uids) == 1, f"{name}-{pod} ran {len(uids)} times on {where}"
    for other in (n for n in WORKERS if n != where):
        assert not any(f.recorders[other].pods_named(f"team-a/{name}-{pod}") for pod in PODS)


def manager_job(f: Fleet, name: str) -> dict[str, Any]:
    if f.manager is not None:
        return dict(f.manager.get("pytorchjob", name, "-n", "team-a"))
    return dict(json.loads(f.mkhub("get", "pytorchjob", name, "-n", "team-a", "-o", "json").stdout))


def succeeded(job: dict[str, Any]) -> bool:
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in (job.get("status") or {}).get("conditions") or [])


@pytest.mark.parametrize("fleet", [{"frameworks": FRAMEWORKS}, {"frameworks": FRAMEWORKS, "hub": "embedded"}],
                         indirect=True, ids=["manager-cluster", "embedded-hub"])
def test_a_pytorchjob_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    seen = watches(fleet)
    try:
        fleet.submit(pytorchjob("train"))
        winner = winner_of(seen, "train")
        created = seen[winner].first["team-a/train"]  # as created in the winner
        assert created["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
        run_policy = created["spec"].get("runPolicy") or {}
        assert run_policy.get("suspend") is False and "managedBy" not in run_policy
        for rs in created["spec"]["pytorchReplicaSpecs"].values():  # the worker's local admission
            assert rs["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
        wait_for(lambda: seen[winner].succeeded("team-a/train"), 90, "the worker PyTorchJob Succeeded")
        wait_for(lambda: fleet.finished("train"), 60, "the hub's workload finished")
        assert_ran_once(fleet, seen, "train")
        hub_wl = fleet.hub_workload("train")
        assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
        assert [(ps["name"], ps["count"]) for ps in hub_wl["spec"]["podSets"]] == [("master", 1), ("worker", 2)]

        manager = wait_for(lambda: (lambda j: j if succeeded(j) else None)(manager_job(fleet, "train")), 30,
                           "the manager PyTorchJob Succeeded")
        # The worker's status, mirrored: the replica counts as the worker's operator wrote them.
        # The job succeeds with its Master (the operator's rule): the Workers may still have been active when the
        # worker copy's terminal status was written, and that is the status mirrored.
        replicas = manager["status"]["replicaStatuses"]
        assert replicas["Master"] == {"succeeded": 1} and sum(replicas["Worker"].values()) == 2
        if fleet.manager is not None:
            assert manager["spec"]["runPolicy"].get("managedBy") == "kueue.x-k8s.io/multikueue"
            assert not fleet.manager.get("pods", "-n", "team-a")["items"]  # never run in the manager
        wait_for(lambda: not fleet.workers[winner].get("pytorchjobs", "-n", "team-a")["items"], 30,
                 "the worker PyTorchJob deleted")
    finally:
        for w in seen.values():
            w.stop()


@pytest.mark.parametrize("fleet", [{"frameworks": FRAMEWORKS, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_pytorchjob(fleet: Fleet) -> None:
    seen = watches(fleet)
    try:
        fleet.submit(pytorchjob("steady", "6s"))
        winner = winner_of(seen, "steady")
        wait_for(lambda: fleet.recorders[winner].pods_named("team-a/steady-worker-1"), 30, "pods running")
        assert not seen[winner].succeeded("team-a/steady")  # killed mid-run
        fleet.agents[winner].kill()
        fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                     fleet.tmp / f"{winner}-agent-2.log").start()
        wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
        assert_ran_once(fleet, seen, "steady")
        assert "restored 1 workload copies" in fleet.agents[winner].log()
        wait_for(lambda: succeeded(manager_job(fleet, "steady")), 30, "the manager PyTorchJob Succeeded")
    finally:
        for w in seen.values():
            w.stop()


@pytest.mark.parametrize("fleet", [{"frameworks": FRAMEWORKS, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_hub_neither_loses_nor_reruns_the_pytorchjob(fleet: Fleet) -> None:
    seen = watches(fleet)
    try:
        fleet.submit(pytorchjob("kept", "6s"))
        winner = winner_of(seen, "kept")
        wait_for(lambda: fleet.recorders[winner].pods_named("team-a/kept-worker-1"), 30, "pods running")
        assert not seen[winner].succeeded("team-a/kept")  # the hub dies mid-run
        fleet.hub.kill()
        fleet.hub = Proc(fleet.hub.cmd, fleet.hub.log_path).start()
        wait_for(lambda: fleet.mkhub("get", "clusterqueues", check=False).returncode == 0, 60, "the hub serving again")
        wait_for(lambda: fleet.finished("kept"), 90, "the hub's workload finished")
        assert_ran_once(fleet, seen, "kept")
        wait_for(lambda: succeeded(manager_job(fleet, "kept")), 30, "the manager PyTorchJob Succeeded")
    finally:
        for w in seen.values():
            w.stop()
