"""What Kueue's webhooks do alike for the kinds that make Pods rather than being suspended
(Deployment, StatefulSet: :mod:`.serving`; LeaderWorkerSet: :mod:`.leaderworkerset`).

They mark the pod templates so the pod webhook gates the Pods their controllers create, they
refuse the same queue and priority-class label changes, and the group Workload they imply is
owned by the parent object, as Kueue's reconcilers make it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import FieldErrors
from ..others import JOB_UID_LABEL, PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from ..validation import NOT_DNS_SUBDOMAIN, is_dns_subdomain
from ..workload import Workload
from .framework import Manifest
from .pod import MANAGED_LABEL, MANAGED_VALUE, SUSPENDED_BY_PARENT_ANNOTATION

JOB_OWNER_GVK_ANNOTATION = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME_ANNOTATION = "kueue.x-k8s.io/job-owner-name"
_QUEUE_PATH = f"metadata.labels[{QUEUE_NAME_LABEL}]"
_PRIORITY_PATH = f"metadata.labels[{PRIORITY_CLASS_LABEL}]"


def object_labels(manifest: Manifest) -> dict[str, str]:
    """The object's own labels as strings (none when malformed)."""
    meta = manifest.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def mark_template(template: dict[str, Any], own: Mapping[str, str], framework: str) -> tuple[dict[str, str], dict[str, str]]:
    """Mark a pod template in place as Kueue's parent webhooks do (the managed label, the parent's
    queue-name and priority-class labels, the pod-suspending-parent annotation naming
    ``framework``); returns its labels and annotations for the kind's own marks."""
    meta = template.get("metadata")
    if not isinstance(meta, dict):
        meta = template["metadata"] = {}
    labels = meta["labels"] = dict(meta["labels"]) if isinstance(meta.get("labels"), dict) else {}
    annotations = meta["annotations"] = dict(meta["annotations"]) if isinstance(meta.get("annotations"), dict) else {}
    labels[MANAGED_LABEL] = MANAGED_VALUE
    for key in (QUEUE_NAME_LABEL, PRIORITY_CLASS_LABEL):
        if own.get(key):
            labels[key] = own[key]
    annotations[SUSPENDED_BY_PARENT_ANNOTATION] = framework
    return labels, annotations


def check_labels(manifest: Manifest, old: Manifest | None, errs: FieldErrors) -> None:
    """The queue name a DNS subdomain; on update it cannot change while a replica (group) is ready,
    nor be removed; the priority-class label cannot be removed, nor added while one is ready."""
    labels = object_labels(manifest)
    queue = labels.get(QUEUE_NAME_LABEL)
    if queue is not None and not is_dns_subdomain(queue):
        errs.invalid(_QUEUE_PATH, queue, NOT_DNS_SUBDOMAIN)
    if old is None:
        return
    old_labels = object_labels(old)
    status = old.get("status")
    ready = status.get("readyReplicas") if isinstance(status, dict) else None
    suspended = not (isinstance(ready, int) and ready > 0)
    new_queue, old_queue = labels.get(QUEUE_NAME_LABEL, ""), old_labels.get(QUEUE_NAME_LABEL, "")
    if (not suspended or not new_queue) and new_queue != old_queue:
        errs.invalid(_QUEUE_PATH, new_queue, "field is immutable")
    new_pc, old_pc = labels.get(PRIORITY_CLASS_LABEL, ""), old_labels.get(PRIORITY_CLASS_LABEL, "")
    if not suspended and not old_pc and new_pc:
        errs.invalid(_PRIORITY_PATH, new_pc, "WorkloadPriorityClass cannot be added to a non-suspended workload")
    elif old_pc and not new_pc:
        errs.invalid(_PRIORITY_PATH, new_pc, "WorkloadPriorityClass cannot be removed from a workload")


def own_by(wl: Workload, ref: Mapping[str, Any], extra_annotations: Mapping[str, str] | None = None) -> None:
    """Make ``wl`` the object of owner reference ``ref`` (a StatefulSet, a LeaderWorkerSet), as
    Kueue's reconcilers make a group Workload: owner reference, job-uid label, owner annotations."""
    wl.meta.owner_references = [{k: ref[k] for k in ("apiVersion", "kind", "name", "uid") if k in ref}]
    if ref.get("uid"):
        wl.meta.labels = {**wl.meta.labels, JOB_UID_LABEL: str(ref["uid"])}
    wl.meta.annotations = {**wl.meta.annotations,
                           JOB_OWNER_GVK_ANNOTATION: f"{ref.get('apiVersion')}, Kind={ref.get('kind')}",
                           JOB_OWNER_NAME_ANNOTATION: str(ref.get("name") or ""), **(extra_annotations or {})}
