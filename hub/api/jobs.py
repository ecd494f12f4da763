"""Kueue's batch/v1 Job integration: the Workload a queued Job becomes (on the job framework)."""

from __future__ import annotations

from .jobkinds.batch_job import BATCH_JOB
from .jobkinds.framework import workload_for, workload_name
from .others import Job
from .workload import Workload


def workload_name_for_job(job_name: str, job_uid: str, kind: str = "Job", group: str = "batch") -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``job-<name>-<5 hex of sha1(kind, group, name, uid)>``."""
    return workload_name(kind, group, job_name, job_uid)


def workload_for_job(job: Job) -> Workload:
    """The Workload Kueue's job reconciler creates for ``job`` (priority resolved later)."""
    return workload_for(BATCH_JOB, job)
