"""What the engine reports: events for its callers, and the eviction reasons it writes."""

from __future__ import annotations

from dataclasses import dataclass

# Eviction reasons (Evicted condition).
EVICTED_BY_PREEMPTION = "Preempted"
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
EVICTED_BY_ADMISSION_CHECK = "AdmissionCheck"
EVICTED_BY_CQ_STOPPED = "ClusterQueueStopped"
EVICTED_BY_LQ_STOPPED = "LocalQueueStopped"
EVICTED_BY_DEACTIVATION = "Deactivated"
EVICTED_BY_NODE_FAILURES = "NodeFailures"


@dataclass(frozen=True, slots=True)
class EngineEvent:
    """Something the callers may need to act on (start/stop a job) or report."""

    type: str  # QuotaReserved, Admitted, Evicted, Preempted, Requeued, Finished, Deactivated, Deleted
    key: str
    reason: str = ""
    message: str = ""
    time: float = 0.0
