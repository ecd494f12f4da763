"""Time-driven transitions: when a reserved workload's deadline or a backoff falls due.

Pure functions of a workload's status and the waitForPodsReady settings, and a heap of
due times so that a tick costs O(due * log n), not a pass over every workload.
"""

from __future__ import annotations

import heapq

from hub.api.config import WaitForPodsReady
from hub.api.workload import ADMITTED, EVICTED, PODS_READY, REQUEUED, Workload

from .events import EVICTED_BY_ADMISSION_CHECK, EVICTED_BY_PODS_READY_TIMEOUT


class Timers:
    """Due times by workload key: a heap of (due, key), ``armed`` holding each key's current due
    time so that superseded heap entries are skipped."""

    def __init__(self) -> None:
        self.heap: list[tuple[float, str]] = []
        self.armed: dict[str, float] = {}

    def arm(self, key: str, at: float | None) -> None:
        if at is None or self.armed.get(key) == at:
            return
        self.armed[key] = at
        heapq.heappush(self.heap, (at, key))

    def pop_due(self, now: float) -> tuple[float, str] | None:
        """The next (due, key) at or before ``now`` that is still armed, disarmed; None if none."""
        heap = self.heap
        while heap and heap[0][0] <= now:
            at, key = heapq.heappop(heap)
            if self.armed.get(key) != at:
                continue  # superseded by a later arming
            del self.armed[key]
            return at, key
        return None

    def next_at(self) -> float | None:
        heap = self.heap
        while heap and self.armed.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None


def pods_ready_deadline(wl: Workload, wfpr: WaitForPodsReady) -> tuple[float, str] | None:
    if not wfpr.enabled or not wl.is_admitted:
        return None
    ready = wl.status.condition(PODS_READY)
    if ready is not None and ready.is_true:
        return None
    if ready is not None and ready.reason == "WaitForRecovery":
        if not wfpr.recovery_timeout:
            return None
        return ready.last_transition_time + wfpr.recovery_timeout, "WaitForRecovery"
    admitted = wl.status.condition(ADMITTED)
    assert admitted is not None
    return admitted.last_transition_time + wfpr.timeout, "WaitForStart"


def execution_deadline(wl: Workload) -> tuple[float, str] | None:
    """When an admitted workload exhausts ``maximumExecutionTimeSeconds`` (time admitted before counts)."""
    limit = wl.maximum_execution_time_seconds
    if limit is None or not wl.is_admitted:
        return None
    admitted = wl.status.condition(ADMITTED)
    assert admitted is not None
    used = wl.status.accumulated_past_execution_time_seconds or 0
    return admitted.last_transition_time + limit - used, "MaximumExecutionTimeExceeded"


def due_at(wl: Workload, wfpr: WaitForPodsReady, now: float) -> float | None:
    """When this workload's next time-driven transition is due (None: nothing pending)."""
    if wl.is_quota_reserved:
        if wl.maximum_execution_time_seconds is None and not wfpr.enabled:
            return None
        if wl.status.is_true(EVICTED):
            return None
        deadlines = [d for d in (pods_ready_deadline(wl, wfpr), execution_deadline(wl)) if d is not None]
        return min(d[0] for d in deadlines) if deadlines else None
    requeued = wl.status.condition(REQUEUED)
    if requeued is None or requeued.is_true or requeued.reason not in (
        EVICTED_BY_PODS_READY_TIMEOUT,
        EVICTED_BY_ADMISSION_CHECK,
    ):
        return None
    rs = wl.status.requeue_state
    return rs.requeue_at if rs is not None and rs.requeue_at is not None else now


def fmt_duration(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    out = ""
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + f"{secs}s"
