"""Workload condition transitions, as Kueue's pkg/workload helpers make them."""

from __future__ import annotations

from hub.api.meta import CONDITION_FALSE, CONDITION_TRUE, Condition
from hub.api.workload import (
    ADMITTED,
    BLOCKED_ON_PREEMPTION_GATES,
    CHECK_PENDING,
    CHECK_READY,
    CHECK_RETRY,
    EVICTED,
    PODS_READY,
    PREEMPTED,
    QUOTA_RESERVED,
    Admission,
    EvictionStat,
    Workload,
)

MAX_MESSAGE = 32 * 1024


def set_condition(wl: Workload, type_: str, status: str, reason: str, message: str, now: float) -> bool:
    """``meta.SetStatusCondition``: the transition time moves only when the status changes."""
    message = message[:MAX_MESSAGE]
    for cond in wl.status.conditions:
        if cond.type != type_:
            continue
        changed = False
        if cond.status != status:
            cond.status = status
            cond.last_transition_time = now
            changed = True
        if cond.reason != reason or cond.message != message:
            cond.reason = reason
            cond.message = message
            changed = True
        return changed
    wl.status.conditions.append(Condition(type_, status, reason, message, now))
    return True


def reset_active_condition(wl: Workload, type_: str, reason: str, now: float) -> bool:
    """Flip a True condition to False (used when quota is reserved again)."""
    cond = wl.status.condition(type_)
    if cond is None or not cond.is_true:
        return False
    prev = cond.message
    return set_condition(wl, type_, CONDITION_FALSE, reason, f"Previously: {prev}", now)


def all_checks_ready(wl: Workload) -> bool:
    return all(c.state == CHECK_READY for c in wl.status.admission_checks)


def sync_admitted(wl: Workload, now: float) -> bool:
    """Keep ``Admitted`` equal to "quota reserved and every admission check Ready"."""
    reserved = wl.is_quota_reserved
    ready = all_checks_ready(wl)
    was_admitted = wl.is_admitted
    if wl.status.condition(QUOTA_RESERVED) is None and wl.status.condition(ADMITTED) is None:
        return False
    if not reserved:
        status, reason, message = CONDITION_FALSE, "NoReservation", "The workload has no reservation"
    elif not ready:
        status, reason, message = (
            CONDITION_FALSE,
            "UnsatisfiedAdmissionChecks",
            "The workload has not all checks ready",
        )
    else:
        status, reason, message = CONDITION_TRUE, "Admitted", "The workload is admitted"
    if was_admitted and status == CONDITION_FALSE:
        cond = wl.status.condition(ADMITTED)
        if cond is not None:
            elapsed = int(now - cond.last_transition_time)
            past = wl.status.accumulated_past_execution_time_seconds or 0
            wl.status.accumulated_past_execution_time_seconds = past + elapsed
    return set_condition(wl, ADMITTED, status, reason, message, now)


def set_quota_reservation(wl: Workload, admission: Admission, now: float) -> None:
    wl.status.admission = admission
    set_condition(
        wl, QUOTA_RESERVED, CONDITION_TRUE, "QuotaReserved", f"Quota reserved in ClusterQueue {admission.cluster_queue}", now
    )
    for type_ in (EVICTED, PREEMPTED, BLOCKED_ON_PREEMPTION_GATES):
        reset_active_condition(wl, type_, "QuotaReserved", now)


def unset_quota_reservation(wl: Workload, reason: str, message: str, now: float) -> bool:
    changed = set_condition(wl, QUOTA_RESERVED, CONDITION_FALSE, reason, message, now)
    if wl.status.admission is not None:
        wl.status.admission = None
        changed = True
    if sync_admitted(wl, now):
        changed = True
    return changed


def record_eviction(wl: Workload, reason: str, message: str, underlying_cause: str, now: float) -> None:
    """Evicted=True with its count in ``status.evictions``; the dispatch fields cleared."""
    set_condition(wl, EVICTED, CONDITION_TRUE, reason, message, now)
    wl.status.cluster_name = None
    wl.status.nominated_cluster_names = []
    wl.status.unhealthy_nodes = []  # Kueue's evict resets them: a new placement starts afresh
    for stat in wl.status.evictions:
        if stat.reason == reason and stat.underlying_cause == underlying_cause:
            stat.count += 1
            break
    else:
        wl.status.evictions.append(EvictionStat(reason, underlying_cause, 1))
    # Eviction resets every non-Pending check to Pending (Retry ones count a retry).
    for check in wl.status.admission_checks:
        if check.state == CHECK_RETRY:
            check.retry_count = (check.retry_count or 0) + 1
        if check.state != CHECK_PENDING:
            check.state = CHECK_PENDING
            check.last_transition_time = now
            check.message = "Reset to Pending after eviction. Previously: " + check.message


def set_pods_ready(wl: Workload, ready: bool, now: float) -> bool:
    """PodsReady after the pods became ready (Started, or Recovered) or one failed (WaitForRecovery).

    True if the status changed."""
    if ready:
        was = wl.status.condition(PODS_READY)
        reason = "Recovered" if was is not None and was.reason == "WaitForRecovery" else "Started"
        return set_condition(wl, PODS_READY, CONDITION_TRUE, reason, "All pods reached readiness and the workload is running", now)
    if not wl.status.is_true(PODS_READY):
        return False
    set_condition(wl, PODS_READY, CONDITION_FALSE, "WaitForRecovery", "At least one pod has failed, waiting for recovery", now)
    return True
