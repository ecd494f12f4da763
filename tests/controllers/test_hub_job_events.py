"""Events on Jobs and on the Workloads the hub creates for them, as Kueue's job reconciler and
client-go's recorder write them: CreatedWorkload, Started, Stopped, FinishedWorkload on the Job,
and every involvedObject with the object's uid, kind, apiVersion, name, namespace and resourceVersion."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, job, seed, setup_objects

from hub.api.config import Configuration
from hub.controllers.hub import HubReconciler
from hub.obs.events import EventRecorder
from hub.obs.observer import ClusterObserver
from hub.store import SQLiteStore


def _hub(store: SQLiteStore) -> HubReconciler:
    observer = ClusterObserver(recorder=EventRecorder("kueue-admission", clock=lambda: T0))
    rec = HubReconciler(store, Configuration(), T0, ready_delay=0.0, observer=observer)
    rec.load(T0)
    return rec


def _events(store: SQLiteStore, kind: str, name_prefix: str) -> list[dict[str, Any]]:
    return [e for e in store.list("Event")[0]
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"].startswith(name_prefix)]


def test_job_events_tell_the_story_kubectl_describe_job_shows(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [job("j1", duration="5s"), job("j2", duration="5s")])
    rec = _hub(store)
    rec.round(T0)
    j1 = store.get("Job", "team", "j1")
    assert j1 is not None
    reasons = {e["reason"]: e for e in _events(store, "Job", "j1")}
    wl_name = next(o["metadata"]["name"] for o in store.list("Workload")[0] if "j1" in o["metadata"]["name"])
    assert reasons["CreatedWorkload"]["message"] == f"Created Workload: team/{wl_name}"
    assert reasons["Started"]["message"] == "Admitted by clusterQueue cq"
    assert reasons["Started"]["source"]["component"] == "batch/job-kueue-controller"  # kubectl describe's From
    ref = reasons["Started"]["involvedObject"]
    assert ref == {"kind": "Job", "namespace": "team", "name": "j1", "uid": j1["metadata"]["uid"],
                   "apiVersion": "batch/v1", "resourceVersion": ref["resourceVersion"]} and ref["resourceVersion"]
    assert {e["reason"] for e in _events(store, "Job", "j2")} == {"CreatedWorkload"}  # waits: no quota left
    rec.round(T0 + 10)
    finished = [e for e in _events(store, "Job", "j1") if e["reason"] == "FinishedWorkload"]
    assert [e["message"] for e in finished] == [f"Workload 'team/{wl_name}' is declared finished"]


def test_events_of_a_workload_created_in_the_round_carry_its_uid(store: SQLiteStore) -> None:
    seed(store, setup_objects(cpu=1) + [job("j1", duration="1h"), job("j2", duration="1h")])
    _hub(store).round(T0)
    pending = store.list("Workload")[0]
    wl = next(o for o in pending if "j2" in o["metadata"]["name"])
    events = _events(store, "Workload", wl["metadata"]["name"])
    assert events and all(e["involvedObject"]["uid"] == wl["metadata"]["uid"] for e in events), events
    assert all(e["involvedObject"]["apiVersion"] == "kueue.x-k8s.io/v1beta2" for e in events)
    assert all(e["involvedObject"].get("resourceVersion") for e in events)


def test_admission_check_messages_are_recorded_on_the_suspended_job_once_each() -> None:
    from hub.api.meta import Condition
    from hub.api.registry import parse_object
    from hub.api.workload import AdmissionCheckState
    from hub.controllers.jobs import JobIntegration
    from hub.engine.engine import Engine

    jobs = JobIntegration(Engine(Configuration()))
    manifest = job("j1")
    manifest["metadata"]["uid"] = "u1"
    wl = jobs.apply(parse_object(manifest), T0)  # type: ignore[arg-type]
    assert wl is not None
    assert [e.reason for e in jobs.drain_events()] == ["CreatedWorkload"]
    wl.status.admission_checks = [AdmissionCheckState("mk", message="The workload got reservation on \"w1\""),
                                  AdmissionCheckState("prov")]
    jobs.on_status([wl])
    assert jobs.drain_events() == []  # no quota reserved yet: Kueue records nothing
    wl.status.conditions = [Condition("QuotaReserved", "True")]
    jobs.on_status([wl])
    jobs.on_status([wl])  # the same message: once
    [ev] = jobs.drain_events()
    assert (ev.reason, ev.message, ev.job.meta.name) == ("UpdatedAdmissionCheck", 'mk: The workload got reservation on "w1"', "j1")
