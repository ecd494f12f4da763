"""AppWrappers through MultiKueue: worker agents on their clusters' own API servers, end to end.

The fleet of :mod:`test_kube_agent` (a manager and two worker ``mkhub dev-cluster`` s, the hub on the
manager or embedded, one ``mkagent --kubeconfig`` per worker) with the
``workload.codeflare.dev/appwrapper`` framework. An AppWrapper wrapping a Job, created in the
manager for a MultiKueue queue, is created in exactly one worker (Kueue's MultiKueue adapter:
a copy without ``managedBy``, unsuspended, the worker's admission in the wrapped template), where
the worker's AppWrapper controller creates its Job; the Job runs once, the worker AppWrapper
Succeeds and the manager's shows the worker's status. kill -9 of the winning agent mid-run neither
loses nor reruns it.
"""

from __future__ import annotations

from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import agent, wait_for
from test_kube_agent import WORKERS, Fleet

fleet = test_kube_agent.fleet  # the fixture, shared
pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

FRAMEWORKS = "batch/job, workload.codeflare.dev/appwrapper"


def appwrapper(name: str, duration: str = "1s") -> str:
    """An AppWrapper of one Job (2 pods of 1 cpu, each running ``duration``), for a MultiKueue queue."""
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": f"{name}-job"},
           "spec": {"parallelism": 2, "completions": 2, "template": {
               "metadata": {"annotations": {"mkhub.dev/sim-duration": duration}},
               "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}}
    return yaml.safe_dump({
        "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"}},
        "spec": {"components": [{"podSets": [{"path": "template.spec.template", "replicas": 2}], "template": job}]},
    })


def manager_appwrapper(fleet: Fleet, name: str) -> dict[str, Any]:
    if fleet.manager is not None:
        return dict(fleet.manager.get("appwrapper", name, "-n", "team-a"))
    import json

    return dict(json.loads(fleet.mkhub("get", "appwrapper", name, "-n", "team-a", "-o", "json").stdout))


def worker_appwrappers(fleet: Fleet, name: str) -> dict[str, dict[str, Any]]:
    out = {}
    for worker, dc in fleet.workers.items():
        items = [a for a in dc.get("appwrappers", "-n", "team-a")["items"] if a["metadata"]["name"] == name]
        if items:
            out[worker] = items[0]
    return out


def assert_ran_once(fleet: Fleet, name: str) -> str:
    """The wrapped Job was created in one worker only, once, and ran its 2 pods once there."""
    ran = fleet.ran_on(f"{name}-job")
    assert len(ran) == 1 and all(len(uids) == 1 for uids in ran.values()), f"{name}'s Job made more than once: {ran}"
    winner = str(next(iter(ran)))
    # The recorder follows the worker's watch, which may trail the hub's Finished by an event or two.
    wait_for(lambda: len(fleet.recorders[winner].pods_of(f"team-a/{name}-job")) >= 2, 30, "the recorder seeing both pods")
    assert len(fleet.recorders[winner].pods_of(f"team-a/{name}-job")) == 2
    return winner


@pytest.mark.parametrize("fleet", [{"frameworks": FRAMEWORKS}, {"frameworks": FRAMEWORKS, "hub": "embedded"}],
                         indirect=True, ids=["manager-cluster", "embedded-hub"])
def test_an_appwrapper_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    fleet.submit(appwrapper("wrapped", "6s"))  # long enough to see the copy: it goes once its Job is done
    copies = wait_for(lambda: worker_appwrappers(fleet, "wrapped"), 60, "the AppWrapper created in a worker")
    assert len(copies) == 1, copies
    (winner, copy_), = copies.items()
    assert copy_["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
    assert copy_["spec"].get("suspend") is False and "managedBy" not in copy_["spec"]
    template = copy_["spec"]["components"][0]["template"]["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}  # the worker's local admission
    wait_for(lambda: fleet.finished("wrapped"), 90, "the hub's workload finished")
    assert assert_ran_once(fleet, "wrapped") == winner
    hub_wl = fleet.hub_workload("wrapped")
    assert hub_wl is not None and hub_wl["status"].get("clusterName") == winner
    assert [(ps["name"], ps["count"]) for ps in hub_wl["spec"]["podSets"]] == [("wrapped-0", 2)]

    def mirrored() -> dict[str, Any] | None:
        got = manager_appwrapper(fleet, "wrapped")
        return got if (got.get("status") or {}).get("phase") == "Succeeded" else None

    manager = wait_for(mirrored, 30, "the manager AppWrapper Succeeded")
    assert {c["type"] for c in manager["status"]["conditions"]} >= {"QuotaReserved", "ResourcesDeployed", "PodsReady"}
    if fleet.manager is not None:
        assert manager["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
        assert not fleet.manager.get("jobs", "-n", "team-a")["items"]  # never run in the manager
        assert not fleet.manager.get("pods", "-n", "team-a")["items"]
    assert not any(n != winner for n in worker_appwrappers(fleet, "wrapped"))
    wait_for(lambda: not worker_appwrappers(fleet, "wrapped"), 30, "the worker AppWrapper deleted")


@pytest.mark.parametrize("fleet", [{"frameworks": FRAMEWORKS, "lost_timeout": 45.0}], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_appwrapper(fleet: Fleet) -> None:
    fleet.submit(appwrapper("steady", "6s"))
    winner = wait_for(lambda: next(iter(fleet.ran_on("steady-job")), None), 60, "the wrapped Job created in a worker")
    wait_for(lambda: len(fleet.recorders[winner].pods_of("team-a/steady-job")) == 2, 30, "pods running")
    assert not fleet.finished("steady")  # killed mid-run
    fleet.agents[winner].kill()
    fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                 fleet.tmp / f"{winner}-agent-2.log").start()
    wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
    assert assert_ran_once(fleet, "steady") == winner
    assert not fleet.recorders[next(n for n in WORKERS if n != winner)].jobs_named("team-a/steady-job")
    assert "restored 1 workload copies" in fleet.agents[winner].log()
