"""MPIJob (``kubeflow.org/v2beta1``) on the job framework (Kueue's ``pkg/controller/jobs/mpijob``).

Pod sets ``launcher`` then ``worker`` (those present; Kueue names them by replica type,
lower-cased as ``NewPodSetReference`` does), of ``replicas`` pods each (1 when unset); no
partial admission. Suspend and managedBy live in ``spec.runPolicy``. The MPI operator's
conditions say when it finished (``Succeeded`` / ``Failed``) and when its pods are ready
(``Running``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FieldErrors
from ..meta import format_time
from ..mpijob_kind import LAUNCHER, MPI_OPERATOR, MPIJOB_API_VERSION, REPLICA_TYPES, WORKER, MPIJob
from ..pods import read_pod_template
from ..reader import Reader
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
from .framework import (
    Manifest,
    Outcome,
    PodSetInfo,
    clean_template,
    info_for,
    merge_into_template,
    restore_template,
    topology_request,
)
from .kubeflow import run_policy_manifest, run_policy_worker_copy
from .tas_ungate import POD_INDEX_OFFSET_ANNOTATION

POD_SET_GROUP_ANNOTATION = "kueue.x-k8s.io/podset-group-name"

REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"  # indexes a replica type's pods (TAS)
CREATED, RUNNING, SUCCEEDED, FAILED, SUSPENDED = "Created", "Running", "Succeeded", "Failed", "Suspended"
# The labels the MPI operator puts on the pods it makes from the templates.
_OPERATOR_LABELS = frozenset(f"training.kubeflow.org/{name}" for name in (
    "job-name", "operator-name", "job-role", "replica-type", "replica-index"))


def _templates(manifest: Manifest) -> list[tuple[str, dict[str, Any]]]:
    """(replica type, its pod template) of a manifest, in pod-set order, made if absent."""
    specs = manifest.setdefault("spec", {}).get("mpiReplicaSpecs") or {}
    return [(t, specs[t].setdefault("template", {})) for t in REPLICA_TYPES if isinstance(specs.get(t), dict)]


def _outcome(conditions: Sequence[tuple[str, bool, str]]) -> Outcome | None:
    """Kueue's ``Finished``: the first Succeeded or Failed condition that is true."""
    for type_, is_true, message in conditions:
        if is_true and type_ in (SUCCEEDED, FAILED):
            return ("succeeded" if type_ == SUCCEEDED else "failed"), message or f"MPIJob {type_.lower()}"
    return None


class MPIJobAdapter:
    framework = "kubeflow.org/mpijob"
    api_version = MPIJOB_API_VERSION
    kind = "MPIJob"
    controller_template_labels = _OPERATOR_LABELS
    managed_by_path: tuple[str, ...] = ("spec", "runPolicy", "managedBy")
    suspend_path: tuple[str, ...] = ("spec", "runPolicy", "suspend")
    controller_name = MPI_OPERATOR
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = ("conditions", "replicaStatuses", "startTime", "completionTime",
                                               "lastReconcileTime")

    def webhook_defaults(self, body: Manifest) -> list[tuple[tuple[str, ...], Any]]:
        """Kueue's MPIJob webhook (``mpijob_webhook.go``, TAS on): with ``runLauncherAsWorker`` the
        workers' indexes start at 1 (the launcher is 0), so the Worker template gets
        ``kueue.x-k8s.io/pod-index-offset: "1"`` for the topology ungater's ranks; not when the
        launcher's template names a pod-set group (the group gives the workers their offset)."""
        spec = body.get("spec")
        specs = spec.get("mpiReplicaSpecs") if isinstance(spec, dict) else None
        if not isinstance(specs, dict) or not isinstance(spec, dict) or spec.get("runLauncherAsWorker") is not True:
            return []
        launcher, worker = specs.get(LAUNCHER), specs.get(WORKER)
        if not isinstance(launcher, dict) or not isinstance(worker, dict):
            return []
        launcher_annotations = ((launcher.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        worker_annotations = ((worker.get("template") or {}).get("metadata") or {}).get("annotations") or {}
        if POD_SET_GROUP_ANNOTATION in launcher_annotations or worker_annotations.get(POD_INDEX_OFFSET_ANNOTATION) == "1":
            return []
        return [(("spec", "mpiReplicaSpecs", WORKER, "template", "metadata", "annotations", POD_INDEX_OFFSET_ANNOTATION), "1")]

    def pod_sets(self, job: MPIJob) -> list[PodSet]:
        out = []
        for replica in job.replica_specs:
            template = clean_template(replica.template, self.controller_template_labels)
            path = f"spec.mpiReplicaSpecs[{replica.type}].template"
            out.append(PodSet(name=replica.type.lower(), count=replica.count, template=template,
                              spec=read_pod_template(Reader(template, path, FieldErrors())),
                              topology_request=topology_request(template, REPLICA_INDEX_LABEL)))
        return out

    def pod_spec_priority_class(self, job: MPIJob) -> str:
        """runPolicy.schedulingPolicy.priorityClass, then the Launcher's, then the Worker's (Kueue's)."""
        if job.scheduling_priority_class:
            return job.scheduling_priority_class
        for type_ in (LAUNCHER, WORKER):
            replica = job.replica(type_)
            if replica is not None and replica.pod_spec.priority_class_name:
                return replica.pod_spec.priority_class_name
        return ""

    def is_suspended(self, job: MPIJob) -> bool:
        return job.suspend

    def managed_by(self, job: MPIJob) -> str:
        return job.managed_by

    def finished(self, job: MPIJob) -> Outcome | None:
        return _outcome([(c.type, c.is_true, c.message) for c in job.status.conditions])

    def pods_ready(self, job: MPIJob) -> bool:
        return any(c.type == RUNNING and c.is_true for c in job.status.conditions)

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        manifest.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = False
        for i, (type_, template) in enumerate(_templates(manifest)):
            info = info_for(infos, type_.lower(), i)
            if info is not None:
                merge_into_template(template, info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        templates = _templates(manifest)
        if len(pod_sets) != len(templates):  # Kueue skips a restore whose pod sets do not match
            return
        for (_, template), ps in zip(templates, pod_sets, strict=True):
            restore_template(template, ps.template or {}, self.controller_template_labels)

    def manifest(self, job: MPIJob) -> Manifest:
        return run_policy_manifest(self.api_version, self.kind, job.meta, job.spec_raw, job.suspend)

    def worker_copy(self, manifest: Manifest) -> Manifest:
        return run_policy_worker_copy(manifest)

    def status_outcome(self, status: Manifest) -> Outcome | None:
        conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
        return _outcome([(str(c.get("type")), c.get("status") == "True", str(c.get("message") or ""))
                         for c in conditions])

    def status_running(self, status: Manifest) -> bool:
        return any(isinstance(c, dict) and c.get("type") == RUNNING and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def status_terminal(self, status: Manifest) -> bool:
        return self.status_outcome(status) is not None

    def simulated_status(self, wl: Workload, job: MPIJob, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the MPI operator would write for the simulated pods (embedded mode)."""
        prev = previous or {}
        ref = f"MPIJob {job.meta.namespace}/{job.meta.name}"
        admitted, finished = wl.status.condition(ADMITTED), wl.status.condition(FINISHED)
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        created = format_time(wl.meta.creation_timestamp or 0.0)
        conds: dict[str, Manifest] = {c["type"]: c for c in prev.get("conditions") or [] if isinstance(c, dict)}

        def put(type_: str, status: str, reason: str, message: str, when: str) -> None:
            old = conds.get(type_)
            if old is not None and old.get("status") == status:
                return
            conds[type_] = {"type": type_, "status": status, "reason": reason, "message": message,
                            "lastUpdateTime": when, "lastTransitionTime": when}

        put(CREATED, "True", "MPIJobCreated", f"{ref} is created.", created)
        counts = {t.type: t.count for t in job.replica_specs}
        statuses: dict[str, Manifest]
        if finished is not None and finished.is_true:
            ok, when = finished.reason == "Succeeded", format_time(finished.last_transition_time)
            statuses = {t: {} for t in counts}
            statuses.setdefault(LAUNCHER, {})["succeeded" if ok else "failed"] = 1
            put(RUNNING, "False", "MPIJobSucceeded" if ok else "MPIJobFailed", finished.message or ref, when)
            put(SUCCEEDED if ok else FAILED, "True", "MPIJobSucceeded" if ok else "MPIJobFailed",
                finished.message or (f"{ref} successfully completed." if ok else f"{ref} has failed"), when)
        elif running:
            assert admitted is not None
            when = format_time(admitted.last_transition_time)
            statuses = {t: {"active": n} for t, n in counts.items()}
            if SUSPENDED in conds:
                put(SUSPENDED, "False", "MPIJobResumed", "MPIJob resumed", when)
            if ready_at is not None:
                put(RUNNING, "True", "MPIJobRunning", f"{ref} is running.", when)
        else:
            statuses = {t: {} for t in counts}
            evicted = wl.status.condition(EVICTED)
            when = format_time(evicted.last_transition_time) if evicted is not None and evicted.is_true else created
            put(SUSPENDED, "True", "MPIJobSuspended", "MPIJob suspended", when)
            if RUNNING in conds:
                put(RUNNING, "False", "MPIJobSuspended", "MPIJob suspended", when)
        order = (CREATED, SUSPENDED, RUNNING, SUCCEEDED, FAILED)
        return {"conditions": [conds[t] for t in order if t in conds], "replicaStatuses": statuses}


MPIJOB = MPIJobAdapter()
