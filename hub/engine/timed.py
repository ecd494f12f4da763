"""Time-driven transitions of the engine: podsReady timeouts, maximum execution time, backoff expiry,
and the batched requeue after other pods freed TAS capacity (:mod:`.tas.nontas`).

Mixed into :class:`hub.engine.engine.Engine` (kept apart so the facade stays within the module
size limit); deadlines sit in a heap (:class:`~hub.engine.timers.Timers`) armed whenever a
workload's status changes.
"""

from __future__ import annotations

from hub.api.config import Configuration
from hub.api.meta import CONDITION_TRUE
from hub.api.workload import DEACTIVATION_TARGET, EVICTED, RequeueState, Workload

from .clusterqueue import ClusterQueueState
from .concurrent_admission import ConcurrentAdmission
from .conditions import set_condition
from .events import EVICTED_BY_PODS_READY_TIMEOUT
from .queue_manager import QueueManager
from .tas.inventory import TASInventory
from .tas.nontas import freed_due, requeue_freed
from .timers import Timers, due_at, execution_deadline, fmt_duration, pods_ready_deadline
from .workload_info import WorkloadInfo


class TimedTransitions:
    """Reads and calls only what is declared here; the engine provides it."""

    config: Configuration
    now: float
    infos: dict[str, WorkloadInfo]
    timers: Timers
    qm: QueueManager
    _to_arm: set[str]
    ca: ConcurrentAdmission
    tas: TASInventory
    cqs: dict[str, ClusterQueueState]

    def _advance(self, now: float | None) -> float:
        raise NotImplementedError

    def _deactivate(self, info: WorkloadInfo) -> None:
        raise NotImplementedError

    def _dequeue(self, info: WorkloadInfo) -> None:
        raise NotImplementedError

    def _set_requeued(self, wl: Workload, status: bool, reason: str, message: str) -> None:
        raise NotImplementedError

    def evict(self, key: str, reason: str, message: str, underlying_cause: str = "", now: float | None = None) -> None:
        raise NotImplementedError

    def _arm_timer(self, key: str) -> None:
        """Remember when this workload's next time-driven transition is due (if any)."""
        info = self.infos.get(key)
        if info is None:
            return
        self.timers.arm(key, due_at(info.wl, self.config.wait_for_pods_ready, self.now))

    def _arm_touched(self) -> None:
        keys, self._to_arm = self._to_arm, set()
        for key in keys:
            self._arm_timer(key)

    def tick(self, now: float | None = None) -> bool:
        """Time-driven transitions that are due: podsReady timeouts, backoff expiry.

        Deadlines sit in a heap armed whenever a workload's status changes, so a
        tick costs O(due * log n), not a pass over every workload.
        """
        self._advance(now)
        changed = self.ca.reconcile()
        requeue = requeue_freed(self.tas, self.cqs, self.now)  # capacity other pods freed (batched)
        if requeue:
            self.qm.requeue_cqs.update(requeue)
            changed = True
        self._arm_touched()
        while (due := self.timers.pop_due(self.now)) is not None:
            at, key = due
            info = self.infos.get(key)
            if info is None or due_at(info.wl, self.config.wait_for_pods_ready, self.now) != at:
                self._arm_timer(key)
                continue
            changed = self._fire_timer(info) or changed
        return changed

    def _fire_timer(self, info: WorkloadInfo) -> bool:
        wl = info.wl
        if info.key in self.ca.parent_of:
            return False  # a variant's pods are its parent's: the parent's deadlines apply
        if wl.is_quota_reserved:
            expired = execution_deadline(wl)
            if expired is not None and self.now >= expired[0] and not wl.status.is_true(EVICTED):
                set_condition(
                    wl, DEACTIVATION_TARGET, CONDITION_TRUE, "MaximumExecutionTimeExceeded",
                    "exceeding the maximum execution time", self.now,
                )
                wl.active = False
                self._deactivate(info)
                return True
            deadline = pods_ready_deadline(wl, self.config.wait_for_pods_ready)
            if deadline is None or self.now < deadline[0] or wl.status.is_true(EVICTED):
                return False
            self._pods_ready_timeout(info, deadline[1])
            return True
        rs = wl.status.requeue_state
        if rs is not None:
            rs.requeue_at = None
        self._set_requeued(wl, True, "BackoffFinished", "The workload backoff was finished")
        self._dequeue(info)
        self.qm.enqueue(info)
        if info.cluster_queue:
            self.qm.requeue_cqs.add(info.cluster_queue)
        return True

    def next_wakeup(self) -> float | None:
        """The earliest future time at which :meth:`tick` would change something."""
        self._arm_touched()
        if self.ca.uid_arrived() or self.ca.dirty:
            return self.now  # concurrent admission has families to reconcile
        due = [t for t in (self.timers.next_at(), self.ca.next_due(), freed_due(self.tas)) if t is not None]
        return min(due, default=None)

    def _pods_ready_timeout(self, info: WorkloadInfo, cause: str) -> None:
        wl = info.wl
        wfpr = self.config.wait_for_pods_ready
        rs = wl.status.requeue_state or RequeueState()
        count = rs.count or 0
        if wfpr.backoff_limit_count is not None and count + 1 > wfpr.backoff_limit_count:
            set_condition(
                wl, DEACTIVATION_TARGET, CONDITION_TRUE, "RequeuingLimitExceeded",
                "exceeding the maximum number of re-queuing retries", self.now,
            )
            wl.active = False
            self._deactivate(info)
            return
        count += 1
        backoff = min(wfpr.backoff_base_seconds * (2 ** (count - 1)), wfpr.backoff_max_seconds)
        rs.count = count
        rs.requeue_at = self.now + backoff
        wl.status.requeue_state = rs
        timeout = wfpr.timeout if cause == "WaitForStart" else (wfpr.recovery_timeout or wfpr.timeout)
        self.evict(
            info.key,
            EVICTED_BY_PODS_READY_TIMEOUT,
            f"Exceeded the PodsReady timeout {fmt_duration(timeout)}",
            underlying_cause=cause,
        )
