"""Kubeflow Training v1 on the job framework: one adapter class for PyTorchJob, TFJob, XGBoostJob,
PaddleJob and JAXJob (Kueue's ``pkg/controller/jobs/kubeflow/kubeflowjob``), parametrised by the
kind's :class:`~hub.api.kubeflow_kind.KubeflowKind` (replica-spec field, replica types in order).

One pod set per replica type present, in Kueue's order, named as the type lowercased, of
``replicas`` pods; no partial admission. The admission goes into each replica's pod template
(``spec.<kind>ReplicaSpecs[<type>].template``); ``spec.runPolicy.suspend`` stops and starts it and
``spec.runPolicy.managedBy`` hands it to MultiKueue. The operator's conditions say when it finished
(``Succeeded``/``Failed``, the first one true) and when its pods are ready (``Running``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..errors import FieldErrors
from ..kubeflow_kind import FAMILY, KUBEFLOW_API_VERSION, TRAINING_OPERATOR, KubeflowJob, KubeflowKind
from ..meta import ObjectMeta, format_time
from ..pods import read_pod_template
from ..reader import Reader
from ..workload import ADMITTED, EVICTED, FINISHED, PodSet, Workload
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

REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
# Labels the training operator puts on its pods (never the Workload's).
OPERATOR_LABELS = frozenset(f"training.kubeflow.org/{name}" for name in (
    "job-name", "operator-name", "replica-type", "replica-index", "job-role"))
CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED, SUSPENDED = (
    "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")


def _conditions(status: Manifest) -> list[Manifest]:
    return [c for c in status.get("conditions") or [] if isinstance(c, dict)]


def outcome_of(status: Manifest) -> Outcome | None:
    """Kueue's ``Finished``: the first of Succeeded/Failed that is true, with its message."""
    for c in _conditions(status):
        if c.get("type") in (SUCCEEDED, FAILED) and c.get("status") == "True":
            ok = c["type"] == SUCCEEDED
            return ("succeeded" if ok else "failed"), str(c.get("message") or ("succeeded" if ok else "failed"))
    return None


def condition_true(status: Manifest, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in _conditions(status))


def job_condition(type_: str, value: bool, reason: str, message: str, when: str) -> Manifest:
    """A training-operator JobCondition (it has lastUpdateTime beside lastTransitionTime)."""
    return {"type": type_, "status": "True" if value else "False", "reason": reason, "message": message,
            "lastUpdateTime": when, "lastTransitionTime": when}



def run_policy_manifest(api_version: str, kind: str, meta: ObjectMeta, spec_raw: Manifest, suspend: bool) -> Manifest:
    """The manifest of a kind that keeps its suspend flag in ``spec.runPolicy`` (Kubeflow's, MPIJob)."""
    spec = copy.deepcopy(spec_raw)
    spec.setdefault("runPolicy", {})["suspend"] = suspend
    return {"apiVersion": api_version, "kind": kind, "metadata": identity(meta), "spec": spec}


def run_policy_worker_copy(manifest: Manifest) -> Manifest:
    """A worker's copy of such a kind: no ``managedBy`` (the worker's operator takes it over), running."""
    run_policy: dict[str, Any] = manifest.setdefault("spec", {}).setdefault("runPolicy", {})
    run_policy.pop("managedBy", None)
    run_policy["suspend"] = False
    return manifest

class KubeflowAdapter:
    """The adapter of one kind of the family."""

    api_version = KUBEFLOW_API_VERSION
    controller_template_labels = OPERATOR_LABELS
    managed_by_path: tuple[str, ...] = ("spec", "runPolicy", "managedBy")
    suspend_path: tuple[str, ...] = ("spec", "runPolicy", "suspend")
    controller_name = TRAINING_OPERATOR
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = ("conditions", "replicaStatuses", "startTime", "completionTime",
                                               "lastReconcileTime")

    def __init__(self, family: KubeflowKind) -> None:
        self.family = family
        self.kind = family.kind
        self.framework = family.framework

    def _templates(self, manifest: Manifest) -> list[tuple[str, dict[str, Any]]]:
        """(replica type, pod template) in Kueue's order, templates made if absent."""
        specs = (manifest.get("spec") or {}).get(self.family.replica_field) or {}
        order = self.family.replica_types
        types = sorted((t for t, rs in specs.items() if isinstance(rs, dict)),
                       key=lambda t: (order.index(t) if t in order else len(order), t))
        return [(t, specs[t].setdefault("template", {})) for t in types]

    def pod_sets(self, job: KubeflowJob) -> list[PodSet]:
        out = []
        for rs in job.replicas:
            template = clean_template(rs.template, self.controller_template_labels)
            path = f"spec.{self.family.replica_field}[{rs.type}].template"
            out.append(PodSet(name=rs.type.lower(), count=rs.replicas, template=template,
                              spec=read_pod_template(Reader(template, path, FieldErrors())),
                              topology_request=topology_request(template, REPLICA_INDEX_LABEL)))
        return out

    def pod_spec_priority_class(self, job: KubeflowJob) -> str:
        """``runPolicy.schedulingPolicy.priorityClass``, else the first replica's in order with one."""
        return job.scheduling_priority_class or next(
            (rs.pod_spec.priority_class_name for rs in job.replicas if rs.pod_spec.priority_class_name), "")

    def is_suspended(self, job: KubeflowJob) -> bool:
        return job.suspend

    def managed_by(self, job: KubeflowJob) -> str:
        return job.managed_by

    def finished(self, job: KubeflowJob) -> Outcome | None:
        for c in job.status.conditions:
            if c.type in (SUCCEEDED, FAILED) and c.is_true:
                ok = c.type == SUCCEEDED
                return ("succeeded" if ok else "failed"), c.message or ("succeeded" if ok else "failed")
        return None

    def pods_ready(self, job: KubeflowJob) -> bool:
        """Kueue's: the operator says Running."""
        return any(c.type == RUNNING and c.is_true for c in job.status.conditions)

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        manifest.setdefault("spec", {}).setdefault("runPolicy", {})["suspend"] = False
        for i, (type_, template) in enumerate(self._templates(manifest)):
            info = info_for(infos, type_.lower(), i)
            if info is not None:
                merge_into_template(template, info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        by_name = {ps.name: ps for ps in pod_sets}
        for i, (type_, template) in enumerate(self._templates(manifest)):
            ps = by_name.get(type_.lower()) or (pod_sets[i] if i < len(pod_sets) else None)
            if ps is not None:
                restore_template(template, ps.template or {}, self.controller_template_labels)

    def manifest(self, job: KubeflowJob) -> Manifest:
        return run_policy_manifest(self.api_version, self.kind, job.meta, job.spec_raw, job.suspend)

    def worker_copy(self, manifest: Manifest) -> Manifest:
        return run_policy_worker_copy(manifest)

    def status_outcome(self, status: Manifest) -> Outcome | None:
        return outcome_of(status)

    def status_running(self, status: Manifest) -> bool:
        return condition_true(status, RUNNING)

    def status_terminal(self, status: Manifest) -> bool:
        return outcome_of(status) is not None

    def simulated_status(self, wl: Workload, job: KubeflowJob, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the training operator would write for the simulated pods (embedded mode)."""
        prev = previous or {}
        kind, name = self.kind, f"{job.meta.namespace}/{job.meta.name}"
        admitted, finished = wl.status.condition(ADMITTED), wl.status.condition(FINISHED)
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        ready = running and ready_at is not None
        created = format_time(wl.meta.creation_timestamp or 0.0)
        kept = {str(c.get("type")): c for c in _conditions(prev)}

        def cond(type_: str, value: bool, reason: str, message: str, when: str) -> None:
            old = kept.get(type_)
            if old is not None and old.get("status") == ("True" if value else "False"):
                when = str(old.get("lastTransitionTime") or when)  # unchanged: its transition time stays
            kept[type_] = job_condition(type_, value, f"{kind}{reason}", message, when)

        cond(CREATED, True, "Created", f"{kind} {name} is created.", created)
        status: Manifest = {}
        if finished is not None and finished.is_true:
            ok, when = finished.reason == "Succeeded", format_time(finished.last_transition_time)
            if RUNNING in kept:  # the operator turns Running False in place, its reason and message kept
                kept[RUNNING] = {**kept[RUNNING], "status": "False", "lastUpdateTime": when, "lastTransitionTime": when}
            if ok:
                cond(SUCCEEDED, True, "Succeeded", finished.message or f"{kind} {name} successfully completed.", when)
            else:
                cond(FAILED, True, "Failed", finished.message or f"{kind} {name} has failed.", when)
            status["replicaStatuses"] = {rs.type: {"succeeded" if ok else "failed": rs.replicas} if rs.replicas else {}
                                         for rs in job.replicas}  # omitempty, as the operator writes them
            status["completionTime"] = when
        else:
            since = format_time(admitted.last_transition_time) if admitted is not None else created
            if not running:
                cond(SUSPENDED, True, "Suspended", f"{kind} {name} is suspended.", since)
                if RUNNING in kept:
                    cond(RUNNING, False, "Suspended", f"{kind} {name} is suspended.", since)
            elif SUSPENDED in kept:
                cond(SUSPENDED, False, "Resumed", f"{kind} {name} is resumed.", since)
            if ready:
                cond(RUNNING, True, "Running", f"{kind} {name} is running.", since)
            status["replicaStatuses"] = {rs.type: {"active": rs.replicas} if running and rs.replicas else {}
                                         for rs in job.replicas}
        if admitted is not None and (running or "completionTime" in status):
            status["startTime"] = str(prev.get("startTime") or format_time(admitted.last_transition_time))
        status["conditions"] = list(kept.values())
        return status


KUBEFLOW_ADAPTERS: tuple[KubeflowAdapter, ...] = tuple(KubeflowAdapter(family) for family in FAMILY.values())
