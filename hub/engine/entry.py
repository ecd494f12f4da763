"""What one scheduling cycle works on: an entry per popped head, and the cycle's tally.

Below the cycle (:mod:`.scheduler`) and the fair-sharing tournament (:mod:`.fairsharing`),
which both order and process entries; above the flavor and preemption decisions an entry
carries.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .clusterqueue import ClusterQueueState
from .flavors import Assignment
from .preemption import Target
from .queues import RequeueReason
from .workload_info import WorkloadInfo

# QuotaReserved=False reasons the scheduler writes.
PENDING_EVALUATION = "PendingEvaluation"
SUSPENDED = "Suspended"
MISCONFIGURED = "Misconfigured"
WAITING_FOR_QUOTA = "WaitingForQuota"
WAITING_FOR_PREEMPTED = "WaitingForPreemptedWorkloads"
WAITING_FOR_PODS_READY = "WaitingForPodsReady"
ADMISSION_GATED = "AdmissionGated"  # preemption needed but a preemption gate is closed

# Entry statuses.
NOT_NOMINATED, NOMINATED, SKIPPED, ASSUMED, EVICTED = "", "nominated", "skipped", "assumed", "evicted"


@dataclass(slots=True)
class Entry:
    info: WorkloadInfo
    cq: ClusterQueueState
    assignment: Assignment | None = None
    targets: list[Target] = field(default_factory=list)
    status: str = NOT_NOMINATED
    message: str = ""
    requeue_reason: str = RequeueReason.GENERIC
    reason: str = ""  # QuotaReserved=False reason when not admitted
    is_preemptor: bool = False
    preempted: int = 0


@dataclass(slots=True)
class CycleResult:
    heads: int = 0
    admitted: int = 0
    preempting: int = 0
    parked: int = 0
    changed: bool = False
