"""The queueing engine: Kueue's objects in, admission decisions and status out.

Pure and synchronous: every call takes the current time from its caller, the
engine does no I/O, and the same calls in the same order give the same
result. Callers (the hub's controllers, the agent, ``mkhub simulate``, the
benchmarks) apply objects, report what happened to workloads (pods ready,
finished, job stopped, check states), call :meth:`Engine.tick` and
:meth:`Engine.schedule`, then :meth:`Engine.drain` the workloads whose status
changed and the events to act on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from hub.api.config import Configuration
from hub.api.meta import CONDITION_FALSE, CONDITION_TRUE
from hub.api.others import (
    AdmissionCheck,
    MultiKueueCluster,
    MultiKueueConfig,
    Namespace,
    WorkloadPriorityClass,
)
from hub.api.queues import STOP_HOLD_AND_DRAIN, STOP_NONE, ClusterQueue, Cohort, LocalQueue, ResourceFlavor
from hub.api.registry import ApiObject
from hub.api.tas_kinds import Node, Topology
from hub.api.workload import (
    CHECK_REJECTED,
    CHECK_RETRY,
    DEACTIVATION_TARGET,
    EVICTED,
    FINISHED,
    PODS_READY,
    PREEMPTED,
    QUOTA_RESERVED,
    REQUEUED,
    Admission,
    Workload,
)

from .cache import CACHE_KINDS, Cache
from .checks import has_all_checks, required_checks, set_retry_requeue_at, sync_checks, write_check_states
from .clusterqueue import ClusterQueueState
from .concurrent_admission import ConcurrentAdmission
from .conditions import (
    record_eviction,
    set_condition,
    set_pods_ready,
    set_quota_reservation,
    sync_admitted,
    unset_quota_reservation,
)
from .entry import WAITING_FOR_PODS_READY, CycleResult, Entry
from .events import (
    EVICTED_BY_ADMISSION_CHECK,
    EVICTED_BY_CQ_STOPPED,
    EVICTED_BY_DEACTIVATION,
    EVICTED_BY_LQ_STOPPED,
    EVICTED_BY_NODE_FAILURES,
    EVICTED_BY_PREEMPTION,
    EngineEvent,
)
from .fairsharing import FairPreemption, tournament_order
from .flavors import Assignment
from .preemption import PreemptionContext, Preemptor, Target, preemption_message
from .queue_manager import QueueManager
from .quota import FR
from .reading import EngineReading
from .scheduler import Scheduler
from .tas import TASInventory
from .tas_node_failure import NodeFailures
from .timed import TimedTransitions
from .timers import Timers
from .workload_counts import WorkloadCounts
from .workload_info import WorkloadInfo, local_queue_key, usage_from_admission


class Engine(TimedTransitions, EngineReading):
    """All queueing state of one cluster (a hub, or an agent's own cluster)."""

    def __init__(self, config: Configuration | None = None, now: float = 0.0) -> None:
        self.config = config or Configuration()
        self.now = now
        self.cache = Cache()
        # The cache's containers, under the names callers and tests read.
        self.tree = self.cache.tree
        self.cqs = self.cache.cqs
        self.cohorts = self.cache.cohorts
        self.flavors = self.cache.flavors
        self.namespaces = self.cache.namespaces
        self.admission_checks = self.cache.admission_checks
        self.mk_configs = self.cache.mk_configs
        self.mk_clusters = self.cache.mk_clusters
        self.check_controllers = self.cache.check_controllers
        self.local_queues: dict[str, LocalQueue] = {}
        self.priority_classes: dict[str, WorkloadPriorityClass] = {}
        self.workloads: dict[str, Workload] = {}
        self.infos: dict[str, WorkloadInfo] = {}
        # LocalQueue key -> keys of the (unfinished) workloads naming it.
        self.lq_members: dict[str, set[str]] = {}
        self.not_ready: set[str] = set()
        # Admitted workloads whose pods are all ready, as their runners last said. Without
        # waitForPodsReady this is all there is: Kueue then writes no PodsReady condition.
        self.ready_pods: dict[str, float] = {}  # key -> since when
        self.blocked_entry: Entry | None = None
        self.fair_sharing_order: Callable[[list[Entry]], Iterator[Entry]] | None = None
        self._seq = 0
        self._dirty: set[str] = set()
        # Per-LocalQueue and hub-wide counts (queue statuses, Top), recounting only marked workloads.
        self.counts = WorkloadCounts(self.workloads, self.infos)
        # Time-driven transitions (podsReady timeouts, maximum execution time, backoff expiry).
        self.timers = Timers()
        self._to_arm: set[str] = set()
        self._events: list[EngineEvent] = []
        self.qm = QueueManager(
            self.config, self.cqs, self.local_queues, self.namespaces, self.infos, lambda: self.now, self.set_pending_reason
        )
        self.cache.attach(self.qm)
        # The manager's containers, under the names callers and tests read.
        self.queues = self.qm.queues
        self.ready_queues = self.qm.ready_queues
        self.orphans = self.qm.orphans
        self.preemption_ctx = PreemptionContext(self.cqs, self.queue_timestamp, now)
        self.preemptor = Preemptor(self.preemption_ctx)
        if self.config.fair_sharing.enabled:
            self.preemptor.fair_search = FairPreemption(
                self.config.fair_sharing.strategies, self.config.gate("FairSharingPreemptWithinNominal")
            )
            self.fair_sharing_order = lambda entries: tournament_order(self.config, self.queue_timestamp, entries)
        self.tas = TASInventory(self.flavors)  # Topologies, Nodes and their usage (topology-aware scheduling)
        self.tas.balanced_placement = self.config.gate("TASBalancedPlacement")
        self.node_failures = NodeFailures(self.tas, self.infos, self._touch, self.evict, self.config.gate)
        if not self.config.gate("TopologyAwareScheduling"):
            self.cache.topologies = None
        self.ca = self.qm.holder = ConcurrentAdmission(self)  # parents and their variants (hub.engine.concurrent_admission)
        self.scheduler = Scheduler(self)

    # ------------------------------------------------------------------ clock and outputs

    def _advance(self, now: float | None) -> float:
        if now is not None and now > self.now:
            self.now = now
        self.preemption_ctx.now = self.now
        return self.now

    def drain(self) -> tuple[list[Workload], list[EngineEvent]]:
        """Workloads whose status changed since the last drain, and the events since then."""
        changed = [self.workloads[k] for k in sorted(self._dirty) if k in self.workloads]
        events = self._events
        self._dirty = set()
        self._events = []
        return changed, events

    def _emit(self, type_: str, key: str, reason: str = "", message: str = "") -> None:
        self._events.append(EngineEvent(type_, key, reason, message, self.now))

    def _touch(self, key: str) -> None:
        self._dirty.add(key)
        self.ca.touched(key)
        self._to_arm.add(key)
        self.counts.mark(key)

    # ------------------------------------------------------------------ objects

    def apply(self, obj: ApiObject, now: float | None = None) -> None:
        """Create or replace an object (already validated by hub.api)."""
        self._advance(now)
        match obj:
            case Workload():
                self._apply_workload(obj)
            case ClusterQueue():
                self._apply_cluster_queue(obj)
            case LocalQueue():
                self._apply_local_queue(obj)
            case ResourceFlavor():
                self.cache.apply_flavor(obj)
            case Cohort():
                self.cache.apply_cohort(obj)
            case Namespace():
                self.cache.apply_namespace(obj)
            case WorkloadPriorityClass():
                self.priority_classes[obj.meta.name] = obj
                self._propagate_priority_class(obj)
            case AdmissionCheck():
                self.cache.apply_admission_check(obj)
            case MultiKueueConfig() | MultiKueueCluster():
                self.cache.apply_multikueue(obj)
            case Topology() | Node():
                old = self.tas.nodes.get(obj.meta.name) if isinstance(obj, Node) else None
                self.tas.apply(obj)
                if isinstance(obj, Node):
                    self.node_failures.node_changed(obj.meta.name, old, obj)
                if isinstance(obj, Topology):
                    self.cache.topology_changed(obj.meta.name, True)
                self.qm.requeue_everything()
            case _:
                raise TypeError(f"the engine does not handle {type(obj).__name__}")

    def delete(self, kind: str, namespace: str, name: str, now: float | None = None) -> None:
        self._advance(now)
        key = f"{namespace}/{name}" if namespace else name
        if kind == "Workload":
            self._delete_workload(key)
        elif kind in CACHE_KINDS:
            self.cache.delete(kind, name)
        elif kind == "LocalQueue":
            if self.local_queues.pop(key, None) is not None:
                self._requeue_members(key)
        elif kind == "WorkloadPriorityClass":
            self.priority_classes.pop(name, None)
        elif kind in ("Topology", "Node"):
            old = self.tas.nodes.get(name) if kind == "Node" else None
            self.tas.delete(kind, name)
            if kind == "Topology":
                self.cache.topology_changed(name, False)
            elif old is not None:
                self.node_failures.node_changed(name, old, None)

    # --- ClusterQueues, cohorts, LocalQueues ---------------------------------------------

    def _apply_cluster_queue(self, spec: ClusterQueue) -> None:
        state, old_stop = self.cache.apply_cluster_queue(spec)
        self._apply_stop_policy(state, old_stop)
        self.ca.queue_changed(spec.meta.name)
        # Workloads waiting for this queue to exist get queued.
        self._reresolve()

    def check_active(self, check: AdmissionCheck) -> bool:
        return self.cache.check_active(check)

    def register_check_controller(self, controller_name: str) -> None:
        """A controller for these checks runs here, so its AdmissionChecks are active."""
        self.cache.register_check_controller(controller_name)

    def _apply_local_queue(self, lq: LocalQueue) -> None:
        key = lq.meta.key
        old = self.local_queues.get(key)
        self.local_queues[key] = lq
        if old is not None and old.stop_policy != lq.stop_policy:
            self._apply_lq_stop_policy(lq, old.stop_policy)
            self._requeue_members(key)
        self._reresolve()

    def _requeue_members(self, lq_key: str) -> None:
        """Re-resolve and re-queue the pending workloads naming this LocalQueue."""
        for wl_key in list(self.lq_members.get(lq_key, ())):
            info = self.infos.get(wl_key)
            if info is not None and not info.wl.is_quota_reserved:
                self._dequeue(info)
                self.qm.enqueue(info)

    def _apply_stop_policy(self, state: ClusterQueueState, old: str) -> None:
        new = state.spec.stop_policy
        if new == old:
            return
        if new == STOP_NONE:
            for info in self._stopped_workloads(lambda i: i.cluster_queue == state.name, EVICTED_BY_CQ_STOPPED):
                self._set_requeued(info.wl, True, "ClusterQueueRestarted", "The ClusterQueue was restarted after being stopped")
                self.qm.requeue_cqs.add(state.name)
            return
        for info in list(state.reserving.values()):
            wl = info.wl
            if not wl.is_admitted:
                self._release(info, "Suspended", "ClusterQueue is stopped")
            elif new == STOP_HOLD_AND_DRAIN:
                self.evict(info.key, EVICTED_BY_CQ_STOPPED, "The ClusterQueue is stopped")

    def _apply_lq_stop_policy(self, lq: LocalQueue, old: str) -> None:
        key = lq.meta.key
        if lq.stop_policy == STOP_NONE:
            for info in self._stopped_workloads(lambda i: i.local_queue == key, EVICTED_BY_LQ_STOPPED):
                self._set_requeued(info.wl, True, "LocalQueueRestarted", "The LocalQueue was restarted after being stopped")
                if info.cluster_queue:
                    self.qm.requeue_cqs.add(info.cluster_queue)
            return
        for info in [i for i in self.infos.values() if i.local_queue == key and i.wl.is_quota_reserved]:
            if not info.wl.is_admitted:
                self._release(info, "Suspended", "LocalQueue is stopped")
            elif lq.stop_policy == STOP_HOLD_AND_DRAIN:
                self.evict(info.key, EVICTED_BY_LQ_STOPPED, "The LocalQueue is stopped")

    def _stopped_workloads(self, match: Callable[[WorkloadInfo], bool], reason: str) -> list[WorkloadInfo]:
        out = []
        for info in self.infos.values():
            if not match(info):  # cheap, and false for most: before the condition lookup
                continue
            cond = info.wl.status.condition(REQUEUED)
            if cond is not None and not cond.is_true and cond.reason == reason:
                out.append(info)
        return out

    def _propagate_priority_class(self, wpc: WorkloadPriorityClass) -> None:
        for info in list(self.infos.values()):
            ref = info.wl.priority_class_ref
            if ref is None or not ref.is_workload_priority_class or ref.name != wpc.meta.name:
                continue
            if info.wl.priority == wpc.value:
                continue
            info.wl.priority = wpc.value
            self._set_priority(info, wpc.value)
            self._touch(info.key)

    # ------------------------------------------------------------------ workloads

    def _resolve_priority(self, wl: Workload) -> None:
        ref = wl.priority_class_ref
        if wl.priority is None and ref is not None and ref.is_workload_priority_class:
            wpc = self.priority_classes.get(ref.name)
            if wpc is not None:
                wl.priority = wpc.value

    def _apply_workload(self, wl: Workload) -> None:
        key = wl.meta.key
        self.counts.mark(key)
        if wl.status.conditions:
            self._to_arm.add(key)  # restored or edited status may carry a deadline
        self._resolve_priority(wl)
        old_info = self.infos.get(key)
        old = self.workloads.get(key)
        self.workloads[key] = wl
        if old_info is not None:
            self._replace_workload(old_info, wl)
            return
        if old is not None and old.is_finished:
            return
        self._seq += 1
        info = WorkloadInfo(wl, self._seq)
        if wl.is_finished:
            return
        self.infos[key] = info
        self.lq_members.setdefault(local_queue_key(wl), set()).add(key)
        if wl.meta.creation_timestamp is None:
            wl.meta.creation_timestamp = self.now
        if wl.is_quota_reserved and wl.status.admission is not None:
            self._restore_reservation(info)
            return
        self._requeue_if_reactivated(wl)
        self.qm.enqueue(info)

    def _requeue_if_reactivated(self, wl: Workload) -> None:
        """Kueue's workload controller reads the state, not a transition: an active workload whose
        Requeued=False says it was deactivated was reactivated (while no hub watched, on a restore)."""
        cond = wl.status.condition(REQUEUED)
        if wl.active and cond is not None and not cond.is_true and cond.reason.startswith(EVICTED_BY_DEACTIVATION):
            self._set_requeued(wl, True, "Reactivated", "The workload was reactivated")

    def _restore_reservation(self, info: WorkloadInfo) -> None:
        """A workload that arrives already holding quota (restart, restored state)."""
        wl = info.wl
        assert wl.status.admission is not None
        if self.ca.restored(info):
            return  # a concurrent-admission parent: its variant holds the quota
        cq_name = wl.status.admission.cluster_queue
        self.qm.resolve_queue(info)
        info.cluster_queue = cq_name
        info.usage = usage_from_admission(wl)
        self.tas.account(info.key, wl.status.admission)
        if wl.status.unhealthy_nodes:
            self.node_failures.restored(info.key)
        cond = wl.status.condition(QUOTA_RESERVED)
        info.reserved_at = cond.last_transition_time if cond is not None else self.now
        state = self.cqs.get(cq_name)
        if state is None:
            # Accounted once the ClusterQueue appears (see _reresolve of reserved workloads).
            self.orphans[info.key] = info
            return
        state.add_reservation(info)
        self._track_pods_ready(info)

    def _forget_member(self, info: WorkloadInfo) -> None:
        members = self.lq_members.get(local_queue_key(info.wl))
        if members is not None:
            members.discard(info.key)

    def _replace_workload(self, info: WorkloadInfo, wl: Workload) -> None:
        """A new version of a known workload (spec edit or status written by a controller)."""
        old = info.wl
        if local_queue_key(old) != local_queue_key(wl):
            self._forget_member(info)
            self.lq_members.setdefault(local_queue_key(wl), set()).add(info.key)
        info.wl = wl
        info.invalidate_requests()
        if wl.is_finished and not old.is_finished:
            self._finish(info, wl.status.condition(FINISHED))
            return
        if info.priority != (wl.priority or 0):
            self._set_priority(info, wl.priority or 0)
        if old.active and not wl.active:
            self._deactivate(info)
            return
        if not old.active and wl.active:
            self._set_requeued(wl, True, "Reactivated", "The workload was reactivated")
        if wl.is_quota_reserved:
            return
        # Pending: re-resolve and re-queue with the new spec.
        self._dequeue(info)
        info.last_assignment = None
        self.qm.enqueue(info)

    def _set_priority(self, info: WorkloadInfo, priority: int) -> None:
        info.priority = priority
        self.qm.reorder(info)

    def _delete_workload(self, key: str) -> None:
        self.counts.mark(key)
        self.ca.forget(key)
        wl = self.workloads.pop(key, None)
        info = self.infos.pop(key, None)
        self.ready_pods.pop(key, None)
        if info is not None:
            self._forget_member(info)
            if info.usage and info.cluster_queue in self.cqs and info.key in self.cqs[info.cluster_queue].reserving:
                self._unaccount(info)
            self._dequeue(info)
        if wl is not None:
            self._emit("Deleted", key)

    def _deactivate(self, info: WorkloadInfo) -> None:
        wl = info.wl
        target = wl.status.condition(DEACTIVATION_TARGET)
        reason = EVICTED_BY_DEACTIVATION
        message = "The workload is deactivated"
        if target is not None and target.is_true:
            reason = f"{EVICTED_BY_DEACTIVATION}DueTo{target.reason}"
            message = f"The workload is deactivated due to {target.message or target.reason}"
            wl.status.conditions = [c for c in wl.status.conditions if c.type != DEACTIVATION_TARGET]
        wl.status.requeue_state = None
        if wl.is_quota_reserved:
            self.evict(info.key, reason, message)
        else:
            self._dequeue(info)
            set_condition(wl, REQUEUED, CONDITION_FALSE, reason, message, self.now)
            unset_quota_reservation(wl, "Deactivated", "The workload is deactivated", self.now)
            self._touch(info.key)
        self._emit("Deactivated", info.key, reason, message)

    # --- queue membership (hub.engine.queue_manager) -------------------------------------

    def namespace_matches(self, state: ClusterQueueState, namespace: str) -> bool:
        return self.qm.namespace_matches(state, namespace)

    def _dequeue(self, info: WorkloadInfo) -> None:
        self.qm.dequeue(info)
        if self.blocked_entry is not None and self.blocked_entry.info is info:
            self.blocked_entry = None

    def _reresolve(self) -> None:
        """Queue orphans whose LocalQueue or ClusterQueue may now exist."""
        for info in list(self.orphans.values()):
            if info.key not in self.infos:
                self.orphans.pop(info.key, None)
                continue
            if info.wl.is_quota_reserved:
                # A restored reservation waiting for its ClusterQueue.
                state = self.cqs.get(info.cluster_queue or "")
                if state is not None and info.key not in state.reserving:
                    self.orphans.pop(info.key, None)
                    state.add_reservation(info)
                continue
            self._dequeue(info)
            self.qm.enqueue(info)

    def queue_timestamp(self, info: WorkloadInfo) -> float:
        return self.qm.queue_timestamp(info)

    def pop_heads(self) -> list[tuple[WorkloadInfo, ClusterQueueState, bool]]:
        return self.qm.pop_heads()

    def requeue(self, info: WorkloadInfo, reason: str, quota_reason: str = "", message: str = "") -> bool:
        """Return a head that was not admitted to its queue. True if it was parked."""
        return self.qm.requeue(info, reason, quota_reason, message)

    def process_requeues(self, force: bool = False) -> bool:
        """Move parked workloads back to their heaps (batched; see :meth:`QueueManager.process_requeues`)."""
        return self.qm.process_requeues(force)

    # ------------------------------------------------------------------ scheduling

    def schedule(self, now: float | None = None) -> CycleResult:
        """Run one scheduling cycle."""
        self._advance(now)
        replaced = self.node_failures.replace_nodes() if self.node_failures.to_replace else False
        result = self.scheduler.run_cycle()
        result.changed = result.changed or replaced
        return result

    def reserve(
        self, info: WorkloadInfo, state: ClusterQueueState, admission: Admission, usage: dict[FR, int], assignment: Assignment
    ) -> None:
        """Record an admission decided by the scheduler (usage is already in the quota tree)."""
        wl = info.wl
        queue = self.queues.get(state.name)
        if queue is not None and queue.sticky == info.key:
            queue.sticky = None
        set_quota_reservation(wl, admission, self.now)
        self.tas.account(info.key, admission)
        wl.status.resource_requests = []
        sync_checks(info.wl, state, self.now)
        info.usage = dict(usage)
        info.reserved_at = self.now
        info.last_assignment = None
        state.reserving[info.key] = info
        self._track_pods_ready(info)
        admitted = has_all_checks(wl, state) and sync_admitted(wl, self.now)
        self._emit("QuotaReserved", info.key, "QuotaReserved", f"Quota reserved in ClusterQueue {state.name}")
        if admitted and wl.is_admitted:
            state.count_admitted(info)
            self._emit("Admitted", info.key, "Admitted", f"Admitted by ClusterQueue {state.name}")
        self._touch(info.key)

    def required_checks(self, state: ClusterQueueState, flavors: set[str] | None) -> list[str]:
        """A queue's admission checks that apply to these assigned flavors (None: before reservation)."""
        return required_checks(state, flavors)

    def issue_preemptions(self, preemptor: WorkloadInfo, targets: list[Target]) -> int:
        count = 0
        for target in targets:
            victim = target.info
            if victim.key not in self.infos or not victim.wl.is_quota_reserved:
                continue
            if victim.wl.status.is_true(EVICTED):
                count += 1
                continue
            preemptor_path = self._cq_path(preemptor.cluster_queue)
            victim_path = self._cq_path(victim.cluster_queue)
            message = preemption_message(preemptor, target.reason, preemptor_path, victim_path)
            set_condition(victim.wl, PREEMPTED, CONDITION_TRUE, target.reason, message, self.now)
            self.evict(victim.key, EVICTED_BY_PREEMPTION, message)
            self._emit("Preempted", victim.key, target.reason, message)
            count += 1
        return count

    def _cq_path(self, name: str | None) -> str:
        state = self.cqs.get(name or "")
        if state is None:
            return ""
        parts = [state.name] + [n.name for n in state.node.ancestors()]
        return "/" + "/".join(reversed(parts))

    def set_pending_reason(self, info: WorkloadInfo, reason: str, message: str) -> None:
        wl = info.wl
        if wl.is_quota_reserved:
            return
        changed = unset_quota_reservation(wl, reason, message, self.now)
        requests = [
            {"name": r.name, "resources": {res: v for res, v in r.total}} for r in info.requests
        ]
        if requests != wl.status.resource_requests:
            wl.status.resource_requests = requests
            changed = True
        if changed:
            self._touch(info.key)

    # --- waitForPodsReady -----------------------------------------------------------------

    def _track_pods_ready(self, info: WorkloadInfo) -> None:
        wfpr = self.config.wait_for_pods_ready
        if wfpr.enabled and wfpr.block_admission and not info.wl.status.is_true(PODS_READY):
            self.not_ready.add(info.key)

    def all_reserved_pods_ready(self) -> bool:
        return not self.not_ready

    def block_on_pods_ready(self, entry: Entry) -> None:
        entry.status = "blocked"
        self.blocked_entry = entry
        self.set_pending_reason(
            entry.info, WAITING_FOR_PODS_READY, "waiting for all admitted workloads to be in PodsReady condition"
        )

    def pods_ready(self, key: str, ready: bool = True, now: float | None = None) -> None:
        """The workload's pods became ready (or stopped being ready).

        The PodsReady condition is written only with waitForPodsReady configured, as Kueue's
        job reconciler does; without it the workload is touched (its job's status follows) but
        its status stays as it is, unless it carries a PodsReady=True to take back."""
        self._advance(now)
        info = self.infos.get(key)
        if info is None or not info.wl.is_admitted:
            return
        was = key in self.ready_pods
        if ready:
            if not was:  # since a PodsReady=True read back from the store, else now
                since = self.pods_ready_at(key)
                self.ready_pods[key] = self.now if since is None else since
            self.not_ready.discard(key)
        else:
            self.ready_pods.pop(key, None)
        if not self.config.wait_for_pods_ready.enabled and (ready or not info.wl.status.is_true(PODS_READY)):
            if was != ready:
                self._touch(key)
            return
        if set_pods_ready(info.wl, ready, self.now):
            self._touch(key)
            if not ready:
                self._track_pods_ready(info)

    def is_pods_ready(self, key: str) -> bool:
        return self.pods_ready_at(key) is not None

    def pods_ready_at(self, key: str) -> float | None:
        """Since when all the admitted workload's pods are ready: since its runner said so, or
        since its PodsReady condition's transition; None while they are not."""
        since = self.ready_pods.get(key)
        if since is not None:
            return since
        wl = self.workloads.get(key)
        cond = wl.status.condition(PODS_READY) if wl is not None and wl.is_admitted else None
        return cond.last_transition_time if cond is not None and cond.is_true else None

    # ------------------------------------------------------------------ lifecycle inputs

    def evict(self, key: str, reason: str, message: str, underlying_cause: str = "", now: float | None = None) -> None:
        """Set Evicted=True; quota is released when the job reports it stopped."""
        self._advance(now)
        info = self.infos.get(key)
        if info is None or not info.wl.is_quota_reserved:
            return
        wl = info.wl
        record_eviction(wl, reason, message, underlying_cause, self.now)
        self._emit("Evicted", key, reason, message)
        self._touch(key)

    def workload_stopped(self, key: str, now: float | None = None) -> None:
        """An evicted workload's job has no active pods: release its quota and requeue it."""
        self._advance(now)
        info = self.infos.get(key)
        if info is None:
            return
        wl = info.wl
        evicted = wl.status.condition(EVICTED)
        if evicted is None or not evicted.is_true or not wl.is_quota_reserved:
            return
        if not (evicted.reason.startswith(EVICTED_BY_DEACTIVATION) and wl.active):  # reactivated: Requeued stands
            requeued = evicted.reason in (EVICTED_BY_PREEMPTION, EVICTED_BY_NODE_FAILURES)
            set_condition(wl, REQUEUED, CONDITION_TRUE if requeued else CONDITION_FALSE, evicted.reason, evicted.message, self.now)
        self._release(info, "PendingEvaluation", evicted.message)

    def _release(self, info: WorkloadInfo, reason: str, message: str) -> None:
        """Drop a reservation and put the workload back in its queue."""
        wl = info.wl
        self._unaccount(info)
        wl.status.conditions = [c for c in wl.status.conditions if c.type != PODS_READY]
        unset_quota_reservation(wl, reason, message, self.now)
        wl.status.cluster_name = None
        self._touch(info.key)
        self._emit("Released", info.key, reason, message)
        if wl.active and not wl.is_finished:
            self.qm.enqueue(info)
            if info.cluster_queue:
                self.qm.requeue_cqs.add(info.cluster_queue)

    def _unaccount(self, info: WorkloadInfo) -> None:
        state = self.cqs.get(info.cluster_queue or "")
        if state is not None and state.reserving.pop(info.key, None) is not None:
            state.node.add_usage_map(info.usage, -1)
            state.generation += 1
            state.uncount_admitted(info.key)
            self.qm.requeue_cqs.add(state.name)
        info.usage = {}
        if self.tas.unaccount(info.key):
            self.qm.requeue_everything()  # freed nodes may be shared with other queues' flavors
        self.not_ready.discard(info.key)
        self.ready_pods.pop(info.key, None)

    def finish(self, key: str, succeeded: bool = True, message: str = "", now: float | None = None) -> None:
        """The workload's job finished: it gets Finished and releases its quota."""
        self._advance(now)
        info = self.infos.get(key)
        wl = self.workloads.get(key)
        if wl is None or wl.is_finished:
            return
        reason = "Succeeded" if succeeded else "Failed"
        set_condition(wl, FINISHED, CONDITION_TRUE, reason, message or f"Job finished: {reason.lower()}", self.now)
        if info is not None:
            self._finish(info, wl.status.condition(FINISHED))
        self._touch(key)

    def _finish(self, info: WorkloadInfo, cond: object) -> None:
        if info.wl.is_quota_reserved or info.usage:
            self._unaccount(info)
        self._dequeue(info)
        self._forget_member(info)
        self.infos.pop(info.key, None)
        reason = getattr(cond, "reason", "Succeeded")
        self._emit("Finished", info.key, reason)

    def set_check_state(
        self, key: str, check: str, state: str, message: str = "", requeue_after_seconds: int | None = None,
        now: float | None = None,
    ) -> None:
        """An admission check controller's verdict for one workload."""
        self.set_check_states(key, {check: (state, message, requeue_after_seconds)}, now)

    def set_check_states(
        self, key: str, states: dict[str, tuple[str, str, int | None]], now: float | None = None
    ) -> None:
        """Several checks' verdicts written together, then reacted to once (one status update)."""
        self._advance(now)
        info = self.infos.get(key)
        if info is None:
            return
        write_check_states(info.wl, states, self.now)
        self._touch(key)
        self._reconcile_checks(info)

    def _reconcile_checks(self, info: WorkloadInfo) -> None:
        """Kueue's workload controller reaction to check states."""
        wl = info.wl
        states = {c.name: c for c in wl.status.admission_checks}
        rejected = [c for c in states.values() if c.state == CHECK_REJECTED]
        if rejected:
            # Kueue's words, then the check's own message (the why: for MultiKueue, each worker's shortfall).
            names = ", ".join(sorted(c.name for c in rejected))
            why = next((c.message for c in rejected if c.message), "")
            message = f"Admission check(s): {names}, were rejected" + (f": {why}" if why else "")
            set_condition(wl, DEACTIVATION_TARGET, CONDITION_TRUE, "AdmissionCheck", message, self.now)
            wl.active = False
            self._deactivate(info)
            return
        retry = [c for c in states.values() if c.state == CHECK_RETRY]
        if retry and wl.is_quota_reserved:
            set_retry_requeue_at(wl, retry)
            names = ", ".join(sorted(c.name for c in retry))
            self.evict(info.key, EVICTED_BY_ADMISSION_CHECK, f"At least one admission check is false: {names}")
            return
        state = self.cqs.get(info.cluster_queue or "")
        if wl.is_quota_reserved and state is not None:
            was = wl.is_admitted
            if has_all_checks(wl, state) and sync_admitted(wl, self.now):
                self._touch(info.key)
                if wl.is_admitted and not was:
                    state.count_admitted(info)
                    self._track_pods_ready(info)
                    self._emit("Admitted", info.key, "Admitted", f"Admitted by ClusterQueue {state.name}")

    def set_dispatch_status(self, key: str, nominated: Iterable[str], cluster_name: str | None) -> bool:
        """MultiKueue's status fields: ``nominatedClusterNames`` and ``clusterName``. True if they changed."""
        wl = self.workloads.get(key)
        if wl is None:
            return False
        names = list(nominated)
        if wl.status.nominated_cluster_names == names and wl.status.cluster_name == cluster_name:
            return False
        wl.status.nominated_cluster_names = names
        wl.status.cluster_name = cluster_name
        self._touch(key)
        return True

    def _set_requeued(self, wl: Workload, status: bool, reason: str, message: str) -> None:
        set_condition(wl, REQUEUED, CONDITION_TRUE if status else CONDITION_FALSE, reason, message, self.now)
        self._touch(wl.meta.key)
