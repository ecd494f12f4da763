"""The queues of pending workloads, as Kueue's pkg/queue Manager keeps them.

Which ClusterQueue a workload waits in (or that it is an orphan whose LocalQueue or
ClusterQueue is missing), each queue's heap and parked (inadmissible) set, the queues
with heads to pop, and the batched requeue of parked workloads after quota is released.
State only: it shares the owner's dicts of ClusterQueues, LocalQueues and namespaces
and reports pending reasons through a callback; it never imports the scheduler or the
:class:`~hub.engine.engine.Engine` facade.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from hub.api.config import Configuration
from hub.api.queues import BEST_EFFORT_FIFO, STOP_NONE, STRICT_FIFO, LocalQueue
from hub.api.workload import CHECK_READY, FINISHED, QUOTA_RESERVED, REQUEUED, Workload

from .clusterqueue import ClusterQueueState
from .queues import ClusterQueueQueue, RequeueReason, SortKey, immediate_requeue
from .workload_info import WorkloadInfo, queue_order_timestamp

# Kueue batches requeues of inadmissible workloads for one second.
REQUEUE_BATCH_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Blocker:
    reason: str
    message: str


class Holder(Protocol):
    def holds(self, info: WorkloadInfo) -> bool: ...


class QueueManager:
    """Pending workloads by ClusterQueue; the owner (the engine) keeps quota and status."""

    def __init__(
        self,
        config: Configuration,
        cqs: dict[str, ClusterQueueState],
        local_queues: dict[str, LocalQueue],
        namespaces: dict[str, dict[str, str]],
        infos: dict[str, WorkloadInfo],
        clock: Callable[[], float],
        set_pending_reason: Callable[[WorkloadInfo, str, str], None],
    ) -> None:
        self.config = config
        self.cqs = cqs
        self.local_queues = local_queues
        self.namespaces = namespaces
        self.infos = infos
        self.clock = clock
        self.set_pending_reason = set_pending_reason
        self.queues: dict[str, ClusterQueueQueue] = {}
        self.ready_queues: set[str] = set()
        self.orphans: dict[str, WorkloadInfo] = {}
        # ClusterQueues whose parked workloads wait for the next batched requeue pass.
        self.requeue_cqs: set[str] = set()
        self.last_requeue = float("-inf")
        self.holder: Holder | None = None  # keeps concurrent admission's parents out of the heaps

    def reorder(self, info: WorkloadInfo) -> None:
        """A workload's priority changed: move it in its heap and requeue its ClusterQueue."""
        if info.cluster_queue and not info.wl.is_quota_reserved:
            queue = self.queues.get(info.cluster_queue)
            if queue is not None:
                queue.update(info, self.sort_key(info))
        if info.cluster_queue:
            self.requeue_cqs.add(info.cluster_queue)

    def dequeue(self, info: WorkloadInfo) -> None:
        self.orphans.pop(info.key, None)
        if info.cluster_queue is not None:
            queue = self.queues.get(info.cluster_queue)
            if queue is not None:
                queue.remove(info.key)

    def resolve_queue(self, info: WorkloadInfo) -> None:
        wl = info.wl
        lq_key = f"{wl.meta.namespace}/{wl.queue_name}"
        lq = self.local_queues.get(lq_key)
        info.local_queue = lq_key if lq is not None else None
        info.cluster_queue = lq.cluster_queue if lq is not None and lq.cluster_queue in self.cqs else None

    def blocker(self, info: WorkloadInfo) -> Blocker | None:
        """Why a pending workload cannot even be queued (Kueue's queue blockers)."""
        wl = info.wl
        if not wl.active:
            # The deactivation's own words where they survive (e.g. each worker's shortfall).
            requeued = wl.status.condition(REQUEUED)
            why = requeued.message if requeued is not None and requeued.reason.startswith("Deactivated") else ""
            return Blocker("Deactivated", why or "The workload is deactivated")
        if wl.inadmissible:  # Kueue's workload controller keeps it out of the queue (its DRA checks)
            return Blocker("Misconfigured", wl.inadmissible)
        lq = self.local_queues.get(f"{wl.meta.namespace}/{wl.queue_name}")
        if lq is None:
            return Blocker("Misconfigured", f"LocalQueue {wl.queue_name} doesn't exist")
        if lq.stop_policy != STOP_NONE:
            return Blocker("Suspended", f"LocalQueue {wl.queue_name} is inactive: LocalQueue is stopped ({lq.stop_policy})")
        state = self.cqs.get(lq.cluster_queue)
        if state is None:
            return Blocker("Misconfigured", f"ClusterQueue {lq.cluster_queue} doesn't exist")
        if not state.active:
            why = f": {state.inactive_message}" if state.inactive_message else ""
            return Blocker("Suspended", f"ClusterQueue {state.name} is inactive{why}")
        if not self.namespace_matches(state, wl.meta.namespace):
            return Blocker("Misconfigured", "Workload namespace doesn't match ClusterQueue selector")
        return None

    def namespace_matches(self, state: ClusterQueueState, namespace: str) -> bool:
        selector = state.spec.namespace_selector
        if selector is None:
            return False
        labels = self.namespaces.get(namespace)
        if labels is None:
            labels = {"kubernetes.io/metadata.name": namespace}
        return selector.matches(labels)

    def set_blocker_condition(self, info: WorkloadInfo) -> None:
        if info.wl.is_quota_reserved or info.wl.is_finished:
            return
        blocker = self.blocker(info)
        if blocker is not None:
            self.set_pending_reason(info, blocker.reason, blocker.message)

    def enqueue(self, info: WorkloadInfo) -> None:
        """Queue a pending workload in its ClusterQueue, or park it as an orphan."""
        wl = info.wl
        if wl.is_finished or not wl.active or wl.is_quota_reserved:
            if not wl.active:
                self.set_blocker_condition(info)
            return
        self.resolve_queue(info)
        lq = self.local_queues.get(info.local_queue or "")
        if info.cluster_queue is None or lq is None or lq.stop_policy != STOP_NONE or wl.inadmissible:
            self.orphans[info.key] = info
            self.set_blocker_condition(info)
            return
        self.orphans.pop(info.key, None)
        if self.holder is not None and self.holder.holds(info):
            return
        queue = self.queues[info.cluster_queue]
        parked_behind = queue.bulk_parked.get(info.shape)
        if self.backoff_expired(info) and parked_behind is None:
            queue.push(info, self.sort_key(info))
            self.ready_queues.add(info.cluster_queue)
        else:
            queue.park(info)
            if parked_behind is not None:
                self._same_as(info, *parked_behind)
        state = self.cqs[info.cluster_queue]
        if not state.active or not self.namespace_matches(state, wl.meta.namespace):
            self.set_blocker_condition(info)

    def sort_key(self, info: WorkloadInfo, rules: tuple[bool, bool] | None = None) -> SortKey:
        """``rules``: :meth:`_timestamp_rules`, when the caller has them at hand for many workloads."""
        timestamp = queue_order_timestamp(info.wl, *(rules or self._timestamp_rules()))
        return (-info.priority, timestamp, info.seq)

    def queue_timestamp(self, info: WorkloadInfo) -> float:
        return queue_order_timestamp(info.wl, *self._timestamp_rules())

    def _timestamp_rules(self) -> tuple[bool, bool]:
        """The configuration's say in queue_order_timestamp: eviction time, priority sorting in cohort."""
        return self.config.wait_for_pods_ready.requeue_by_eviction_time, self.config.gate("PrioritySortingWithinCohort")

    def backoff_expired(self, info: WorkloadInfo) -> bool:
        status = info.wl.status
        cond = status.condition(REQUEUED)
        if cond is not None and not cond.is_true:
            return False
        if status.requeue_state is None or status.requeue_state.requeue_at is None:
            return True
        return self.clock() >= status.requeue_state.requeue_at

    def pop_heads(self) -> list[tuple[WorkloadInfo, ClusterQueueState, bool]]:
        heads = []
        for name in sorted(self.ready_queues):
            queue = self.queues.get(name)
            state = self.cqs.get(name)
            if queue is None or state is None or queue.active_count == 0:
                self.ready_queues.discard(name)
                continue
            if not state.active:
                continue
            sticky = queue.sticky
            info = queue.pop()
            if queue.active_count == 0:
                self.ready_queues.discard(name)
            if info is not None:
                heads.append((info, state, sticky == info.key))
        return heads

    def _same_as(self, info: WorkloadInfo, head: str, reason: str, message: str) -> None:
        """A workload parked behind an equivalent one that was evaluated: that one's reason, and its name.

        One that already states this reason keeps its message, as Kueue keeps the scheduler's
        diagnostics of workloads it did not evaluate: naming each new head instead rewrote the
        status of every parked workload after every requeue (a store write each)."""
        current = info.wl.status.condition(QUOTA_RESERVED)
        if current is not None and current.reason == reason and current.message:
            return
        if head != info.key and message:
            self.set_pending_reason(info, reason, f"Same as equivalent workload {head}, which was evaluated: {message}")

    def requeue(self, info: WorkloadInfo, reason: str, quota_reason: str = "", message: str = "") -> bool:
        """Return a head that was not admitted to its queue. True if it was parked."""
        if info.key not in self.infos or info.wl.is_quota_reserved or info.cluster_queue is None:
            return False
        queue = self.queues.get(info.cluster_queue)
        if queue is None:
            self.orphans[info.key] = info
            return False
        if reason == RequeueReason.PENDING_PREEMPTION and not queue.strict_fifo:
            queue.sticky = info.key
        strategy = STRICT_FIFO if queue.strict_fifo else BEST_EFFORT_FIFO
        if self.backoff_expired(info) and (immediate_requeue(strategy, reason) or info.pending_flavors()):
            queue.push(info, self.sort_key(info))
            self.ready_queues.add(info.cluster_queue)
            return False
        if queue.contains(info.key):
            return False
        queue.park(info)
        if reason in (RequeueReason.NO_FIT, RequeueReason.PREEMPTION_NO_CANDIDATES):
            why = (info.key, quota_reason or "WaitingForQuota", message)
            for other in queue.park_equivalent(info.shape, why):
                # Not evaluated: they wait for the same reason as the one that was.
                if message:
                    self._same_as(other, *why)
                elif other.wl.status.condition(QUOTA_RESERVED) is None:
                    self.set_pending_reason(
                        other, why[1], "Bypassed scheduling evaluation because an equivalent workload recently failed"
                    )
        return True

    def process_requeues(self, force: bool = False) -> bool:
        """Move parked workloads back to their heaps after quota-releasing events.

        Like Kueue's delaying queue, requests are batched: at most one pass per
        ``REQUEUE_BATCH_SECONDS`` of engine time, so a stream of releases doesn't
        re-heap every parked workload each cycle. ``force`` (the scheduler has no
        other work) runs the pending pass at once. Returns whether a pass ran.
        """
        if not self.requeue_cqs:
            return False
        if not force and self.clock() < self.last_requeue + REQUEUE_BATCH_SECONDS:
            return False
        self.last_requeue = self.clock()
        names = self.requeue_cqs
        self.requeue_cqs = set()
        # Trees with a cohort cycle are skipped (their queues are inactive), as Kueue's
        # notifyRetryInadmissible does; fixing the cycle requeues the whole tree.
        roots = {self.cqs[n].node.root() for n in names if n in self.cqs and not self.cqs[n].node.in_cycle}
        targets = {cq.name for root in roots for cq in root.subtree_cqs()}
        rules = self._timestamp_rules()
        for name in sorted(targets):
            queue = self.queues.get(name)
            state = self.cqs.get(name)
            if queue is None or state is None:
                continue
            queue.bulk_parked.clear()
            if not queue.inadmissible:
                continue

            # Thousands of parked workloads share a few namespaces: match each namespace once per pass.
            matches: dict[str, bool] = {}

            def admit(
                info: WorkloadInfo,
                state: ClusterQueueState = state,
                matches: dict[str, bool] = matches,
                rules: tuple[bool, bool] = rules,
            ) -> SortKey | None:
                namespace = info.wl.meta.namespace
                match = matches.get(namespace)
                if match is None:
                    match = matches[namespace] = self.namespace_matches(state, namespace)
                if not match or not self.backoff_expired(info):
                    return None
                return self.sort_key(info, rules)

            if queue.requeue_inadmissible(admit):
                self.ready_queues.add(name)
        return True

    def requeue_everything(self) -> None:
        self.requeue_cqs.update(self.cqs)

    def pending_counts(self, cq: str) -> tuple[int, int]:
        """(active, inadmissible) pending workloads of a ClusterQueue."""
        queue = self.queues.get(cq)
        if queue is None:
            return 0, 0
        return queue.active_count, len(queue.inadmissible)


def explain_workload(wl: Workload, blocker: Blocker | None) -> str:
    """A human-readable account of where a workload stands and why (``blocker``: its queue blocker)."""
    if wl.is_finished:
        cond = wl.status.condition(FINISHED)
        return f"finished ({cond.reason if cond else ''}): {cond.message if cond else ''}"
    if wl.is_admitted:
        adm = wl.status.admission
        return f"admitted in ClusterQueue {adm.cluster_queue if adm else '?'}"
    if wl.is_quota_reserved:
        waiting = [c.name for c in wl.status.admission_checks if c.state != CHECK_READY]
        return f"quota reserved; waiting for admission checks: {', '.join(waiting) or 'none'}"
    if blocker is not None:
        return f"inadmissible ({blocker.reason}): {blocker.message}"
    cond = wl.status.condition(QUOTA_RESERVED)
    if cond is not None and cond.message:
        return f"pending ({cond.reason}): {cond.message}"
    return "pending: waiting for the next scheduling cycle"
