"""The hub's Job integration when the cluster runs Jobs (a store with ``runs_jobs``, as the
Kubernetes store): podset info injection and restore, Workloads finished from the Job's
conditions, no Job status written by the hub, and the MultiKueue mirror of a worker Job."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hub_objects import T0, cluster_queue, is_true, job, local_queue, namespace, seed

from hub.api.config import Configuration
from hub.controllers.hub import HubReconciler
from hub.controllers.kubejobs import STOPPING_ANNOTATION, run_by_cluster
from hub.federation.jobmirror import JobMirror
from hub.kubeapi.jobrules import status_update_errors, update_errors
from hub.store import SQLiteStore
from hub.store.interface import Conflict, InvalidObject, ObjectKey


class ClusterStore(SQLiteStore):
    """The real SQLite store, declaring (as the Kubernetes store does) that the cluster runs Jobs."""

    runs_jobs = True


def tainted_flavor() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "default"},
        "spec": {"nodeLabels": {"pool": "spot"},
                 "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]},
    }


def hub(store: SQLiteStore, now: float = T0) -> HubReconciler:
    rec = HubReconciler(store, Configuration(), now, ready_delay=0.0)
    rec.load(now)
    return rec


def feed(rec: HubReconciler, store: SQLiteStore, since: int, now: float) -> int:
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            rec.observe(ev, now)
            since = ev.resource_version
    return since


def the_job(store: SQLiteStore, name: str = "j1") -> dict[str, Any]:
    got = store.get("Job", "team", name)
    assert got is not None
    return got


def the_workload(store: SQLiteStore) -> dict[str, Any]:
    (wl,) = store.list("Workload")[0]
    return wl


def test_admission_injects_the_flavor_and_the_cluster_runs_the_job() -> None:
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1", duration="1s")])
    rec = hub(store)
    _, since = store.list("Job")
    rec.round(T0)
    stored = the_job(store)
    assert stored["spec"]["suspend"] is False
    pod = stored["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"pool": "spot"}
    assert pod["tolerations"] == [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    assert "status" not in stored  # the Job controller writes it, not the hub
    rec.round(T0 + 60)  # no simulated run: time alone finishes nothing
    assert not is_true(the_workload(store), "Finished")

    stored["status"] = {"active": 1, "ready": 1}
    store.update_status(stored)
    since = feed(rec, store, since, T0 + 61)
    rec.round(T0 + 61)
    wl = the_workload(store)  # ready, with no PodsReady written: Kueue writes it only with waitForPodsReady
    assert rec.engine.is_pods_ready(f"team/{wl['metadata']['name']}") and not is_true(wl, "PodsReady")
    stored = the_job(store)
    stored["status"] = {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods"}]}
    store.update_status(stored)
    feed(rec, store, since, T0 + 62)
    rec.round(T0 + 62)
    finished = next(c for c in the_workload(store)["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    assert the_job(store)["status"]["succeeded"] == 1  # untouched by the hub
    store.close()


def test_eviction_suspends_and_restores_the_template() -> None:
    store = ClusterStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1")])
    rec = hub(store)
    _, since = store.list("Job")
    rec.round(T0)
    assert the_job(store)["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    wl = the_workload(store)
    wl["spec"]["active"] = False  # deactivated: Kueue evicts it
    store.update(wl)
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    stored = the_job(store)
    assert stored["spec"]["suspend"] is True
    assert "nodeSelector" not in stored["spec"]["template"]["spec"]
    assert "tolerations" not in stored["spec"]["template"]["spec"]
    assert is_true(the_workload(store), "Evicted")
    store.close()


def test_a_job_created_without_the_webhook_is_suspended_until_admitted() -> None:
    store = ClusterStore(":memory:")
    running = job("j2")
    running["spec"]["suspend"] = False
    seed(store, [namespace(), tainted_flavor(), cluster_queue(0), local_queue(), running])
    rec = hub(store)
    rec.round(T0)
    assert the_job(store, "j2")["spec"]["suspend"] is True  # no quota: stopped until admitted
    store.close()


def test_a_job_stopped_in_one_write_is_not_read_again_for_the_steps_it_does_not_need() -> None:
    """A Job created running without the webhook, never started, template as created: its stop
    is the suspend alone (no stopping mark), so the startTime and restore steps, which would
    change nothing, are not run: one read of the Job instead of three (issue 26: 2.5% of the
    hub's samples in bench kube --workers 2)."""
    from hub.controllers.kubejobs import write_suspend

    class CountingStore(ClusterStore):
        reads = 0

        def get(self, kind: str, namespace: str, name: str) -> Any:
            if kind == "Job":
                CountingStore.reads += 1
            return super().get(kind, namespace, name)

    store = CountingStore(":memory:")
    running = job("j3")
    running["spec"]["suspend"] = False
    seed(store, [namespace(), running])
    written = write_suspend(store, "Job", "team", "j3", True, None, {})
    assert [o["spec"]["suspend"] for o in written] == [True]
    assert STOPPING_ANNOTATION not in (the_job(store, "j3")["metadata"].get("annotations") or {})
    assert CountingStore.reads == 1 + 1  # the stop's read-modify-write, and the_job's
    store.close()


def test_a_job_that_finished_before_admission_finishes_its_workload() -> None:
    store = ClusterStore(":memory:")
    done = job("j3")
    done["spec"]["suspend"] = False
    seed(store, [namespace(), tainted_flavor(), cluster_queue(0), local_queue(), done])
    stored = the_job(store, "j3")
    stored["status"] = {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}
    store.update_status(stored)
    rec = hub(store)
    rec.round(T0)
    finished = next(c for c in the_workload(store)["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["reason"], finished["message"]) == ("Failed", "Job has reached the specified backoff limit")
    assert the_job(store, "j3")["spec"]["suspend"] is False  # a finished Job is left alone
    store.close()


def test_multikueue_jobs_are_not_run_by_the_cluster() -> None:
    from hub.api.registry import parse_object

    managed = job("mk")
    managed["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert not run_by_cluster(parse_object(managed))  # type: ignore[arg-type]
    assert run_by_cluster(parse_object(job("plain")))  # type: ignore[arg-type]
    managed["spec"]["managedBy"] = "kubernetes.io/job-controller"
    assert run_by_cluster(parse_object(managed))  # type: ignore[arg-type]


@dataclass
class Report:
    workload_uid: str = "u"
    dispatch_id: str = "d"
    job_status_json: str = ""


def test_the_mirror_keeps_the_winners_last_job_status() -> None:
    mirror = JobMirror()
    assert not mirror.record("team/wl", Report())  # an agent that does not report Jobs
    assert not mirror.record("team/wl", Report(job_status_json="[1]"))
    status = {"active": 1, "ready": 1, "startTime": "2026-11-23T22:00:00Z", "extra": "dropped"}
    assert mirror.record("team/wl", Report(job_status_json=json.dumps(status)))
    assert mirror.statuses["team/wl"] == status  # all of it: the kind's adapter picks what it mirrors
    assert not mirror.record("team/wl", Report(job_status_json=json.dumps(status)))  # unchanged
    assert mirror.drain() == {"team/wl"} and mirror.drain() == set()
    mirror.forget("team/wl")
    assert mirror.statuses == {}


def test_a_finished_workload_overrides_a_stale_running_mirror() -> None:
    """The winner's last reported Job status said running, but the Workload finished (the worker
    Job's completion was never reported): the manager's Job still ends Complete."""
    from hub.api.others import Job
    from hub.api.registry import parse_object
    from hub.api.workload import Workload
    from hub.controllers.job_status import manager_job_status

    manager_job = parse_object(job("mk"))
    assert isinstance(manager_job, Job)
    manifest = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "wl", "namespace": "team"},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {"conditions": [
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "",
             "lastTransitionTime": "2026-11-25T20:00:00Z"},
            {"type": "Finished", "status": "True", "reason": "Succeeded", "message": "Job finished: succeeded",
             "lastTransitionTime": "2026-11-25T20:00:05Z"}]},
    }
    finished = parse_object(manifest)
    assert isinstance(finished, Workload)
    running = {"active": 2, "ready": 0, "startTime": "2026-11-25T20:00:01Z"}
    status = manager_job_status(finished, manager_job, running, running, True, None)
    assert is_true({"status": status}, "Complete") and status["active"] == 0
    assert status["startTime"] == "2026-11-25T20:00:01Z"  # the worker's, kept
    complete = {**running, "active": 0, "conditions": [{"type": "Complete", "status": "True"}]}
    assert manager_job_status(finished, manager_job, complete, running, True, None) == complete  # a terminal mirror stands
    manifest["status"]["conditions"].pop()  # still running: the mirror stands
    still_running = parse_object(manifest)
    assert isinstance(still_running, Workload)
    assert manager_job_status(still_running, manager_job, running, None, True, None) == running
    # Only the fields the kind's adapter mirrors (a Job's: batch_job.mirrored_status_fields).
    assert manager_job_status(still_running, manager_job, {**running, "extra": "x"}, None, True, None) == running
    # Unsuspended, the manager's Job keeps the startTime it has: kube-apiserver refuses a change
    # (the one the hub derived at admission, then the worker's own from the winner's report).
    derived = {"active": 1, "startTime": "2026-11-25T20:00:00Z"}
    mirrored = manager_job_status(still_running, manager_job, running, derived, False, None)
    assert mirrored == {**running, "startTime": "2026-11-25T20:00:00Z"}
    assert status_update_errors({"spec": {"suspend": False}, "status": derived}, {"spec": {"suspend": False}, "status": mirrored}) == []


class StrictStore(ClusterStore):
    """The cluster store refusing Job writes as kube-apiserver does (hub.kubeapi.jobrules), and
    counting them; ``conflicts`` Job spec writes answer 409 first, as when the Job controller
    wrote the Job's status between the hub's read and its write."""

    def __init__(self, *args: Any, conflicts: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conflicts = conflicts
        self.job_writes: list[str] = []

    def update(self, obj: Any) -> dict[str, Any]:
        if obj.get("kind") == "Job":
            current = self.get("Job", obj["metadata"]["namespace"], obj["metadata"]["name"])
            assert current is not None
            if self.conflicts:
                self.conflicts -= 1
                raise Conflict(ObjectKey.of(obj), "the object has been modified")
            refused = update_errors(current, obj)
            if refused:
                raise InvalidObject(f"Job {obj['metadata']['name']}: {refused[0]}")
            self.job_writes.append("spec")
        return super().update(obj)

    def update_status(self, obj: Any) -> dict[str, Any]:
        if obj.get("kind") == "Job":
            current = self.get("Job", obj["metadata"]["namespace"], obj["metadata"]["name"])
            assert current is not None
            refused = status_update_errors(current, {**current, "status": obj.get("status")})
            if refused:
                raise InvalidObject(f"Job {obj['metadata']['name']}: {refused[0]}")
            self.job_writes.append("status")
        return super().update_status(obj)


def _started(store: SQLiteStore, name: str = "j1") -> None:
    """What the Job controller writes once the Job runs."""
    stored = the_job(store, name)
    stored["status"] = {"startTime": "2026-01-01T00:00:00Z", "active": 1}
    store.update_status(stored)


def test_a_started_job_is_stopped_in_the_steps_kube_apiserver_accepts_then_started_again() -> None:
    store = StrictStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1")])
    rec = hub(store)
    _, since = store.list("Job")
    rec.round(T0)
    _started(store)
    wl = the_workload(store)
    wl["spec"]["active"] = False  # deactivated: Kueue evicts it
    store.update(wl)
    since = feed(rec, store, since, T0 + 1)
    store.job_writes.clear()
    rec.round(T0 + 1)  # before: one update of suspend and template, refused (422), the round failed
    stopped = the_job(store)
    assert store.job_writes == ["spec", "status", "spec"]  # suspend, clear startTime, restore
    assert stopped["spec"]["suspend"] is True
    assert "nodeSelector" not in stopped["spec"]["template"]["spec"]
    assert "tolerations" not in stopped["spec"]["template"]["spec"]
    assert "startTime" not in stopped["status"]
    assert STOPPING_ANNOTATION not in (stopped["metadata"].get("annotations") or {})
    wl = the_workload(store)
    wl["spec"]["active"] = True
    store.update(wl)
    feed(rec, store, since, T0 + 2)
    rec.round(T0 + 2)
    again = the_job(store)
    assert again["spec"]["suspend"] is False
    assert again["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "spot"}
    store.close()


def test_a_job_write_conflict_is_re_applied_to_a_fresh_read() -> None:
    store = StrictStore(":memory:", conflicts=2)
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1")])
    rec = hub(store)
    rec.round(T0)  # before: the 409 failed the round (and the runtime rebuilt the engine)
    assert the_job(store)["spec"]["suspend"] is False
    assert store.conflicts == 0
    store.close()


def test_a_refused_job_write_fails_no_round(caplog: Any) -> None:
    store = StrictStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1"), job("j2")])
    rec = hub(store)
    _, since = store.list("Job")
    rec.round(T0)
    _started(store)
    original = StrictStore.update

    def refuse_j1(self: StrictStore, obj: Any) -> dict[str, Any]:
        if obj.get("kind") == "Job" and obj["metadata"]["name"] == "j1":
            raise InvalidObject("Job j1: spec.template: Invalid value: {}: field is immutable")
        return original(self, obj)

    StrictStore.update = refuse_j1  # type: ignore[method-assign]
    try:
        for wl in store.list("Workload")[0]:
            wl["spec"]["active"] = False
            store.update(wl)
        feed(rec, store, since, T0 + 1)
        rec.round(T0 + 1)  # j1 is refused; j2 is stopped all the same
    finally:
        StrictStore.update = original  # type: ignore[method-assign]
    assert the_job(store, "j2")["spec"]["suspend"] is True
    assert the_job(store, "j1")["spec"]["suspend"] is False
    assert any("cannot stop Job team/j1" in r.getMessage() for r in caplog.records)
    store.close()


def test_a_stop_left_half_done_by_a_dead_hub_is_finished_on_restore() -> None:
    store = StrictStore(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1")])
    rec = hub(store)
    _, since = store.list("Job")
    rec.round(T0)
    wl = the_workload(store)
    wl["spec"]["active"] = False
    store.update(wl)
    feed(rec, store, since, T0 + 1)
    rec.round(T0 + 1)
    # What a hub killed after the first step of the stop leaves: suspended and marked, the template
    # still injected and the start time kept (written past the rules, as the crash left them).
    half = the_job(store)
    half["metadata"]["annotations"] = {**half["metadata"]["annotations"], STOPPING_ANNOTATION: "true"}
    half["spec"]["template"]["spec"].update(nodeSelector={"pool": "spot"}, tolerations=[{"key": "spot", "operator": "Exists"}])
    SQLiteStore.update(store, half)
    SQLiteStore.update_status(store, {**the_job(store), "status": {"startTime": "2026-01-01T00:00:00Z"}})
    restarted = hub(store, T0 + 2)
    restarted.round(T0 + 2)
    stopped = the_job(store)
    assert STOPPING_ANNOTATION not in stopped["metadata"]["annotations"]
    assert "nodeSelector" not in stopped["spec"]["template"]["spec"]
    assert "tolerations" not in stopped["spec"]["template"]["spec"]
    assert "startTime" not in (stopped.get("status") or {})
    store.close()


def test_a_refused_job_status_write_fails_no_round(caplog: Any) -> None:
    class Refusing(SQLiteStore):  # embedded mode: the hub writes its Jobs' status itself
        def update_status(self, obj: Any) -> dict[str, Any]:
            if obj.get("kind") == "Job" and obj["metadata"]["name"] == "j1":
                raise InvalidObject("Job team/j1: status.startTime: Required value: startTime cannot be removed")
            return super().update_status(obj)

    store = Refusing(":memory:")
    seed(store, [namespace(), tainted_flavor(), cluster_queue(2), local_queue(), job("j1"), job("j2")])
    rec = hub(store)
    rec.round(T0)  # before: the refusal failed the round (and the runtime rebuilt, again and again)
    assert (the_job(store, "j2").get("status") or {}).get("startTime")
    assert "status" not in the_job(store, "j1") or not the_job(store, "j1")["status"].get("startTime")
    assert any("cannot write the status of Job team/j1" in r.getMessage() for r in caplog.records)
    store.close()
