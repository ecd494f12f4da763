"""AppWrapper (``workload.codeflare.dev/v1beta2``) on the job framework (Kueue's ``pkg/controller/jobs/appwrapper``).

One Workload for all its components: a pod set per declared (or inferred) pod set, in component
order, named ``<appwrapper>-<index>`` as Kueue names them, of ``replicas`` pods; no partial
admission. Kueue hands the admission to the AppWrapper controller in ``podSetInfos``; here it is
written into the components' pod templates at the pod sets' paths (what that controller then
creates), and taken out again on restore (``podSetInfos`` a real Kueue wrote are cleared too).
The AppWrapper controller's status says when it finished (phase Succeeded / Failed, once its
resources are gone) and when its pods are ready (the ``PodsReady`` condition).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from ..appwrapper_kind import (
    APPWRAPPER_API_VERSION,
    APPWRAPPER_CONTROLLER,
    APPWRAPPER_LABEL,
    TAS_POD_INDEX_LABEL,
    TAS_SUB_GROUP_COUNT,
    TAS_SUB_GROUP_INDEX_LABEL,
    AppWrapper,
    component_pod_sets,
    pod_template_at,
)
from ..meta import format_time
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
)
from .framework import topology_request as template_topology

SUCCEEDED, FAILED, RUNNING, SUSPENDED = "Succeeded", "Failed", "Running", "Suspended"
QUOTA_RESERVED, RESOURCES_DEPLOYED, POD_READY = "QuotaReserved", "ResourcesDeployed", "PodsReady"


def _templates(manifest: Manifest) -> list[dict[str, Any]]:
    """The pod templates of every component's pod sets in a manifest, in pod-set order."""
    out = []
    for component in (manifest.get("spec") or {}).get("components") or []:
        if isinstance(component, dict):
            for path, _, _ in component_pod_sets(component):
                template, _ = pod_template_at(component, path)
                if template is not None:
                    out.append(template)
    return out


def _outcome(phase: str, deployed: bool) -> Outcome | None:
    """Kueue's ``Finished``: Succeeded; Failed once the failed AppWrapper's resources are deleted."""
    if phase == SUCCEEDED:
        return "succeeded", "AppWrapper finished successfully"
    if phase == FAILED and not deployed:
        return "failed", "AppWrapper failed"
    return None


def _true(conditions: Sequence[Any], type_: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == type_ and c.get("status") == "True" for c in conditions)


class AppWrapperAdapter:
    framework = "workload.codeflare.dev/appwrapper"
    api_version = APPWRAPPER_API_VERSION
    kind = "AppWrapper"
    controller_template_labels = frozenset({APPWRAPPER_LABEL})
    managed_by_path: tuple[str, ...] = ("spec", "managedBy")
    controller_name = APPWRAPPER_CONTROLLER
    # Kueue's MultiKueue adapter copies the worker's whole status.
    mirrored_status_fields: tuple[str, ...] = ("phase", "resettingCount", "conditions", "componentStatus")

    def pod_sets(self, job: AppWrapper) -> list[PodSet]:
        out = []
        for i, ps in enumerate(job.pod_sets):
            template = clean_template(ps.template, self.controller_template_labels)
            count = ps.annotations.get(TAS_SUB_GROUP_COUNT, "")
            group = ps.annotations.get(TAS_SUB_GROUP_INDEX_LABEL)
            out.append(PodSet(name=f"{job.meta.name}-{i}", count=ps.replicas, template=template, spec=ps.spec,
                              topology_request=template_topology(
                                  template, ps.annotations.get(TAS_POD_INDEX_LABEL),
                                  (group, int(count)) if group and count.isdigit() else None)))
        return out

    def pod_spec_priority_class(self, job: AppWrapper) -> str:
        return next((ps.spec.priority_class_name for ps in job.pod_sets if ps.spec.priority_class_name), "")

    def is_suspended(self, job: AppWrapper) -> bool:
        return job.suspend

    def managed_by(self, job: AppWrapper) -> str:
        return job.managed_by

    def finished(self, job: AppWrapper) -> Outcome | None:
        deployed = any(c.type == RESOURCES_DEPLOYED and c.is_true for c in job.status.conditions)
        return _outcome(job.status.phase, deployed)

    def pods_ready(self, job: AppWrapper) -> bool:
        return any(c.type == POD_READY and c.is_true for c in job.status.conditions)

    def suspend(self, manifest: Manifest) -> None:
        manifest.setdefault("spec", {})["suspend"] = True

    def run_with_pod_sets_info(self, manifest: Manifest, infos: Sequence[PodSetInfo], pod_sets: Sequence[PodSet]) -> None:
        manifest.setdefault("spec", {})["suspend"] = False
        name = str((manifest.get("metadata") or {}).get("name") or "")
        for i, template in enumerate(_templates(manifest)):
            info = info_for(infos, f"{name}-{i}", i)
            if info is not None:
                merge_into_template(template, info)

    def restore_pod_sets_info(self, manifest: Manifest, pod_sets: Sequence[PodSet]) -> None:
        for component in (manifest.get("spec") or {}).get("components") or []:
            if isinstance(component, dict):
                component.pop("podSetInfos", None)
        for template, ps in zip(_templates(manifest), pod_sets, strict=False):
            restore_template(template, ps.template or {}, self.controller_template_labels)

    def manifest(self, job: AppWrapper) -> Manifest:
        meta = identity(job.meta)
        spec = copy.deepcopy(job.spec_raw)
        spec["suspend"] = job.suspend
        return {"apiVersion": self.api_version, "kind": self.kind, "metadata": meta, "spec": spec}

    def worker_copy(self, manifest: Manifest) -> Manifest:
        spec: dict[str, Any] = manifest.setdefault("spec", {})
        spec.pop("managedBy", None)  # the worker's AppWrapper controller takes it over
        spec["suspend"] = False
        return manifest

    def status_outcome(self, status: Manifest) -> Outcome | None:
        conditions = status.get("conditions") or []
        return _outcome(str(status.get("phase") or ""), _true(conditions, RESOURCES_DEPLOYED))

    def status_running(self, status: Manifest) -> bool:
        return status.get("phase") == RUNNING or _true(status.get("conditions") or [], POD_READY)

    def status_terminal(self, status: Manifest) -> bool:
        return status.get("phase") in (SUCCEEDED, FAILED)

    def simulated_status(self, wl: Workload, job: AppWrapper, previous: Manifest | None, ready_at: float | None) -> Manifest:
        """The status the AppWrapper controller would write for the simulated pods (embedded mode)."""
        admitted = wl.status.condition(ADMITTED)
        finished = wl.status.condition(FINISHED)
        running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
        ready = running and ready_at is not None
        since = {c.get("type"): c for c in (previous or {}).get("conditions") or [] if isinstance(c, dict)}
        when = format_time(admitted.last_transition_time if admitted is not None else wl.meta.creation_timestamp or 0.0)
        if finished is not None and finished.is_true:
            ok = finished.reason == "Succeeded"
            phase = SUCCEEDED if ok else FAILED
            states = {QUOTA_RESERVED: False, RESOURCES_DEPLOYED: False, POD_READY: False}
            when = format_time(finished.last_transition_time)
        else:
            phase = RUNNING if running else SUSPENDED
            states = {QUOTA_RESERVED: running, RESOURCES_DEPLOYED: running, POD_READY: ready}
        conditions = []
        for type_, is_true in states.items():
            status = "True" if is_true else "False"
            kept = since.get(type_)
            keep = kept is not None and kept.get("status") == status and kept.get("lastTransitionTime")
            conditions.append({"type": type_, "status": status, "reason": phase, "message": "",
                               "lastTransitionTime": kept["lastTransitionTime"] if keep and kept else when})
        return {"phase": phase, "resettingCount": 0, "conditions": conditions}


APPWRAPPER = AppWrapperAdapter()
