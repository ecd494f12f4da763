"""MultiKueue for RayJobs: ``mkagent --kubeconfig`` on two worker ``mkhub dev-cluster`` s (each with
its simulated KubeRay operator), the hub on a manager dev-cluster (or embedded), real processes.

A RayJob created in the manager for a MultiKueue queue (kubectl, through the hub's webhook: created
suspended with ``spec.managedBy: kueue.x-k8s.io/multikueue``; or ``mkhub create`` on an embedded
hub) is admitted, created in exactly one worker, where KubeRay's operator makes its RayCluster and
runs its submitter; the worker's status (SUCCEEDED, Complete) is mirrored into the manager's
RayJob, which never runs in the manager. A kill -9 of the winning agent, or of the hub, mid-run neither loses nor
duplicates it: one RayJob, one RayCluster, one submitter run, in one worker. What ran where is read
from the workers' own API servers (watches of RayJobs, RayClusters, Jobs and pods), not from the hub.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import yaml
from kube_fleet import Proc, Recorder, agent, wait_for
from test_kube_agent import WORKERS, Fleet, fleet  # noqa: F401 (the fixture; the tests below take it as a parameter)

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

RAY = "batch/job, ray.io/rayjob"


class RayRecorder(Recorder):
    """A worker's Jobs and pods, and its RayJobs and RayClusters: every uid, the last status."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.ray_uids: dict[tuple[str, str], set[str]] = {}
        self.ray_status: dict[tuple[str, str], dict[str, Any]] = {}
        self.ray_first: dict[tuple[str, str], dict[str, Any]] = {}
        self._threads += [threading.Thread(target=self._follow, args=(path,), daemon=True)
                          for path in ("/apis/ray.io/v1/rayjobs", "/apis/ray.io/v1/rayclusters")]

    def _record(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        if obj.get("kind") not in ("RayJob", "RayCluster"):
            super()._record(event)
            return
        meta = obj.get("metadata") or {}
        key = (str(obj["kind"]), f"{meta.get('namespace', '')}/{meta.get('name', '')}")
        with self.lock:
            self.ray_uids.setdefault(key, set()).add(meta.get("uid", ""))
            self.ray_first.setdefault(key, obj)
            if event.get("type") != "DELETED":
                self.ray_status[key] = obj.get("status") or {}

    def named(self, kind: str, key: str) -> set[str]:
        with self.lock:
            return set(self.ray_uids.get((kind, key), set()))

    def clusters(self) -> dict[str, set[str]]:
        with self.lock:
            return {k[1]: set(v) for k, v in self.ray_uids.items() if k[0] == "RayCluster"}

    def status(self, kind: str, key: str) -> dict[str, Any]:
        with self.lock:
            return dict(self.ray_status.get((kind, key)) or {})


def rayjob(name: str, duration: str) -> str:
    """A RayJob of a head and one worker of one cpu and a submitter of 500m (cpu only: the queues cover cpu)."""
    def template(container: str, cpu: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": container, "image": "rayproject/ray:2.9.0",
                                         "resources": {"requests": {"cpu": cpu}}}]}}

    submitter = template("submit", "500m")
    submitter["spec"]["restartPolicy"] = "Never"
    return yaml.safe_dump({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                     "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {"entrypoint": "python x.py", "shutdownAfterJobFinishes": True, "submitterPodTemplate": submitter,
                 "rayClusterSpec": {"headGroupSpec": {"template": template("ray-head", "1")},
                                    "workerGroupSpecs": [{"groupName": "small-group", "replicas": 1, "minReplicas": 1,
                                                          "maxReplicas": 1, "template": template("ray-worker", "1")}]}},
    })


def recorders(f: Fleet) -> dict[str, RayRecorder]:
    return {name: RayRecorder(name, dc).start() for name, dc in f.workers.items()}  # type: ignore[misc]


def winner_of(recs: dict[str, RayRecorder], name: str) -> str:
    made = wait_for(lambda: {n: r.named("RayJob", f"team-a/{name}") for n, r in recs.items()
                             if r.named("RayJob", f"team-a/{name}")}, 60, f"RayJob {name} created in a worker")
    assert len(made) == 1, made
    return str(next(iter(made)))


def assert_ran_once(recs: dict[str, RayRecorder], name: str) -> str:
    """One RayJob, one RayCluster of it, one submitter Job with one pod: in one worker only."""
    key = f"team-a/{name}"
    made = {n: r.named("RayJob", key) for n, r in recs.items() if r.named("RayJob", key)}
    assert len(made) == 1 and all(len(uids) == 1 for uids in made.values()), f"RayJob {name} made more than once: {made}"
    winner = next(iter(made))
    rec = recs[winner]
    clusters = {k: v for k, v in rec.clusters().items() if k.startswith(f"{key}-raycluster-")}
    assert len(clusters) == 1 and all(len(v) == 1 for v in clusters.values()), clusters
    assert len(rec.jobs_named(key)) == 1 and len(rec.pods_of(key)) == 1, (rec.jobs_named(key), rec.pods_of(key))
    return str(winner)


def manager_rayjob(f: Fleet, name: str) -> dict[str, Any]:
    if f.manager is not None:
        return dict(f.manager.get("rayjob", name, "-n", "team-a"))
    return dict(json.loads(f.mkhub("get", "rayjob", name, "-n", "team-a", "-o", "json").stdout))


@pytest.mark.parametrize("fleet", [{"frameworks": RAY}, {"frameworks": RAY, "hub": "embedded"}], indirect=True,
                         ids=["manager-cluster", "embedded-hub"])
def test_a_rayjob_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:  # noqa: F811
    recs = recorders(fleet)
    try:
        fleet.submit(rayjob("train", "2s"))
        winner = winner_of(recs, "train")
        loser = next(n for n in WORKERS if n != winner)
        worker_job = recs[winner].ray_first[("RayJob", "team-a/train")]
        assert worker_job["spec"].get("suspend") is False and "managedBy" not in worker_job["spec"]
        head = worker_job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
        assert head["nodeSelector"] == {"kubernetes.io/os": "linux"}  # the worker's local admission
        wait_for(lambda: recs[winner].status("RayJob", "team-a/train").get("jobDeploymentStatus") == "Complete", 90,
                 "the worker RayJob Complete")
        wait_for(lambda: fleet.finished("train"), 60, "the hub's workload finished")
        assert_ran_once(recs, "train")
        assert not recs[loser].named("RayJob", "team-a/train")
        hub_wl = fleet.hub_workload("train")
        assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
        assert [ps["name"] for ps in hub_wl["spec"]["podSets"]] == ["head", "small-group", "submitter"]

        def mirrored() -> dict[str, Any] | None:
            got = manager_rayjob(fleet, "train")
            return got if (got.get("status") or {}).get("jobStatus") == "SUCCEEDED" else None

        manager = wait_for(mirrored, 30, "the manager RayJob SUCCEEDED")
        assert manager["status"]["jobDeploymentStatus"] == "Complete"
        assert manager["status"]["rayClusterName"].startswith("train-raycluster-")  # the worker's cluster, mirrored
        if fleet.manager is not None:
            assert manager["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
            assert not fleet.manager.get("rayclusters", "-n", "team-a")["items"]  # never run in the manager
            assert not fleet.manager.get("pods", "-n", "team-a")["items"]
        wait_for(lambda: not fleet.workers[winner].get("rayjobs", "-n", "team-a")["items"], 30, "the worker RayJob deleted")
    finally:
        for r in recs.values():
            r.stop()


@pytest.mark.parametrize("fleet", [{"frameworks": RAY, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_duplicates_the_rayjob(fleet: Fleet) -> None:  # noqa: F811
    recs = recorders(fleet)
    try:
        fleet.submit(rayjob("steady-ray", "8s"))
        winner = winner_of(recs, "steady-ray")
        wait_for(lambda: recs[winner].pods_of("team-a/steady-ray"), 60, "the submitter running")
        assert recs[winner].status("RayJob", "team-a/steady-ray").get("jobDeploymentStatus") != "Complete"  # mid-run
        fleet.agents[winner].kill()
        fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                     fleet.tmp / f"{winner}-agent-2.log").start()
        wait_for(lambda: fleet.finished("steady-ray"), 90, "the hub's workload finished")
        assert assert_ran_once(recs, "steady-ray") == winner
        assert "restored 1 workload copies" in fleet.agents[winner].log()
        wl = fleet.hub_workload("steady-ray")
        assert wl is not None and any(c["type"] == "Finished" and c["reason"] == "Succeeded"
                                      for c in wl["status"]["conditions"])
    finally:
        for r in recs.values():
            r.stop()


@pytest.mark.parametrize("fleet", [{"frameworks": RAY, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_hub_neither_loses_nor_duplicates_the_rayjob(fleet: Fleet) -> None:  # noqa: F811
    recs = recorders(fleet)
    try:
        fleet.submit(rayjob("kept-ray", "8s"))
        winner = winner_of(recs, "kept-ray")
        wait_for(lambda: recs[winner].pods_of("team-a/kept-ray"), 60, "the submitter running")
        assert recs[winner].status("RayJob", "team-a/kept-ray").get("jobDeploymentStatus") != "Complete"  # mid-run
        fleet.hub.kill()
        fleet.hub = Proc(fleet.hub.cmd, fleet.hub.log_path).start()
        wait_for(lambda: fleet.mkhub("get", "clusterqueues", check=False).returncode == 0, 60, "the hub serving again")
        wait_for(lambda: fleet.finished("kept-ray"), 90, "the hub's workload finished")
        assert assert_ran_once(recs, "kept-ray") == winner
        wait_for(lambda: (manager_rayjob(fleet, "kept-ray").get("status") or {}).get("jobStatus") == "SUCCEEDED", 30,
                 "the manager RayJob SUCCEEDED")
    finally:
        for r in recs.values():
            r.stop()
