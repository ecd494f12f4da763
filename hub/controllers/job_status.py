"""The ``batch/v1`` Job status the hub writes for a Job it does not leave to a cluster: derived
from its Workload (embedded mode: the adapter's simulated status), or MultiKueue's mirror of the
winning worker's Job."""

from __future__ import annotations

from typing import Any

from hub.api.jobkinds.batch_job import BATCH_JOB
from hub.api.others import Job
from hub.api.workload import Workload

Status = dict[str, Any]


def job_status(wl: Workload, job: Job, previous: Status | None) -> Status:
    """``batch/v1`` Job status as the simulated pods would leave it."""
    return BATCH_JOB.simulated_status(wl, job, previous)


def manager_job_status(wl: Workload, job: Job, mirrored: Status | None, previous: Status | None) -> Status:
    """A MultiKueue Job's status in the manager: the winning worker's Job as last reported
    (``mirrored``), else derived from the Workload. A mirror that is not terminal while the
    Workload is finished is stale (the worker Job's last change was not reported: the agent
    finished its copy first, or the report died with a hub): the Workload's outcome decides."""
    if mirrored is not None and not (wl.is_finished and not BATCH_JOB.status_terminal(mirrored)):
        status = mirrored
    else:
        status = job_status(wl, job, previous)
    before = (previous or {}).get("startTime")
    if before and not job.suspend and status.get("startTime") != before:
        # kube-apiserver lets a set startTime change only while the Job is suspended: the one the
        # hub derived at admission stays when the winner's report brings the worker's own.
        status = {**status, "startTime": before}
    return status
