"""The status the hub writes for an object on the job framework that it does not leave to a
cluster: derived from its Workload (embedded mode: the adapter's simulated status), or
MultiKueue's mirror of the winning worker's copy."""

from __future__ import annotations

from typing import Any

from hub.api.jobkinds import adapter_of_kind, is_external
from hub.api.jobkinds.framework import KindObject
from hub.api.workload import Workload

Status = dict[str, Any]


def job_status(wl: Workload, job: KindObject, previous: Status | None, ready_at: float | None) -> Status:
    """The object's status as the simulated pods would leave it (all ready since ``ready_at``)."""
    adapter = adapter_of_kind(job.kind)
    assert adapter is not None
    return adapter.simulated_status(wl, job, previous, ready_at)


def manager_job_status(wl: Workload, job: KindObject, mirrored: Status | None, previous: Status | None,
                       suspended: bool, ready_at: float | None) -> Status:
    """A MultiKueue object's status in the manager: the winning worker's copy as last reported
    (``mirrored``), else derived from the Workload. A mirror that is not terminal while the
    Workload is finished is stale (the worker's last change was not reported: the agent
    finished its copy first, or the report died with a hub): the Workload's outcome decides."""
    adapter = adapter_of_kind(job.kind)
    assert adapter is not None
    if mirrored is not None and is_external(adapter):
        return dict(mirrored)  # the generic adapter mirrors all of it, as is
    if mirrored is not None:
        mirrored = {k: mirrored[k] for k in adapter.mirrored_status_fields if k in mirrored}
    if mirrored is not None and not (wl.is_finished and not adapter.status_terminal(mirrored)):
        status = mirrored
    else:
        status = job_status(wl, job, previous, ready_at)
    before = (previous or {}).get("startTime")
    if before and not suspended and status.get("startTime") != before:
        # kube-apiserver lets a Job's set startTime change only while it is suspended: the one the
        # hub derived at admission stays when the winner's report brings the worker's own.
        status = {**status, "startTime": before}
    return status
