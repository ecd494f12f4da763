"""The dev-cluster's simulated Deployment/ReplicaSet, StatefulSet and CronJob controllers
against a real SQLite store, driven by a fake clock (hub/devcluster/apps.py, cronjobs.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hub.devcluster.apps import HASH_LABEL, template_hash
from hub.devcluster.cronjobs import SCHEDULED_ANNOTATION, job_name
from hub.devcluster.nodes import Node
from hub.devcluster.runtime import DevCluster
from hub.store import SQLiteStore

NS = "team-a"
T0 = 1_750_000_000.0  # 2025-06-15T15:06:40Z


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "state.db", now=lambda: datetime.fromtimestamp(clock.t, tz=UTC))
    yield s
    s.close()


def cluster(store: SQLiteStore, clock: Clock) -> DevCluster:
    dc = DevCluster(store, (Node("node-a"),), clock=clock, default_duration=10.0)
    dc.start()
    return dc


def advance(dc: DevCluster, clock: Clock, seconds: float) -> None:
    clock.t += seconds
    dc.step()


def _template(**annotations: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "web"}, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def _apps(kind: str, name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "template": _template(),
                     **spec}}


def _get(store: SQLiteStore, kind: str, name: str) -> dict[str, Any]:
    obj = store.get(kind, NS, name)
    assert obj is not None, (kind, name)
    return obj


def _pods(store: SQLiteStore) -> list[dict[str, Any]]:
    return [p for p in store.list("Pod", NS)[0] if not p["metadata"].get("deletionTimestamp")]


def _scale(store: SQLiteStore, kind: str, name: str, replicas: int) -> None:
    obj = _get(store, kind, name)
    store.update({**obj, "spec": {**obj["spec"], "replicas": replicas}})


def test_deployment_owns_a_replicaset_whose_pods_run_until_deleted(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(_apps("Deployment", "web", 3))
    dc.step()
    pod_hash = template_hash(_template())
    rs = _get(store, "ReplicaSet", f"web-{pod_hash}")
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment" and rs["metadata"]["labels"][HASH_LABEL] == pod_hash
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", HASH_LABEL: pod_hash}
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    pods = _pods(store)
    assert len(pods) == 3 and all(p["metadata"]["name"].startswith(f"web-{pod_hash}-") for p in pods)
    assert all(len(p["metadata"]["name"]) == len(f"web-{pod_hash}-") + 5 for p in pods)
    assert {p["status"]["phase"] for p in pods} == {"Running"}
    assert all(p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"] for p in pods)
    status = _get(store, "Deployment", "web")["status"]
    assert {k: status[k] for k in ("replicas", "readyReplicas", "availableReplicas", "updatedReplicas")} == {
        "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 3}
    conds = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conds == {"Available": ("True", "MinimumReplicasAvailable"), "Progressing": ("True", "NewReplicaSetAvailable")}
    assert _get(store, "ReplicaSet", f"web-{pod_hash}")["status"]["readyReplicas"] == 3
    advance(dc, clock, 3600)  # serving pods have no end (the default run time is 10s here)
    assert {p["status"]["phase"] for p in _pods(store)} == {"Running"} and len(_pods(store)) == 3

    _scale(store, "Deployment", "web", 1)
    dc.step()
    assert len(_pods(store)) == 1 and _get(store, "Deployment", "web")["status"]["replicas"] == 1
    victim = _pods(store)[0]["metadata"]["name"]
    store.delete("Pod", NS, victim)  # a deleted pod is replaced
    dc.step()
    assert [p["metadata"]["name"] for p in _pods(store)] != [victim] and len(_pods(store)) == 1

    store.delete("Deployment", NS, "web")  # the garbage collector cascades
    dc.step()
    dc.step()
    assert store.list("ReplicaSet", NS)[0] == [] and _pods(store) == []


def test_a_new_template_moves_the_deployment_to_a_new_replicaset(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(_apps("Deployment", "web", 2))
    dc.step()
    deploy = _get(store, "Deployment", "web")
    template = _template()
    template["spec"]["containers"][0]["image"] = "nginx:2"
    store.update({**deploy, "spec": {**deploy["spec"], "template": template}})
    dc.step()
    sets = {rs["metadata"]["name"]: rs for rs in store.list("ReplicaSet", NS)[0]}
    new = f"web-{template_hash(template)}"
    assert sets[new]["spec"]["replicas"] == 2 and sets[new]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert sets[f"web-{template_hash(_template())}"]["spec"]["replicas"] == 0
    assert {p["spec"]["containers"][0]["image"] for p in _pods(store)} == {"nginx:2"}
    assert _get(store, "Deployment", "web")["status"]["updatedReplicas"] == 2
    assert _get(store, "Deployment", "web")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    deploy = _get(store, "Deployment", "web")  # a rollback: the old ReplicaSet becomes revision 3
    store.update({**deploy, "spec": {**deploy["spec"], "template": _template()}})
    dc.step()
    first = _get(store, "ReplicaSet", f"web-{template_hash(_template())}")
    assert first["spec"]["replicas"] == 2 and first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert _get(store, "Deployment", "web")["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert {p["spec"]["containers"][0]["image"] for p in _pods(store)} == {"nginx"}
    deploy = _get(store, "Deployment", "web")  # paused: a new template starts no ReplicaSet, scaling goes on
    store.update({**deploy, "spec": {**deploy["spec"], "paused": True, "replicas": 3, "template": template}})
    dc.step()
    assert len(store.list("ReplicaSet", NS)[0]) == 2 and len(_pods(store)) == 3
    assert {p["spec"]["containers"][0]["image"] for p in _pods(store)} == {"nginx"}
    conds = {c["type"]: (c["status"], c["reason"]) for c in _get(store, "Deployment", "web")["status"]["conditions"]}
    assert conds["Progressing"] == ("Unknown", "DeploymentPaused")


def test_statefulset_ordered_ready_creates_ordinals_in_order_and_scales_down_from_the_top(
        store: SQLiteStore, clock: Clock) -> None:
    dc = DevCluster(store, (), clock=clock)  # no nodes: pods stay Pending, so ordering shows
    dc.start()
    store.create(_apps("StatefulSet", "db", 3, serviceName="db"))
    dc.step()
    assert [p["metadata"]["name"] for p in _pods(store)] == ["db-0"]  # db-1 waits for db-0 to be Ready
    pod = _pods(store)[0]
    assert pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == "0"
    assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert pod["spec"]["hostname"] == "db-0" and pod["spec"]["subdomain"] == "db"

    dc2 = cluster(store, clock)  # a cluster with a node picks up where it stopped
    dc2.step()
    names = sorted(p["metadata"]["name"] for p in _pods(store))
    assert names == ["db-0", "db-1", "db-2"] and {p["status"]["phase"] for p in _pods(store)} == {"Running"}
    status = _get(store, "StatefulSet", "db")["status"]
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["updatedReplicas"]) == (3, 3, 3, 3)
    assert status["currentRevision"] == status["updateRevision"] == f"db-{template_hash(_template())}"
    _scale(store, "StatefulSet", "db", 1)
    dc2.step()
    assert [p["metadata"]["name"] for p in _pods(store)] == ["db-0"]


def test_statefulset_parallel_creates_all_at_once(store: SQLiteStore, clock: Clock) -> None:
    dc = DevCluster(store, (), clock=clock)
    dc.start()
    store.create(_apps("StatefulSet", "db", 3, serviceName="db", podManagementPolicy="Parallel",
                       ordinals={"start": 5}))
    dc.step()
    assert sorted(p["metadata"]["name"] for p in _pods(store)) == ["db-5", "db-6", "db-7"]


def _cronjob(name: str, schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    job = {"template": {"metadata": {"annotations": {"mkhub.dev/sim-duration": "30s"}},
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"team": "a"}}, "spec": job}, **spec}}


def _jobs(store: SQLiteStore) -> list[str]:
    return sorted(j["metadata"]["name"] for j in store.list("Job", NS)[0] if not j["metadata"].get("deletionTimestamp"))


def test_cronjob_creates_its_job_on_schedule_named_by_minutes(store: SQLiteStore, clock: Clock) -> None:
    # T0 is 2025-06-15T15:06:40Z; */5 next fires at 15:10:00.
    dc = cluster(store, clock)
    store.create(_cronjob("tick"))
    dc.step()
    assert _jobs(store) == []
    advance(dc, clock, 199)
    assert _jobs(store) == []
    advance(dc, clock, 1)
    scheduled = T0 + 200
    assert _jobs(store) == [job_name("tick", scheduled)] == [f"tick-{int(scheduled // 60)}"]
    job = _get(store, "Job", job_name("tick", scheduled))
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"][SCHEDULED_ANNOTATION] == "2025-06-15T15:10:00Z"
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    status = _get(store, "CronJob", "tick")["status"]
    assert status["lastScheduleTime"] == "2025-06-15T15:10:00Z"
    assert [a["name"] for a in status["active"]] == [job_name("tick", scheduled)]
    advance(dc, clock, 30)  # the Job's pod runs 30s: the Job completes and leaves status.active
    advance(dc, clock, 0)
    status = _get(store, "CronJob", "tick")["status"]
    assert "active" not in status and status["lastSuccessfulTime"] == "2025-06-15T15:10:30Z"


def test_cronjob_history_limits_suspend_and_missed_times(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create(_cronjob("tick", "* * * * *", successfulJobsHistoryLimit=2))
    for _ in range(5):
        advance(dc, clock, 60)
    advance(dc, clock, 0)
    # Five Jobs: the one just created runs; of four finished, the two oldest are deleted.
    assert len(_jobs(store)) == 3
    assert [n for n in _jobs(store) if int(n.rsplit("-", 1)[1]) < int(clock.t // 60) - 2] == []
    cj = _get(store, "CronJob", "tick")
    store.update({**cj, "spec": {**cj["spec"], "suspend": True}})
    before = _jobs(store)
    advance(dc, clock, 600)
    assert set(_jobs(store)) < set(before)  # no new Job; the history limit still applies
    cj = _get(store, "CronJob", "tick")
    store.update({**cj, "spec": {**cj["spec"], "suspend": False}})
    dc.step()  # ten missed minutes: only the most recent starts
    newest = max(_jobs(store), key=lambda n: int(n.rsplit("-", 1)[1]))
    assert newest not in before and int(newest.rsplit("-", 1)[1]) == int(clock.t // 60)


def test_cronjob_forbid_skips_while_a_job_runs_and_replace_replaces_it(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    long = _cronjob("forbid", "* * * * *", concurrencyPolicy="Forbid")
    long["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]["mkhub.dev/sim-duration"] = "1h"
    store.create(long)
    replace = _cronjob("replace", "* * * * *", concurrencyPolicy="Replace")
    replace["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"]["mkhub.dev/sim-duration"] = "1h"
    store.create(replace)
    advance(dc, clock, 60)
    advance(dc, clock, 60)
    advance(dc, clock, 60)
    forbid = [n for n in _jobs(store) if n.startswith("forbid-")]
    replaced = [n for n in _jobs(store) if n.startswith("replace-")]
    assert len(forbid) == 1 and len(replaced) == 1
    assert int(replaced[0].rsplit("-", 1)[1]) > int(forbid[0].rsplit("-", 1)[1])


def test_a_gated_pod_waits_until_its_gates_are_removed(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
                  "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                           "containers": [{"name": "c", "image": "busybox"}]}})
    dc.step()
    pod = _get(store, "Pod", "p")
    assert "nodeName" not in pod["spec"] and pod["status"]["phase"] == "Pending"
    assert [(c["type"], c["status"], c["reason"]) for c in pod["status"]["conditions"]] == [
        ("PodScheduled", "False", "SchedulingGated")]
    store.update({**pod, "spec": {k: v for k, v in pod["spec"].items() if k != "schedulingGates"}})
    dc.step()
    pod = _get(store, "Pod", "p")
    assert pod["spec"]["nodeName"] == "node-a" and pod["status"]["phase"] == "Running"


def test_a_gated_pods_status_written_by_another_controller_is_left_alone(store: SQLiteStore, clock: Clock) -> None:
    """Kueue's MultiKueue mirrors the worker Pod's status into the manager's gated Pod: the
    scheduler marks a gated Pod once, as it enters the queue, and does not overwrite that."""
    dc = cluster(store, clock)
    store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
                  "spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                           "containers": [{"name": "c", "image": "busybox"}]}})
    dc.step()
    pod = _get(store, "Pod", "p")
    mirrored = {"phase": "Running", "conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
    store.update_status({**pod, "status": mirrored})
    dc.step()
    pod = _get(store, "Pod", "p")
    assert pod["status"] == mirrored and "nodeName" not in pod["spec"]


def test_a_pod_that_restarts_always_never_finishes_unless_it_has_its_own_run_time(
        store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock)
    for name, policy, notes in (("always", "Always", {}), ("never", "Never", {}),
                                      ("stops", "Always", {"mkhub.dev/sim-duration": "20s"})):
        store.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS,
                                                                       "annotations": notes},
                      "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "busybox"}]}})
    dc.step()
    advance(dc, clock, 3600)
    assert {p["metadata"]["name"]: p["status"]["phase"] for p in _pods(store)} == {
        "always": "Running", "never": "Succeeded", "stops": "Succeeded"}


def test_cronjob_jobs_are_created_through_the_given_client(store: SQLiteStore, clock: Clock) -> None:
    """mkhub dev-cluster passes its API, so a CronJob's Jobs meet admission webhooks; a refusal
    (InvalidObject) creates nothing and is tried again at the next time."""
    from hub.store.interface import InvalidObject

    seen: list[str] = []

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append(obj["metadata"]["name"])
        if len(seen) == 1:
            raise InvalidObject('admission webhook "x" denied the request')
        return store.create({**obj, "spec": {**obj["spec"], "suspend": True}})  # as Kueue's webhook would

    dc = DevCluster(store, (Node("node-a"),), clock=clock, create=create)
    dc.start()
    store.create(_cronjob("tick", "* * * * *"))
    advance(dc, clock, 60)
    assert len(seen) == 1 and _jobs(store) == []
    advance(dc, clock, 60)
    assert len(seen) == 2 and _jobs(store) == [seen[1]] and _get(store, "Job", seen[1])["spec"]["suspend"] is True


def test_replicasets_and_pods_are_created_through_the_given_client(store: SQLiteStore, clock: Clock) -> None:
    """As Kueue's pod webhook must see a Deployment's pods; a refused pod is tried again after 5 s."""
    from hub.store.interface import InvalidObject

    kinds: list[str] = []
    refuse = [True]

    def create(obj: dict[str, Any]) -> dict[str, Any]:
        kinds.append(obj["kind"])
        if obj["kind"] == "Pod" and refuse[0]:
            raise InvalidObject('admission webhook "pods" denied the request')
        return store.create(obj)

    dc = DevCluster(store, (Node("node-a"),), clock=clock, create=create)
    dc.start()
    store.create(_apps("Deployment", "web", 2))
    dc.step()
    assert kinds[0] == "ReplicaSet" and "Pod" in kinds and _pods(store) == []
    refuse[0] = False
    advance(dc, clock, 4)
    assert _pods(store) == []
    advance(dc, clock, 1)
    assert len(_pods(store)) == 2
