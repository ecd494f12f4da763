"""MultiKueue's external-frameworks adapter, end to end: a Tekton PipelineRun (a kind mkhub has no
adapter of its own for, named in ``multiKueue.externalFrameworks``) created in the manager with
``spec.managedBy: kueue.x-k8s.io/multikueue``, and the Workload its external controller makes for it
(tekton-kueue's part, played here by the test), run in exactly one of two worker dev-clusters by
their simulated Tekton controller; the manager's PipelineRun shows the worker's status and is never
run in the manager; kill -9 of the winning agent mid-run neither loses nor reruns it. The fleet is
test_kube_agent's (hub on a manager dev-cluster, ``mkagent --kubeconfig`` per worker)."""

from __future__ import annotations

from typing import Any

import pytest
import test_kube_agent
import yaml
from kube_fleet import agent, wait_for
from test_kube_agent import Fleet
from test_kube_agent_kubeflow import JobWatch

fleet = test_kube_agent.fleet  # the fixture, shared

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("kubectl_required")]

EXTERNAL = {"frameworks": "batch/job", "external": ["PipelineRun.v1.tekton.dev"], "lost_timeout": 45.0}
PIPELINE = """
apiVersion: tekton.dev/v1
kind: Task
metadata: {name: greet, namespace: team-a}
spec:
  steps:
  - {name: hello, image: busybox, script: echo hello}
---
apiVersion: tekton.dev/v1
kind: Pipeline
metadata: {name: greeting, namespace: team-a}
spec:
  tasks:
  - name: first
    taskRef: {name: greet}
  - name: second
    runAfter: [first]
    taskRef: {name: greet}
"""


def pipeline_run(name: str, duration: str = "1s", managed_by: str = "kueue.x-k8s.io/multikueue") -> str:
    return yaml.safe_dump({
        "apiVersion": "tekton.dev/v1", "kind": "PipelineRun",
        "metadata": {"name": name, "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "user-queue"},
                     "annotations": {"mkhub.dev/sim-duration": duration}},
        "spec": {"pipelineRef": {"name": "greeting"}, "managedBy": managed_by},
    })


def external_workload(f: Fleet, name: str) -> None:
    """The Workload tekton-kueue makes for a PipelineRun: owned by it, one pod at a time."""
    assert f.manager is not None
    uid = f.manager.get("pipelinerun", name, "-n", "team-a")["metadata"]["uid"]
    f.manager.kubectl("create", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": f"pipelinerun-{name}", "namespace": "team-a", "ownerReferences": [{
            "apiVersion": "tekton.dev/v1", "kind": "PipelineRun", "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"queueName": "user-queue", "podSets": [{"name": "task", "count": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "step", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }))


def setup(f: Fleet) -> dict[str, JobWatch]:
    assert f.manager is not None
    for cluster in (f.manager, *f.workers.values()):  # a worker runs the PipelineRun: its Pipeline must be there
        cluster.kubectl("apply", "-f", "-", stdin=PIPELINE)
    return {name: JobWatch(dc, "/apis/tekton.dev/v1/pipelineruns") for name, dc in f.workers.items()}


def winner_of(seen: dict[str, JobWatch], name: str) -> str:
    made = wait_for(lambda: {n: w.made(f"team-a/{name}") for n, w in seen.items() if w.made(f"team-a/{name}")}, 60,
                    f"{name} created in a worker")
    assert len(made) == 1, made
    return str(next(iter(made)))


def assert_ran_once(f: Fleet, seen: dict[str, JobWatch], name: str) -> None:
    made = {n: w.made(f"team-a/{name}") for n, w in seen.items() if w.made(f"team-a/{name}")}
    assert len(made) == 1 and all(len(uids) == 1 for uids in made.values()), f"{name} made more than once: {made}"
    where = next(iter(made))
    for task in ("first", "second"):
        pod = f"team-a/{name}-{task}-pod"
        assert len(f.recorders[where].pods_named(pod)) == 1, f"{pod} ran more than once on {where}"


def manager_run(f: Fleet, name: str) -> dict[str, Any]:
    assert f.manager is not None
    return dict(f.manager.get("pipelinerun", name, "-n", "team-a"))


def succeeded(obj: dict[str, Any]) -> bool:
    return any(c.get("type") == "Succeeded" and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


@pytest.mark.parametrize("fleet", [EXTERNAL], indirect=True)
def test_a_pipelinerun_runs_in_exactly_one_worker_and_the_manager_mirrors_its_status(fleet: Fleet) -> None:
    seen = setup(fleet)
    assert fleet.manager is not None
    try:
        fleet.submit(pipeline_run("build"))
        external_workload(fleet, "build")
        winner = winner_of(seen, "build")
        created = seen[winner].first["team-a/build"]  # as the generic adapter created it
        labels = created["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/multikueue-origin"] == "multikueue"
        assert labels["kueue.x-k8s.io/prebuilt-workload-name"] == "pipelinerun-build"
        assert "managedBy" not in created["spec"] and created["spec"]["pipelineRef"] == {"name": "greeting"}
        wait_for(lambda: seen[winner].succeeded("team-a/build"), 90, "the worker PipelineRun Succeeded")
        wait_for(lambda: fleet.finished("build"), 60, "the hub's workload finished")
        assert_ran_once(fleet, seen, "build")
        assert fleet.hub_workload("build")["status"].get("clusterName") == winner  # type: ignore[index]
        # The worker's whole status, mirrored; never run in the manager.
        manager = wait_for(lambda: (lambda r: r if succeeded(r) else None)(manager_run(fleet, "build")), 30,
                           "the manager PipelineRun Succeeded")
        assert [c["pipelineTaskName"] for c in manager["status"]["childReferences"]] == ["first", "second"]
        assert manager["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        assert not fleet.manager.get("taskruns", "-n", "team-a")["items"]
        assert not fleet.manager.get("pods", "-n", "team-a")["items"]
    finally:
        for w in seen.values():
            w.stop()


@pytest.mark.parametrize("fleet", [EXTERNAL], indirect=True)
def test_a_pipelinerun_not_managed_by_multikueue_is_deactivated_and_never_dispatched(fleet: Fleet) -> None:
    seen = setup(fleet)
    try:
        fleet.submit(pipeline_run("local", managed_by="tekton.dev/pipeline"))
        external_workload(fleet, "local")

        def deactivated() -> bool:  # Kueue's rule for a rejected check: the Workload is deactivated
            wl = fleet.hub_workload("local") or {}
            evicted = [c for c in (wl.get("status") or {}).get("conditions") or [] if c["type"] == "Evicted"]
            return (wl.get("spec") or {}).get("active") is False and any(
                c["reason"] == "DeactivatedDueToAdmissionCheck" and 'not "tekton.dev/pipeline"' in c["message"]
                for c in evicted)

        wait_for(deactivated, 60, "the Workload deactivated by the rejected MultiKueue check")
        assert not any(w.made("team-a/local") for w in seen.values())
    finally:
        for w in seen.values():
            w.stop()


@pytest.mark.parametrize("fleet", [EXTERNAL], indirect=True)
def test_kill_9_of_the_winning_agent_neither_loses_nor_reruns_the_pipelinerun(fleet: Fleet) -> None:
    seen = setup(fleet)
    try:
        fleet.submit(pipeline_run("steady", "5s"))
        external_workload(fleet, "steady")
        winner = winner_of(seen, "steady")
        wait_for(lambda: fleet.recorders[winner].pods_named("team-a/steady-first-pod"), 30, "its first task running")
        assert not seen[winner].succeeded("team-a/steady")  # killed mid-run
        fleet.agents[winner].kill()
        fleet.agents[winner] = agent(winner, fleet.proxies[winner].address, fleet.workers[winner],
                                     fleet.tmp / f"{winner}-agent-2.log", "--config", str(fleet.tmp / "config.yaml")).start()
        wait_for(lambda: fleet.finished("steady"), 90, "the hub's workload finished")
        assert_ran_once(fleet, seen, "steady")
        assert "restored 1 workload copies" in fleet.agents[winner].log()
        wait_for(lambda: succeeded(manager_run(fleet, "steady")), 30, "the manager PipelineRun Succeeded")
    finally:
        for w in seen.values():
            w.stop()
