"""Kueue's batch/v1 Job integration: the Workload a queued Job becomes."""

from __future__ import annotations

import hashlib
from typing import Any

from .errors import FieldErrors
from .meta import ObjectMeta
from .others import (
    JOB_MIN_PARALLELISM_ANNOTATION,
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    PRIORITY_CLASS_LABEL,
    Job,
)
from .pods import read_pod_template
from .reader import Reader
from .workload import (
    DEFAULT_POD_SET_NAME,
    POD_PRIORITY_CLASS_GROUP,
    POD_PRIORITY_CLASS_KIND,
    WORKLOAD_PRIORITY_CLASS_GROUP,
    WORKLOAD_PRIORITY_CLASS_KIND,
    PodSet,
    PriorityClassRef,
    Workload,
)

_HASH_LENGTH = 5
_MAX_NAME = 253


def workload_name_for_job(job_name: str, job_uid: str, kind: str = "Job", group: str = "batch") -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``job-<name>-<5 hex of sha1(kind, group, name, uid)>``."""
    digest = hashlib.sha1("\n".join((kind, group, job_name, job_uid)).encode()).hexdigest()
    prefix = f"{kind.lower()}-{job_name}"[: _MAX_NAME - 1 - _HASH_LENGTH]
    return f"{prefix}-{digest[:_HASH_LENGTH]}"


def _clean_template(template: dict[str, Any]) -> dict[str, Any]:
    """Drop the job controller's own labels from the pod template, as Kueue does."""
    out = dict(template)
    meta = dict(out.get("metadata") or {})
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k not in ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name")
    }
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    if meta:
        out["metadata"] = meta
    else:
        out.pop("metadata", None)
    return out


def workload_for_job(job: Job) -> Workload:
    """The Workload Kueue's job reconciler creates for ``job`` (priority resolved later)."""
    min_count = None
    raw_min = job.meta.annotations.get(JOB_MIN_PARALLELISM_ANNOTATION)
    if raw_min is not None and raw_min.lstrip("-").isdigit():
        min_count = int(raw_min)
    template = _clean_template(job.template)
    pod_set = PodSet(
        name=DEFAULT_POD_SET_NAME,
        count=job.pods_count,
        template=template,
        spec=read_pod_template(Reader(template, "spec.template", FieldErrors())),
        min_count=min_count,
    )
    ref = None
    wpc = job.meta.labels.get(PRIORITY_CLASS_LABEL)
    if wpc:
        ref = PriorityClassRef(WORKLOAD_PRIORITY_CLASS_GROUP, WORKLOAD_PRIORITY_CLASS_KIND, wpc)
    elif job.pod_spec.priority_class_name:
        ref = PriorityClassRef(POD_PRIORITY_CLASS_GROUP, POD_PRIORITY_CLASS_KIND, job.pod_spec.priority_class_name)
    max_exec = job.meta.labels.get(MAX_EXEC_TIME_LABEL)
    labels = {JOB_UID_LABEL: job.meta.uid} if job.meta.uid else {}
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": job.meta.name,
        "uid": job.meta.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return Workload(
        meta=ObjectMeta(
            name=workload_name_for_job(job.meta.name, job.meta.uid),
            namespace=job.meta.namespace,
            labels=labels,
            creation_timestamp=job.meta.creation_timestamp,
            owner_references=[owner],
        ),
        pod_sets=(pod_set,),
        queue_name=job.queue_name,
        priority_class_ref=ref,
        active=True,
        maximum_execution_time_seconds=int(max_exec) if max_exec and max_exec.isdigit() else None,
    )
