"""The JobSet adapter: pod sets per replicated job, the admission in and out of their templates,
finished and pods ready as Kueue's JobSet integration reads them, the simulated JobSet status."""

from __future__ import annotations

import copy
from typing import Any

from hub.api.jobkinds import ADAPTERS, BATCH_JOB, JOBSET, adapter_for
from hub.api.jobkinds.framework import pod_set_infos, workload_for
from hub.api.jobset_kind import JobSet
from hub.api.meta import Condition, ObjectMeta
from hub.api.others import Job
from hub.api.queues import ResourceFlavor
from hub.api.registry import parse_object
from hub.api.workload import Admission, PodSetAssignment, Workload


def rjob(name: str, replicas: int, parallelism: int, completions: int | None, cpu: str,
         annotations: dict[str, str] | None = None, **pod_extra: Any) -> dict[str, Any]:
    job_spec: dict[str, Any] = {"parallelism": parallelism, "template": {
        "metadata": {"labels": {"app": name}, **({"annotations": annotations} if annotations else {})},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
                 "restartPolicy": "Never", **pod_extra}}}
    if completions is not None:
        job_spec["completions"] = completions
    return {"name": name, "replicas": replicas, "template": {"spec": job_spec}}


def manifest(*replicated: dict[str, Any], suspend: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "team", "uid": "u-1", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": suspend, "replicatedJobs": list(replicated) or [
            rjob("driver", 1, 1, 1, "1"), rjob("workers", 3, 4, 2, "2", nodeSelector={"zone": "a"})]},
    }


def parse(m: dict[str, Any]) -> JobSet:
    obj = parse_object(copy.deepcopy(m))
    assert isinstance(obj, JobSet)
    return obj


def test_registered_under_kueues_framework_name_with_its_controller() -> None:
    assert ADAPTERS["jobset.x-k8s.io/jobset"] is JOBSET
    assert adapter_for("jobset.x-k8s.io/v1alpha2", "JobSet") is JOBSET
    assert JOBSET.controller_name == "jobset.sigs.k8s.io/jobset-controller"
    assert BATCH_JOB.controller_name == "kubernetes.io/job-controller"


def test_one_pod_set_per_replicated_job_counting_replicas_times_min_parallelism_completions() -> None:
    wl = workload_for(JOBSET, parse(manifest(rjob("driver", 1, 1, None, "1"), rjob("workers", 3, 4, 2, "2"),
                                             rjob("idle", 0, 2, 2, "1"))))
    assert [(ps.name, ps.count, ps.min_count) for ps in wl.pod_sets] == [("driver", 1, None), ("workers", 6, None),
                                                                         ("idle", 0, None)]
    assert wl.pod_sets[1].spec.per_pod_requests == (("cpu", 2000),)
    assert wl.meta.name.startswith("jobset-train-") and wl.queue_name == "lq"


def test_the_jobset_and_job_controllers_labels_stay_out_of_the_pod_sets() -> None:
    m = manifest()
    labels = m["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["labels"]
    labels.update({"jobset.sigs.k8s.io/jobset-name": "train", "jobset.sigs.k8s.io/job-index": "0",
                   "batch.kubernetes.io/job-name": "train-workers-0"})
    assert JOBSET.pod_sets(parse(m))[1].template["metadata"]["labels"] == {"app": "workers"}


def test_topology_requests_carry_the_completion_index_and_the_job_index_sub_groups() -> None:
    tas = {"kueue.x-k8s.io/podset-preferred-topology": "rack"}
    pod_sets = JOBSET.pod_sets(parse(manifest(rjob("driver", 1, 1, 1, "1"), rjob("workers", 3, 2, 2, "1", tas))))
    assert pod_sets[0].topology_request is None
    assert pod_sets[1].topology_request == {
        "preferred": "rack", "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index", "subGroupCount": 3}
    job = parse_object({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "team"},
                        "spec": {"template": {"metadata": {"annotations": tas}, "spec": {"containers": [{"name": "c"}]}}}})
    assert isinstance(job, Job)
    assert BATCH_JOB.pod_sets(job)[0].topology_request == {"preferred": "rack",
                                                          "podIndexLabel": "batch.kubernetes.io/job-completion-index"}


def _admitted_on_two_flavors(m: dict[str, Any]) -> tuple[Workload, dict[str, ResourceFlavor]]:
    wl = workload_for(JOBSET, parse(m))
    wl.status.admission = Admission("cq", (
        PodSetAssignment("driver", (("cpu", "on-demand"),), (("cpu", 1000),), 1),
        PodSetAssignment("workers", (("cpu", "spot"),), (("cpu", 12000),), 6),
    ))
    flavors = {
        "on-demand": ResourceFlavor(ObjectMeta("on-demand"), node_labels={"pool": "on-demand"}),
        "spot": ResourceFlavor(ObjectMeta("spot"), node_labels={"pool": "spot"}),
    }
    return wl, flavors


def test_two_replicated_jobs_on_two_flavors_run_each_on_its_own_then_restore_as_they_were() -> None:
    m = manifest()
    before = copy.deepcopy(m)
    wl, flavors = _admitted_on_two_flavors(m)
    infos = pod_set_infos(wl, flavors)
    assert [(i.name, i.count, i.node_selector) for i in infos] == [("driver", 1, {"pool": "on-demand"}),
                                                                  ("workers", 6, {"pool": "spot"})]
    JOBSET.run_with_pod_sets_info(m, list(reversed(infos)), wl.pod_sets)  # matched by name, not position
    driver, workers = (rj["template"]["spec"]["template"]["spec"] for rj in m["spec"]["replicatedJobs"])
    assert driver["nodeSelector"] == {"pool": "on-demand"}
    assert workers["nodeSelector"] == {"zone": "a", "pool": "spot"}
    assert not parse(m).suspend
    JOBSET.suspend(m)
    JOBSET.restore_pod_sets_info(m, wl.pod_sets)
    assert m == before


def test_finished_as_kueue_reads_the_completed_and_failed_conditions() -> None:
    m = manifest()
    m["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "FailedJobs", "message": ""},
                                  {"type": "Completed", "status": "False", "reason": "x", "message": "no"}]}
    assert JOBSET.finished(parse(m)) == ("failed", "jobset failed due to one or more job failures")
    m["status"]["conditions"][1]["status"] = "True"
    assert JOBSET.finished(parse(m)) == ("succeeded", "no")  # Completed is looked at first
    assert JOBSET.status_outcome(m["status"]) == ("succeeded", "no")
    assert JOBSET.status_terminal({"terminalState": "Failed"}) and not JOBSET.status_terminal({"restarts": 1})


def test_pods_ready_when_every_replica_is_ready_or_succeeded() -> None:
    m = manifest()  # driver 1 replica, workers 3
    m["status"] = {"replicatedJobsStatus": [{"name": "driver", "succeeded": 1}, {"name": "workers", "ready": 2}]}
    assert not JOBSET.pods_ready(parse(m))
    m["status"]["replicatedJobsStatus"][1]["succeeded"] = 1
    assert JOBSET.pods_ready(parse(m))


def test_priority_class_of_the_first_replicated_job_that_names_one() -> None:
    m = manifest(rjob("driver", 1, 1, 1, "1"), rjob("workers", 1, 1, 1, "1", priorityClassName="high"))
    ref = workload_for(JOBSET, parse(m)).priority_class_ref
    assert ref is not None and ref.name == "high" and not ref.is_workload_priority_class


def test_the_worker_copy_is_run_by_the_workers_jobset_controller() -> None:
    m = manifest()
    m["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    copy_ = JOBSET.worker_copy(copy.deepcopy(m))
    assert "managedBy" not in copy_["spec"] and copy_["spec"]["suspend"] is False
    assert copy_["spec"]["replicatedJobs"] == m["spec"]["replicatedJobs"]


def _workload(m: dict[str, Any], *conditions: tuple[str, str, float]) -> Workload:
    wl = workload_for(JOBSET, parse(m))
    wl.meta.creation_timestamp = 10.0
    wl.status.conditions = [Condition(t, "True", reason, "it ended", at) for t, reason, at in conditions]
    return wl


def test_the_simulated_status_is_written_as_the_jobset_controller_writes_it() -> None:
    m = manifest()
    job = parse(m)
    pending = JOBSET.simulated_status(_workload(m), job, None, None)
    assert pending["conditions"] == [{"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                                      "message": "jobset is suspended", "lastTransitionTime": "1970-01-01T00:00:10Z"}]
    assert [(s["name"], s["suspended"], s["active"]) for s in pending["replicatedJobsStatus"]] == [("driver", 1, 0),
                                                                                                 ("workers", 3, 0)]
    admitted = ("Admitted", "Admitted", 20.0)
    running = JOBSET.simulated_status(_workload(m, admitted), job, pending, None)
    assert running["conditions"] == [{"type": "Suspended", "status": "False", "reason": "ResumeJobs",
                                      "message": "jobset is resumed", "lastTransitionTime": "1970-01-01T00:00:20Z"}]
    assert [(s["active"], s["ready"], s["suspended"]) for s in running["replicatedJobsStatus"]] == [(1, 0, 0), (3, 0, 0)]
    ready = JOBSET.simulated_status(_workload(m, admitted), job, running, 25.0)
    assert [s["ready"] for s in ready["replicatedJobsStatus"]] == [1, 3]
    assert ready["conditions"] == running["conditions"]  # unchanged since it resumed
    done = JOBSET.simulated_status(_workload(m, admitted, ("Finished", "Succeeded", 30.0)), job, ready, 25.0)
    assert done["terminalState"] == "Completed"
    assert done["conditions"][-1] == {"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                                      "message": "it ended", "lastTransitionTime": "1970-01-01T00:00:30Z"}
    assert [s["succeeded"] for s in done["replicatedJobsStatus"]] == [1, 3]
    evicted = JOBSET.simulated_status(_workload(m, admitted, ("Evicted", "Preempted", 27.0)), job, ready, 25.0)
    assert evicted["conditions"] == [{"type": "Suspended", "status": "True", "reason": "SuspendedJobs",
                                      "message": "jobset is suspended", "lastTransitionTime": "1970-01-01T00:00:27Z"}]
    assert [(s["active"], s["suspended"]) for s in evicted["replicatedJobsStatus"]] == [(0, 1), (0, 3)]
    failed = JOBSET.simulated_status(_workload(m, admitted, ("Finished", "Failed", 30.0)), job, ready, 25.0)
    assert failed["terminalState"] == "Failed" and failed["conditions"][-1]["reason"] == "FailedJobs"
    assert JOBSET.finished(parse({**m, "status": failed})) == ("failed", "it ended")
