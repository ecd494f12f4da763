"""TrainJob (``trainer.kubeflow.org/v1alpha1``) on the job framework (Kueue's
``pkg/controller/jobs/trainjob``).

Its pod sets are those of the JobSet the Trainer makes from its runtime (one per replicated
job, the trainer step's of ``numNodes`` pods): the adapter needs the runtime, which the
controllers look up (:meth:`TrainJobAdapter.resolve`, by ``referenced_kinds``); while it is
missing no Workload is made, as Kueue's reconciler fails to build one ("runtime not found")
and tries again. The admission goes into Kueue's entry of ``spec.runtimePatches`` (manager
``kueue.x-k8s.io/manager``): per pod set its labels, annotations, nodeSelector and
tolerations; a restore empties it. The Trainer's conditions (``Complete``, ``Failed``) say when
it finished, ``status.jobsStatus`` when its pods are ready.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..errors import FieldErrors
from ..jobset_kind import read_jobset
from ..meta import ObjectMeta, format_time
from ..reader import Reader
from ..trainjob_kind import (
    CLUSTER_RUNTIME,
    KUEUE_PATCH_MANAGER,
    RUNTIME,
    TRAINER_API_VERSION,
    TRAINJOB_CONTROLLER,
    TrainingRuntime,
    TrainJob,
    child_jobset_spec,
)
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
from .framework import Manifest, Outcome, PodSetInfo, identity
from .jobset import JOBSET

COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"

Lookup = Callable[[str, str, str], Any]


def _outcome(conditions: Sequence[tuple[str, bool, str]]) -> Outcome | None:
    """Kueue's ``Finished``: Complete true, else Failed true, with the condition's message."""
    for type_, ok in ((COMPLETE, True), (FAILED, False)):
        for cond_type, is_true, message in conditions:
            if cond_type == type_ and is_true:
                return ("succeeded" if ok else "failed"), message or f"TrainJob {type_.lower()}"
    return None


def _kueue_patch(manifest: Manifest) -> dict[str, Any]:
    """Kueue's entry in ``spec.runtimePatches`` (made when missing: Kueue's webhook adds it at creation)."""
    patches = manifest.setdefault("spec", {}).setdefault("runtimePatches", [])
    for patch in patches:
        if isinstance(patch, dict) and patch.get("manager") == KUEUE_PATCH_MANAGER:
            return patch
    patch = {"manager": KUEUE_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
    patches.append(patch)
    return patch


def _patch_spec(patch: dict[str, Any]) -> dict[str, Any]:
    runtime = patch.setdefault("trainingRuntimeSpec", {})
    return runtime.setdefault("template", {}).setdefault("spec", {})  # type: ignore[no-any-return]


class TrainJobAdapter:
    framework = "trainer.kubeflow.org/trainjob"
    api_version = TRAINER_API_VERSION
    kind = "TrainJob"
    controller_template_labels = JOBSET.controller_template_labels
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    controller_name = TRAINJOB_CONTROLLER
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = ("conditions", "jobsStatus", "trainerStatus")
    # The kinds its pod sets come from: the controllers keep them for resolve().
    referenced_kinds: tuple[str, ...] = (CLUSTER_RUNTIME, RUNTIME)

    def webhook_defaults(self, body: Manifest) -> list[tuple[tuple[str, ...], Any]]:
        """Kueue's webhook adds its (empty) entry to ``spec.runtimePatches`` at creation."""
        patches = (body.get("spec") or {}).get("runtimePatches")
        current = list(patches) if isinstance(patches, list) else []
        if any(isinstance(p, dict) and p.get("manager") == KUEUE_PATCH_MANAGER for p in current):
            return []
        entry = {"manager": KUEUE_PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {}}}}
        return [(("spec", "runtimePatches"), [*current, entry])]

    def resolve(self, job: TrainJob, lookup: Lookup) -> TrainJob | None:
        """``job`` with its runtime, or None while the runtime does not exist."""
        runtime = lookup(*job.runtime_key)
        return replace(job, runtime=runtime) if isinstance(runtime, TrainingRuntime) else None

    def jobset_spec(self, job: TrainJob) -> dict[str, Any] | None:
        if job.runtime is None:
            return None
        return child_jobset_spec(job.spec_raw, job.runtime.spec_raw)

    def pod_sets(self, job: TrainJob) -> list[PodSet]:
        """The child JobSet's pod sets (none before the runtime is known)."""
        spec = self.jobset_spec(job)
        if spec is None:
            return []
        js = read_jobset(Reader({"spec": spec}, "", FieldErrors()), ObjectMeta(name=job.meta.name, namespace=job.meta.namespace))
        return JOBSET.pod_sets(js)

    def pod_spec_priority_class(self, job: TrainJob) -> str:
        return ""  # Kueue's TrainJob has no pod priority class: only a WorkloadPriorityClass label

    def is_suspended(self, job: TrainJob) -> bool:
        return job.suspend

    def managed_by(self, job: TrainJob) -> str:
        return job.managed_by

    def finished(self, job: TrainJob) -> Outcome | None:
        return _outcome([(c.type, c.is_true, c.message) for c in job.status.conditions])

    def pods_ready(self, job: TrainJob) -> bool:
        """Kueue's: every replica (child Job) of the JobSet is ready or succeeded. Without the
        runtime at hand, every listed replicated job's Jobs are ready (none only active)."""
        statuses = job.status.jobs_status
        spec = self.jobset_spec(job)
        if spec is not None:
            replicas = sum(int(rj.get("replicas", 1)) for rj in spec.get("replicatedJobs") or [])
            return replicas == sum(s.ready + s.succeeded for s in statuses)
        return bool(statuses) and all(s.ready + s.succeeded > 0 and s.ready >= s.active and not s.failed
                                      for s in statuses)

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        patches = []
        for info in infos:
            meta = {k: dict(v) for k, v in (("labels", info.labels), ("annotations", info.annotations)) if v}
            spec: dict[str, Any] = {}
            if info.node_selector:
                spec["nodeSelector"] = dict(info.node_selector)
            if info.tolerations:
                spec["tolerations"] = copy.deepcopy(info.tolerations)
            pod = {k: v for k, v in (("metadata", meta), ("spec", spec)) if v}
            patches.append({"name": info.name, "template": {"spec": {"template": pod}}})
        _patch_spec(_kueue_patch(manifest))["replicatedJobs"] = patches
        manifest["spec"]["suspend"] = False

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        _patch_spec(_kueue_patch(manifest)).pop("replicatedJobs", None)

    def manifest(self, job: TrainJob) -> Manifest:
        meta = identity(job.meta)
        spec = copy.deepcopy(job.spec_raw)
        spec["suspend"] = job.suspend
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": spec}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        spec: dict[str, Any] = manifest.setdefault("spec", {})
        spec.pop("managedBy", None)  # the worker's Trainer takes it over
        spec["suspend"] = False
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        return _outcome([(str(c.get("type")), c.get("status") == "True", str(c.get("message") or ""))
                         for c in conditions])

    def status_running(self, status: Manifest) -> bool:
        """Some child Job is ready or done (the agent's ``ready`` report)."""
        return any(isinstance(s, dict) and (_int(s.get("ready")) or _int(s.get("succeeded")))
                   for s in status.get("jobsStatus") or [])

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: TrainJob, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the Trainer would write for the simulated pods (embedded mode)."""
        prev = previous or {}
        admitted, finished = wl.status.condition(ADMITTED), wl.status.condition(FINISHED)
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        ready = running and ready_at is not None
        names = [ps.name for ps in wl.pod_sets]
        conds = {c["type"]: c for c in prev.get("conditions") or [] if isinstance(c, dict)}

        def put(type_: str, status: str, reason: str, message: str, when: str) -> None:
            old = conds.get(type_)
            if old is None or old.get("status") != status:
                conds[type_] = {"type": type_, "status": status, "reason": reason, "message": message,
                                "lastTransitionTime": when}

        if finished is not None and finished.is_true:
            ok, when = finished.reason == "Succeeded", format_time(finished.last_transition_time)
            jobs = [_job_status(n, succeeded=1 if ok else 0, failed=0 if ok else 1) for n in names]
            put(COMPLETE if ok else FAILED, "True", "JobSetCompleted" if ok else "JobSetFailed",
                finished.message or ("jobset completed successfully" if ok else "jobset failed"), when)
        elif running:
            assert admitted is not None
            jobs = [_job_status(n, active=1, ready=1 if ready else 0) for n in names]
            if SUSPENDED in conds:
                put(SUSPENDED, "False", "Resumed", "TrainJob is resumed", format_time(admitted.last_transition_time))
        else:
            evicted = wl.status.condition(EVICTED)
            when = format_time(evicted.last_transition_time if evicted is not None and evicted.is_true
                               else wl.meta.creation_timestamp or 0.0)
            jobs = [_job_status(n, suspended=1) for n in names]
            put(SUSPENDED, "True", "Suspended", "TrainJob is suspended", when)
        order = (SUSPENDED, COMPLETE, FAILED)
        return {"conditions": [conds[t] for t in order if t in conds], "jobsStatus": jobs}


def _job_status(name: str, *, ready: int = 0, succeeded: int = 0, failed: int = 0, active: int = 0,
                suspended: int = 0) -> Manifest:
    return {"name": name, "ready": ready, "succeeded": succeeded, "failed": failed, "active": active,
            "suspended": suspended}


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


TRAINJOB = TrainJobAdapter()
