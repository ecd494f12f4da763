"""The ``batch/v1`` Job status the hub writes for a Job it runs itself (embedded mode):
derived from its Workload, as the simulated pods would leave it."""

from __future__ import annotations

from typing import Any

from hub.api.meta import format_time
from hub.api.others import Job
from hub.api.workload import ADMITTED, EVICTED, FINISHED, PODS_READY, Workload

Status = dict[str, Any]


def job_status(wl: Workload, job: Job, previous: Status | None) -> Status:
    """``batch/v1`` Job status as the simulated pods would leave it."""
    prev = previous or {}
    status: Status = {}
    admitted = wl.status.condition(ADMITTED)
    finished = wl.status.condition(FINISHED)
    if admitted is not None and admitted.is_true:
        status["startTime"] = prev.get("startTime") or format_time(admitted.last_transition_time)
    if finished is not None and finished.is_true:
        ok = finished.reason == "Succeeded"
        when = format_time(finished.last_transition_time)
        status.update(
            {
                "active": 0,
                "ready": 0,
                "succeeded" if ok else "failed": job.pods_count,
                "conditions": [
                    {
                        "type": "Complete" if ok else "Failed",
                        "status": "True",
                        "reason": "CompletionsReached" if ok else "BackoffLimitExceeded",
                        "message": finished.message,
                        "lastTransitionTime": when,
                    }
                ],
            }
        )
        if ok:
            status["completionTime"] = when
        return status
    running = admitted is not None and admitted.is_true and not wl.status.is_true(EVICTED)
    status["active"] = job.pods_count if running else 0
    status["ready"] = job.pods_count if running and wl.status.is_true(PODS_READY) else 0
    if not running:
        status.pop("startTime", None)
        status["conditions"] = [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "JobSuspended",
                "message": "Job suspended",
                "lastTransitionTime": _since(prev, "Suspended", wl),
            }
        ]
    return status


def manager_job_status(wl: Workload, job: Job, mirrored: Status | None, previous: Status | None) -> Status:
    """A MultiKueue Job's status in the manager: the winning worker's Job as last reported
    (``mirrored``), else derived from the Workload. A mirror that is not terminal while the
    Workload is finished is stale (the worker Job's last change was not reported: the agent
    finished its copy first, or the report died with a hub): the Workload's outcome decides."""
    if mirrored is not None and not (wl.is_finished and not _terminal(mirrored)):
        status = mirrored
    else:
        status = job_status(wl, job, previous)
    before = (previous or {}).get("startTime")
    if before and not job.suspend and status.get("startTime") != before:
        # kube-apiserver lets a set startTime change only while the Job is suspended: the one the
        # hub derived at admission stays when the winner's report brings the worker's own.
        status = {**status, "startTime": before}
    return status


def _terminal(status: Status) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _since(prev: Status, type_: str, wl: Workload) -> str:
    for cond in prev.get("conditions") or []:
        if cond.get("type") == type_ and cond.get("lastTransitionTime"):
            return str(cond["lastTransitionTime"])
    created = wl.meta.creation_timestamp
    return format_time(created if created is not None else 0.0)
