"""MPIJobs through MultiKueue with two worker dev-clusters (``mkagent --kubeconfig``), end to end
with real processes (the fleet of e2e/test_kube_agent.py, the MPIJob framework enabled).

Kueue's published MPIJob sample (cpu only, as the fleet's queues), in a MultiKueue queue's namespace, created with kubectl in the
manager: ``spec.runPolicy.managedBy: kueue.x-k8s.io/multikueue`` from the webhook, admitted by
the hub with the launcher and worker pod sets, created in exactly one worker by its agent
(without managedBy, unsuspended, the local admission in both templates), run there by the MPI
operator (worker pods and the launcher Job once each); the manager's MPIJob mirrors the worker's
status (Succeeded, replicaStatuses) and never runs there. kill -9 of the winning agent mid-run
neither loses nor reruns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import agent, wait_for
from test_kube_agent import WORKERS, Fleet

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

SAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "sample-mpijob.yaml"


def sample(name: str = "pi", duration: str = "1s") -> str:
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"]["namespace"] = "team-a"  # the fleet's MultiKueue queue
    job["metadata"]["name"] = name
    for replica in job["spec"]["mpiReplicaSpecs"].values():
        replica["template"]["metadata"] = {"annotations": {"mkhub.dev/sim-duration": duration}}
        for container in replica["template"]["spec"]["containers"]:
            del container["resources"]["limits"]["memory"]  # the fleet's queues hold cpu only
    return yaml.safe_dump(job)


def succeeded(obj: dict[str, Any]) -> bool:
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or [])


@pytest.mark.parametrize("fleet", [{"frameworks": "batch/job, kubeflow.org/mpijob"}], indirect=True)
def test_an_mpijob_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    assert fleet.manager is not None
    fleet.submit(sample())
    ran = wait_for(lambda: {n: r.jobs_named("team-a/pi-launcher") for n, r in fleet.recorders.items()
                            if r.jobs_named("team-a/pi-launcher")}, 60, "the launcher created in a worker")
    assert len(ran) == 1, ran
    winner = next(iter(ran))
    wait_for(lambda: fleet.finished("pi"), 90, "the hub's workload finished")
    rec = fleet.recorders[winner]
    assert len(rec.jobs_named("team-a/pi-launcher")) == 1 and len(rec.pods_of("team-a/pi-launcher")) == 1
    assert all(len(rec.pods_named(f"team-a/pi-worker-{i}")) == 1 for i in range(2))
    for other in WORKERS:
        if other != winner:
            assert not fleet.recorders[other].jobs_named("team-a/pi-launcher")
    hub_wl = fleet.hub_workload("pi")
    assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
    assert [(ps["name"], ps["count"]) for ps in hub_wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    manager = wait_for(lambda: (lambda j: j if succeeded(j) else None)(fleet.manager.get("mpijob", "pi", "-n", "team-a")),
                       30, "the manager MPIJob Succeeded")
    assert manager["spec"]["runPolicy"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert manager["status"]["replicaStatuses"]["Launcher"] == {"succeeded": 1}
    assert not fleet.manager.get("jobs", "-n", "team-a")["items"]  # never run in the manager
    assert not fleet.manager.get("pods", "-n", "team-a")["items"]


@pytest.mark.parametrize("fleet", [{"frameworks": "batch/job, kubeflow.org/mpijob", "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_mpijob(fleet: Fleet) -> None:
    fleet.submit(sample("steady", "6s"))
    ran = wait_for(lambda: {n: r.jobs_named("team-a/steady-launcher") for n, r in fleet.recorders.items()
                            if r.jobs_named("team-a/steady-launcher")}, 60, "the launcher created in a worker")
    assert len(ran) == 1, ran
    winner = next(iter(ran))
    rec = fleet.recorders[winner]
    wait_for(lambda: rec.pods_of("team-a/steady-launcher"), 30, "the launcher pod running")
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
    assert len(rec.jobs_named("team-a/steady-launcher")) == 1 and len(rec.pods_of("team-a/steady-launcher")) == 1
    assert all(len(rec.pods_named(f"team-a/steady-worker-{i}")) == 1 for i in range(2))
    assert not any(r.jobs_named("team-a/steady-launcher") for n, r in fleet.recorders.items() if n != winner)
    assert "restored 1 workload copies" in fleet.agents[winner].log()
