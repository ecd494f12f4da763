"""TrainJobs through MultiKueue with two worker dev-clusters (``mkagent --kubeconfig``), end to
end with real processes (the fleet of e2e/test_kube_agent.py, the Trainer framework enabled).

Kueue's documented ClusterTrainingRuntime is installed in the manager (or the embedded hub) and
in both workers, as Kueue's MultiKueue docs ask. A TrainJob created with kubectl in the manager
(or ``mkhub create`` on an embedded hub) for a MultiKueue queue gets ``spec.managedBy: kueue.x-k8s.io/multikueue`` from the webhook, is admitted by the
hub with the runtime's pod set, and is created in exactly one worker by its agent (Kueue's
origin label, no managedBy, unsuspended, the local admission in Kueue's runtime patch), where
the worker's Trainer runs it as a JobSet; the manager's TrainJob mirrors the worker's status
(Complete, jobsStatus) and never runs there. kill -9 of the winning agent mid-run neither loses
nor duplicates it: one TrainJob, one JobSet, one child Job, its pods once.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import Recorder, agent, wait_for
from test_kube_agent import WORKERS, Fleet

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

DOCS = Path(__file__).resolve().parent / "kueue-shaped" / "trainjob-cluster-runtime.yaml"
FRAMEWORKS = {"frameworks": "batch/job, jobset.x-k8s.io/jobset, trainer.kubeflow.org/trainjob"}


class TrainJobRecorder(Recorder):
    """The fleet's recorder, following TrainJobs too (every uid a name ever had, the first copy seen)."""

    def __init__(self, name: str, cluster: Any) -> None:
        super().__init__(name, cluster)
        self.trainjob_uids: dict[str, set[str]] = {}
        self.trainjob_first: dict[str, dict[str, Any]] = {}
        self._threads = [threading.Thread(target=self._follow, args=("/apis/trainer.kubeflow.org/v1alpha1/trainjobs",),
                                          daemon=True)]

    def _record(self, event: dict[str, Any]) -> None:
        obj = event.get("object") or {}
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        with self.lock:
            self.trainjob_uids.setdefault(key, set()).add(meta.get("uid", ""))
            self.trainjob_first.setdefault(key, obj)

    def trainjobs_named(self, key: str) -> set[str]:
        with self.lock:
            return set(self.trainjob_uids.get(key, set()))


def trainjob(name: str, duration: str) -> str:
    _, job = yaml.safe_load_all(DOCS.read_text())
    job["metadata"] = {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}}
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "1"}}  # 2 nodes of 1 cpu: fits a worker's 4
    job["spec"]["trainer"]["env"] = [{"name": "EPOCHS", "value": "1"}]
    job["spec"]["trainer"]["numNodes"] = 2
    # The simulated pods' run time, through the user's own runtime patch (how a TrainJob sets pod annotations).
    job["spec"]["runtimePatches"] = [{"manager": "example.com/e2e", "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
            "metadata": {"annotations": {"mkhub.dev/sim-duration": duration}}}}}}]}}}}]
    return yaml.safe_dump(job)


def install_runtime(fleet: Fleet) -> dict[str, TrainJobRecorder]:
    runtime = DOCS.read_text().split("---")[0]
    if fleet.manager is None:  # the embedded hub keeps its own
        fleet.mkhub("apply", "-f", "-", stdin=runtime)
    for dc in [*([fleet.manager] if fleet.manager is not None else []), *fleet.workers.values()]:
        dc.kubectl("apply", "-f", "-", stdin=runtime)
    return {name: TrainJobRecorder(name, dc).start() for name, dc in fleet.workers.items()}  # type: ignore[misc]


def winner_of(fleet: Fleet, recorders: dict[str, TrainJobRecorder], name: str) -> str:
    key = f"team-a/{name}"
    made = wait_for(lambda: {n: r.trainjobs_named(key) for n, r in recorders.items() if r.trainjobs_named(key)}, 60,
                    f"TrainJob {name} created in a worker")
    assert len(made) == 1, made
    return str(next(iter(made)))


def assert_ran_once(fleet: Fleet, recorders: dict[str, TrainJobRecorder], name: str) -> str:
    """One TrainJob in one worker, once; its JobSet and child Job once there, each of its 2 pods once."""
    key = f"team-a/{name}"
    made = {n: r.trainjobs_named(key) for n, r in recorders.items() if r.trainjobs_named(key)}
    assert len(made) == 1 and all(len(uids) == 1 for uids in made.values()), f"TrainJob {name} made more than once: {made}"
    winner = next(iter(made))
    rec = fleet.recorders[winner]
    assert len(rec.jobsets_named(key)) == 1, rec.jobsets_named(key)
    assert len(rec.jobs_named(f"team-a/{name}-node-0")) == 1
    assert len(rec.pods_of(f"team-a/{name}-node-0")) == 2, rec.pods_of(f"team-a/{name}-node-0")
    for other in WORKERS:
        if other != winner:
            assert not fleet.recorders[other].jobsets_named(key)
    return str(winner)


def manager_trainjob(fleet: Fleet, name: str) -> dict[str, Any]:
    if fleet.manager is None:
        return dict(json.loads(fleet.mkhub("get", "trainjob", name, "-n", "team-a", "-o", "json").stdout))
    return dict(fleet.manager.get("trainjob", name, "-n", "team-a"))


def complete(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Complete" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


@pytest.mark.parametrize("fleet", [FRAMEWORKS, {**FRAMEWORKS, "hub": "embedded"}], indirect=True,
                         ids=["manager-cluster", "embedded-hub"])
def test_a_trainjob_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    recorders = install_runtime(fleet)
    try:
        fleet.submit(trainjob("train", "1s"))
        winner = winner_of(fleet, recorders, "train")
        worker_tj = recorders[winner].trainjob_first["team-a/train"]
        assert worker_tj["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
        assert worker_tj["spec"].get("suspend") is False and worker_tj["spec"].get("managedBy") in (
            None, "trainer.kubeflow.org/trainjob-controller")
        (kueue_patch,) = [p for p in worker_tj["spec"]["runtimePatches"] if p["manager"] == "kueue.x-k8s.io/manager"]
        (rj,) = kueue_patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]  # the worker's local admission
        assert rj["template"]["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
        wait_for(lambda: fleet.finished("train"), 90, "the hub's workload finished")
        assert_ran_once(fleet, recorders, "train")
        hub_wl = fleet.hub_workload("train")
        assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
        assert [(ps["name"], ps["count"]) for ps in hub_wl["spec"]["podSets"]] == [("node", 2)]
        manager = wait_for(lambda: (lambda tj: tj if complete(tj) else None)(manager_trainjob(fleet, "train")), 30,
                           "the manager TrainJob Complete")
        assert manager["status"]["jobsStatus"][0]["name"] == "node" and manager["status"]["jobsStatus"][0]["succeeded"] == 1
        if fleet.manager is not None:
            assert manager["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
            assert not fleet.manager.get("jobsets", "-n", "team-a")["items"]  # never run in the manager
            assert not fleet.manager.get("pods", "-n", "team-a")["items"]
    finally:
        for r in recorders.values():
            r.stop()


@pytest.mark.parametrize("fleet", [{**FRAMEWORKS, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_duplicates_the_trainjob(fleet: Fleet) -> None:
    recorders = install_runtime(fleet)
    try:
        fleet.submit(trainjob("steady", "6s"))
        winner = winner_of(fleet, recorders, "steady")
        wait_for(lambda: len(fleet.recorders[winner].pods_of("team-a/steady-node-0")) == 2, 30, "pods running")
        assert not complete(manager_trainjob(fleet, "steady"))  # killed mid-run
        fleet.agents[winner].kill()
        fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                     fleet.tmp / f"{winner}-agent-2.log").start()
        wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
        assert assert_ran_once(fleet, recorders, "steady") == winner
        assert "restored 1 workload copies" in fleet.agents[winner].log()
        wait_for(lambda: complete(manager_trainjob(fleet, "steady")), 30, "the manager TrainJob Complete")
    finally:
        for r in recorders.values():
            r.stop()
