"""JobSet (``jobset.x-k8s.io/v1alpha2``) on the job framework (Kueue's ``pkg/controller/jobs/jobset``).

One pod set per replicated job, named as it, of ``replicas * min(parallelism, completions)``
pods; no partial admission. The admission goes into each replicated job's pod template
(``spec.replicatedJobs[i].template.spec.template``). The JobSet controller's status says when
it finished (``Completed`` / ``Failed`` conditions) and how many of its Jobs are ready.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..errors import FieldErrors
from ..jobset_kind import JOBSET_API_VERSION, JOBSET_CONTROLLER, JobSet
from ..meta import format_time
from ..pods import read_pod_template
from ..reader import Reader
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
from .batch_job import COMPLETION_INDEX, BatchJobAdapter
from .framework import (
    Manifest,
    Outcome,
    PodSetInfo,
    clean_template,
    identity,
    info_for,
    merge_into_template,
    restore_template,
    topology_request,
)

JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"  # which of a replicated job's Jobs a pod is in (TAS)
COMPLETED = "Completed"
FAILED = "Failed"
SUSPENDED = "Suspended"
# The JobSet controller's reasons and messages (its pkg/constants).
COMPLETED_REASON, COMPLETED_MESSAGE = "AllJobsCompleted", "jobset completed successfully"
FAILED_REASON, FAILED_MESSAGE = "FailedJobs", "jobset failed due to one or more job failures"
SUSPENDED_REASON, SUSPENDED_MESSAGE = "SuspendedJobs", "jobset is suspended"
RESUMED_REASON, RESUMED_MESSAGE = "ResumeJobs", "jobset is resumed"

# Labels the JobSet controller puts on its Jobs' pod templates, with the Job controller's.
_JOBSET_LABELS = frozenset(
    f"jobset.sigs.k8s.io/{name}"
    for name in ("jobset-name", "jobset-uid", "replicatedjob-replicas", "global-replicas", "replicatedjob-name",
                 "job-index", "job-global-index", "job-key", "restart-attempt", "coordinator", "group-name",
                 "group-replicas", "job-group-index", "priority")
)


def _pod_template(rj: Manifest) -> dict[str, Any]:
    """``template.spec.template`` of one replicated job in a manifest, made if absent."""
    job: dict[str, Any] = rj.setdefault("template", {})
    return job.setdefault("spec", {}).setdefault("template", {})  # type: ignore[no-any-return]


def _replicated(manifest: Manifest) -> list[Manifest]:
    items = (manifest.get("spec") or {}).get("replicatedJobs") or []
    return [rj for rj in items if isinstance(rj, dict)]


def _outcome(conditions: Sequence[tuple[str, bool, str]]) -> Outcome | None:
    """Kueue's ``Finished``: Completed true first, then Failed true; the condition's message."""
    for type_, ok, default in ((COMPLETED, True, COMPLETED_MESSAGE), (FAILED, False, FAILED_MESSAGE)):
        for cond_type, is_true, message in conditions:
            if cond_type == type_ and is_true:
                return ("succeeded" if ok else "failed"), message or default
    return None


class JobSetAdapter:
    framework = "jobset.x-k8s.io/jobset"
    api_version = JOBSET_API_VERSION
    kind = "JobSet"
    controller_template_labels = BatchJobAdapter.controller_template_labels | _JOBSET_LABELS
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    controller_name = JOBSET_CONTROLLER
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = ("conditions", "restarts", "restartsCountTowardsMax", "terminalState",
                                               "replicatedJobsStatus", "previousInPlaceRestartAttempt",
                                               "currentInPlaceRestartAttempt")

    def pod_sets(self, job: JobSet) -> list[PodSet]:
        out = []
        for i, rj in enumerate(job.replicated_jobs):
            template = clean_template(rj.template, self.controller_template_labels)
            path = f"spec.replicatedJobs[{i}].template.spec.template"
            spec = read_pod_template(Reader(template, path, FieldErrors()))
            out.append(PodSet(name=rj.name, count=rj.pods_count, template=template, spec=spec,
                              topology_request=topology_request(template, COMPLETION_INDEX,
                                                                (JOB_INDEX_LABEL, rj.replicas))))
        return out

    def pod_spec_priority_class(self, job: JobSet) -> str:
        """The first replicated job's with one, as Kueue's ``ExtractPriority`` reads pod sets in order."""
        for rj in job.replicated_jobs:
            if rj.pod_spec.priority_class_name:
                return rj.pod_spec.priority_class_name
        return ""

    def is_suspended(self, job: JobSet) -> bool:
        return job.suspend

    def managed_by(self, job: JobSet) -> str:
        return job.managed_by

    def finished(self, job: JobSet) -> Outcome | None:
        return _outcome([(c.type, c.is_true, c.message) for c in job.status.conditions])

    def pods_ready(self, job: JobSet) -> bool:
        """Kueue's: every replica (child Job) of every replicated job is ready or succeeded."""
        replicas = sum(rj.replicas for rj in job.replicated_jobs)
        ready = sum(s.ready + s.succeeded for s in job.status.replicated_jobs_status)
        return replicas == ready

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        spec = manifest.setdefault("spec", {})
        spec["suspend"] = False
        for i, rj in enumerate(_replicated(manifest)):
            info = info_for(infos, str(rj.get("name", "")), i)
            if info is not None:
                merge_into_template(_pod_template(rj), info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        if not pod_sets:
            return
        by_name = {ps.name: ps for ps in pod_sets}
        for i, rj in enumerate(_replicated(manifest)):
            ps = by_name.get(str(rj.get("name", ""))) or (pod_sets[i] if i < len(pod_sets) else None)
            if ps is not None:
                restore_template(_pod_template(rj), ps.template or {}, self.controller_template_labels)

    def manifest(self, job: JobSet) -> Manifest:
        meta = identity(job.meta)
        spec = copy.deepcopy(job.spec_raw)
        spec["suspend"] = job.suspend
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": spec}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        spec: dict[str, Any] = manifest.setdefault("spec", {})
        spec.pop("managedBy", None)  # the worker's JobSet controller takes it over
        spec["suspend"] = False
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        return _outcome([(str(c.get("type")), c.get("status") == "True", str(c.get("message") or ""))
                         for c in conditions])

    def status_running(self, status: Manifest) -> bool:
        """Some child Job is ready or done (the agent's ``ready`` report, as a Job's first ready pod)."""
        return any(isinstance(rj, dict) and (_int(rj.get("ready")) or _int(rj.get("succeeded")))
                   for rj in status.get("replicatedJobsStatus") or [])

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None or status.get("terminalState") in (COMPLETED, FAILED)

    def simulated_status(self, wl: Workload, job: JobSet, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the JobSet controller would write for the simulated pods (embedded mode)."""
        prev = previous or {}
        admitted = wl.status.condition(ADMITTED)
        finished = wl.status.condition(FINISHED)
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        ready = running and ready_at is not None
        restarts = prev.get("restarts")
        status: Manifest = {"restarts": restarts if isinstance(restarts, int) else 0}
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            status["terminalState"] = COMPLETED if ok else FAILED
            status["replicatedJobsStatus"] = [
                _rj_status(rj.name, succeeded=rj.replicas if ok else 0, failed=0 if ok else rj.replicas)
                for rj in job.replicated_jobs]
            status["conditions"] = [*_kept(prev, SUSPENDED), {
                "type": COMPLETED if ok else FAILED,
                "status": "True",
                "reason": COMPLETED_REASON if ok else FAILED_REASON,
                "message": finished.message or (COMPLETED_MESSAGE if ok else FAILED_MESSAGE),
                "lastTransitionTime": format_time(finished.last_transition_time),
            }]
            return status
        status["replicatedJobsStatus"] = [
            _rj_status(rj.name, active=rj.replicas if running else 0, ready=rj.replicas if ready else 0,
                       suspended=0 if running else rj.replicas)
            for rj in job.replicated_jobs]
        if not running:
            evicted = wl.status.condition(EVICTED)
            stopped = format_time(evicted.last_transition_time) if evicted is not None and evicted.is_true else _created(wl)
            status["conditions"] = [_suspended(True, _since(prev, "True") or stopped)]
        elif admitted is not None and _kept(prev, SUSPENDED):
            # Resumed: the Suspended condition turns False in place (none if it never was suspended).
            status["conditions"] = [_suspended(False, _since(prev, "False") or format_time(admitted.last_transition_time))]
        return status


def _rj_status(name: str, *, ready: int = 0, succeeded: int = 0, failed: int = 0, active: int = 0,
               suspended: int = 0) -> Manifest:
    return {"name": name, "ready": ready, "succeeded": succeeded, "failed": failed, "active": active,
            "suspended": suspended}


def _suspended(is_suspended: bool, when: str) -> Manifest:
    return {
        "type": SUSPENDED,
        "status": "True" if is_suspended else "False",
        "reason": SUSPENDED_REASON if is_suspended else RESUMED_REASON,
        "message": SUSPENDED_MESSAGE if is_suspended else RESUMED_MESSAGE,
        "lastTransitionTime": when,
    }


def _kept(prev: Manifest, type_: str) -> list[Manifest]:
    return [c for c in prev.get("conditions") or [] if isinstance(c, dict) and c.get("type") == type_]


def _since(prev: Manifest, status: str) -> str:
    """When the previous status's Suspended condition last turned ``status``; '' if it is not."""
    for cond in _kept(prev, SUSPENDED):
        if cond.get("status") == status and cond.get("lastTransitionTime"):
            return str(cond["lastTransitionTime"])
    return ""


def _created(wl: Workload) -> str:
    created = wl.meta.creation_timestamp
    return format_time(created if created is not None else 0.0)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


JOBSET = JobSetAdapter()
