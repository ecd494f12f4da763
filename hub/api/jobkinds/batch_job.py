"""``batch/v1`` Job on the job framework (Kueue's ``pkg/controller/jobs/job``).

One pod set, ``main``, of ``min(parallelism, completions)`` pods; with the
``kueue.x-k8s.io/job-min-parallelism`` annotation the pod set may be admitted
partially, down to that count, and the admitted count runs as ``parallelism``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FieldErrors
from ..meta import format_time
from ..others import JOB_MIN_PARALLELISM_ANNOTATION, Job
from ..pods import read_pod_template
from ..reader import Reader
from ..workload import ADMITTED, DEFAULT_POD_SET_NAME, EVICTED, FINISHED, PodSet, Workload
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

JOB_CONTROLLER = "kubernetes.io/job-controller"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"  # the label indexing a Job's pods (TAS)


class BatchJobAdapter:
    framework = "batch/job"
    api_version = "batch/v1"
    kind = "Job"
    # The Job controller's labels on the template; the prefix entry keeps any of its own on restore.
    controller_template_labels = frozenset(
        {"controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name",
         "batch.kubernetes.io/"}
    )
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    controller_name = JOB_CONTROLLER
    mirrored_status_fields: tuple[str, ...] = ("active", "ready", "succeeded", "failed", "terminating", "conditions", "startTime",
                              "completionTime", "uncountedTerminatedPods", "failedIndexes", "completedIndexes")

    def pod_sets(self, job: Job) -> list[PodSet]:
        raw_min = job.meta.annotations.get(JOB_MIN_PARALLELISM_ANNOTATION)
        min_count = int(raw_min) if raw_min is not None and raw_min.lstrip("-").isdigit() else None
        template = clean_template(job.template, self.controller_template_labels)
        spec = read_pod_template(Reader(template, "spec.template", FieldErrors()))
        return [PodSet(name=DEFAULT_POD_SET_NAME, count=job.pods_count, template=template, spec=spec, min_count=min_count,
                       topology_request=topology_request(template, COMPLETION_INDEX))]

    def pod_spec_priority_class(self, job: Job) -> str:
        return job.pod_spec.priority_class_name

    def is_suspended(self, job: Job) -> bool:
        return job.suspend

    def managed_by(self, job: Job) -> str:
        return job.managed_by

    def finished(self, job: Job) -> Outcome | None:
        for cond in job.status.conditions:
            if cond.is_true and cond.type == "Complete":
                return "succeeded", cond.message or "Job finished successfully"
            if cond.is_true and cond.type == "Failed":
                return "failed", cond.message or cond.reason or "Job failed"
        return None

    def pods_ready(self, job: Job) -> bool:
        return job.status.ready >= job.pods_count > 0

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        spec = manifest.setdefault("spec", {})
        info = info_for(infos, DEFAULT_POD_SET_NAME, 0)
        if info is not None:
            merge_into_template(spec.setdefault("template", {}), info)
            if pod_sets and info.count != pod_sets[0].count:
                spec["parallelism"] = info.count  # partial admission
        spec["suspend"] = False

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        if not pod_sets:
            return
        spec = manifest.setdefault("spec", {})
        restore_template(spec.setdefault("template", {}), pod_sets[0].template or {}, self.controller_template_labels)
        if isinstance(spec.get("parallelism"), int) and spec["parallelism"] < pod_sets[0].count:
            spec["parallelism"] = pod_sets[0].count

    def manifest(self, job: Job) -> Manifest:
        meta = identity(job.meta)
        spec: dict[str, Any] = {"parallelism": job.parallelism, "suspend": job.suspend, "template": job.template}
        if job.completions is not None:
            spec["completions"] = job.completions
        if job.managed_by:
            spec["managedBy"] = job.managed_by
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": spec}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        spec: dict[str, Any] = manifest.setdefault("spec", {})
        spec.pop("managedBy", None)
        spec.pop("selector", None)  # the worker's Job controller generates its own
        spec["suspend"] = False
        template = spec.setdefault("template", {})
        tmeta = template.get("metadata")
        if isinstance(tmeta, dict):  # the manager's Job controller's labels: the worker's sets its own
            labels = {k: v for k, v in (tmeta.get("labels") or {}).items() if k not in _TEMPLATE_CONTROLLER_LABELS}
            if labels:
                tmeta["labels"] = labels
            else:
                tmeta.pop("labels", None)
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        for cond in status.get("conditions") or []:
            if isinstance(cond, dict) and cond.get("status") == "True":
                if cond.get("type") == "Complete":
                    return "succeeded", str(cond.get("message") or "Job finished successfully")
                if cond.get("type") == "Failed":
                    return "failed", str(cond.get("message") or cond.get("reason") or "Job failed")
        return None

    def status_running(self, status: Manifest) -> bool:
        return _count(status, "ready") > 0 or _count(status, "succeeded") > 0

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: Job, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The Job status the simulated pods would leave, from its Workload (embedded mode)."""
        prev = previous or {}
        status: Manifest = {}
        admitted = wl.status.condition(ADMITTED)
        finished = wl.status.condition(FINISHED)
        if admitted is not None and admitted.is_true:
            status["startTime"] = prev.get("startTime") or format_time(admitted.last_transition_time)
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            when = format_time(finished.last_transition_time)
            status.update({
                "active": 0,
                "ready": 0,
                # A Job completes once ``completions`` pods have succeeded, however many run at a time.
                "succeeded" if ok else "failed": job.completions if ok and job.completions is not None else job.pods_count,
                "conditions": [{
                    "type": "Complete" if ok else "Failed",
                    "status": "True",
                    "reason": "CompletionsReached" if ok else "BackoffLimitExceeded",
                    "message": finished.message,
                    "lastTransitionTime": when,
                }],
            })
            if ok:
                status["completionTime"] = when
            return status
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        status["active"] = job.pods_count if running else 0
        status["ready"] = job.pods_count if running and ready_at is not None else 0
        if not running:
            status.pop("startTime", None)
            status["conditions"] = [{
                "type": "Suspended",
                "status": "True",
                "reason": "JobSuspended",
                "message": "Job suspended",
                "lastTransitionTime": _since(prev, "Suspended", wl),
            }]
        return status


_TEMPLATE_CONTROLLER_LABELS = frozenset(
    {"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"})


def _count(status: Manifest, name: str) -> int:
    value = status.get(name)
    return value if isinstance(value, int) else 0


def _since(prev: Manifest, type_: str, wl: Workload) -> str:
    for cond in prev.get("conditions") or []:
        if cond.get("type") == type_ and cond.get("lastTransitionTime"):
            return str(cond["lastTransitionTime"])
    created = wl.meta.creation_timestamp
    return format_time(created if created is not None else 0.0)


BATCH_JOB = BatchJobAdapter()
