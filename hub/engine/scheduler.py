"""One scheduling cycle, as Kueue's pkg/scheduler defines it.

Pop one head per active ClusterQueue, nominate each against the same
pre-cycle quota state (flavor assignment, preemption targets), order the
entries, then process them one by one while the quota state absorbs each
admission. Temporary reservations (preempting entries, unreclaimable heads)
are undone when the cycle ends; admissions stay.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Protocol

from hub.api.config import Configuration
from hub.api.others import MULTIKUEUE_CONTROLLER, AdmissionCheck
from hub.api.pods import requests_exceed_limits
from hub.api.queues import NEVER, ResourceFlavor
from hub.api.workload import CHECK_REJECTED, CHECK_RETRY, Admission, PodSetAssignment

from .clusterqueue import ClusterQueueState
from .concurrent_admission import ConcurrentAdmission
from .entry import (
    ADMISSION_GATED,
    ASSUMED,
    EVICTED,
    MISCONFIGURED,
    NOMINATED,
    NOT_NOMINATED,
    PENDING_EVALUATION,
    SKIPPED,
    SUSPENDED,
    WAITING_FOR_PREEMPTED,
    WAITING_FOR_QUOTA,
    CycleResult,
    Entry,
)
from .flavors import Assignment, FlavorAssigner, Mode
from .preemption import PreemptionContext, Preemptor, Target
from .queues import RequeueReason
from .quota import FR
from .tas import TASInventory
from .tas_preemption import tas_targets
from .workload_info import WorkloadInfo


class CycleHost(Protocol):
    """What the cycle needs from the state that owns it (the :class:`~hub.engine.engine.Engine`).

    The cycle reads the quota state and the queues through this and hands its decisions
    (reserve, requeue, preempt, wait) back; it never imports the facade.
    """

    config: Configuration
    cqs: dict[str, ClusterQueueState]
    infos: dict[str, WorkloadInfo]
    flavors: dict[str, ResourceFlavor]
    admission_checks: dict[str, AdmissionCheck]
    tas: TASInventory
    preemptor: Preemptor
    preemption_ctx: PreemptionContext
    blocked_entry: Entry | None
    ca: ConcurrentAdmission
    fair_sharing_order: Callable[[list[Entry]], Iterator[Entry]] | None

    def process_requeues(self, force: bool = False) -> bool: ...
    def all_reserved_pods_ready(self) -> bool: ...
    def pop_heads(self) -> list[tuple[WorkloadInfo, ClusterQueueState, bool]]: ...
    def requeue(self, info: WorkloadInfo, reason: str, quota_reason: str = "", message: str = "") -> bool: ...
    def namespace_matches(self, state: ClusterQueueState, namespace: str) -> bool: ...
    def queue_timestamp(self, info: WorkloadInfo) -> float: ...
    def issue_preemptions(self, preemptor: WorkloadInfo, targets: list[Target]) -> int: ...
    def block_on_pods_ready(self, entry: Entry) -> None: ...
    def set_pending_reason(self, info: WorkloadInfo, reason: str, message: str) -> None: ...
    def reserve(
        self, info: WorkloadInfo, state: ClusterQueueState, admission: Admission, usage: dict[FR, int], assignment: Assignment
    ) -> None: ...


class Scheduler:
    """Runs cycles over the engine's queues and quota state."""

    def __init__(self, engine: CycleHost) -> None:
        self.engine = engine
        self.cycle = 0

    # --- the cycle ----------------------------------------------------------------------

    def run_cycle(self) -> CycleResult:
        engine = self.engine
        self.cycle += 1
        result = CycleResult()
        engine.process_requeues()
        if engine.blocked_entry is not None:
            if not engine.all_reserved_pods_ready():
                return result
            self._resume_blocked(result)
        heads = engine.pop_heads()
        if not heads and engine.process_requeues(force=True):
            heads = engine.pop_heads()
        result.heads = len(heads)
        if not heads:
            return result
        entries: list[Entry] = []
        inadmissible: list[Entry] = []
        for info, cq, is_preemptor in heads:
            entry = Entry(info, cq, is_preemptor=is_preemptor)
            if self._nominate(entry):
                entries.append(entry)
            else:
                inadmissible.append(entry)
        claimed: dict[str, Target] = {}
        undo: list[tuple[ClusterQueueState, dict[FR, int]]] = []
        blocked = False
        for entry in self._order(entries):
            if blocked:
                entry.status = SKIPPED
                entry.message = "Waiting for all admitted workloads to be in PodsReady condition"
                entry.reason = WAITING_FOR_QUOTA
                continue
            blocked = self._process(entry, claimed, undo, result)
        for cq, usage in reversed(undo):
            cq.node.add_usage_map(usage, -1)
        for entry in entries:
            if entry.status in (ASSUMED, EVICTED) or entry is engine.blocked_entry:
                continue
            if self._requeue(entry):
                result.parked += 1
        for entry in inadmissible:
            if self._requeue(entry):
                result.parked += 1
        result.changed = result.admitted > 0 or result.preempting > 0 or result.parked > 0
        if not result.changed and engine.process_requeues(force=True):
            result.changed = True  # a batched requeue was pending: the next cycle may progress
        return result

    def _resume_blocked(self, result: CycleResult) -> None:
        """waitForPodsReady.blockAdmission released: admit the entry the cycle stopped at."""
        engine = self.engine
        entry = engine.blocked_entry
        engine.blocked_entry = None
        if entry is None or entry.assignment is None:
            return
        info = entry.info
        if engine.infos.get(info.key) is not info or info.wl.is_quota_reserved:
            return
        usage = entry.assignment.usage
        if entry.cq.active and all(v <= entry.cq.node.available(fr) for fr, v in usage.items()):
            entry.cq.node.add_usage_map(usage)
            self._admit(entry, usage)
            result.admitted += 1
            result.changed = True
        else:
            engine.requeue(entry.info, RequeueReason.FAILED_AFTER_NOMINATION)

    # --- nomination -----------------------------------------------------------------------

    def _nominate(self, entry: Entry) -> bool:
        info, cq, engine = entry.info, entry.cq, self.engine
        wl = info.wl
        if any(c.state in (CHECK_RETRY, CHECK_REJECTED) for c in wl.status.admission_checks):
            entry.message = "The workload has failed admission checks"
            entry.reason = PENDING_EVALUATION
            return False
        if not cq.active:
            entry.message = f"ClusterQueue {cq.name} is inactive"
            entry.reason = SUSPENDED
            return False
        if not engine.namespace_matches(cq, wl.meta.namespace):
            entry.message = "Workload namespace doesn't match ClusterQueue selector"
            entry.reason = MISCONFIGURED
            entry.requeue_reason = RequeueReason.NAMESPACE_MISMATCH
            return False
        for ps in wl.pod_sets:
            problem = requests_exceed_limits(ps.spec)
            if problem:
                entry.message = f"resource validation failed: {problem}"
                entry.reason = MISCONFIGURED
                return False
        entry.assignment, entry.targets = self.get_assignments(info, cq)
        entry.message = entry.assignment.message()
        return True

    def get_assignments(
        self, info: WorkloadInfo, cq: ClusterQueueState, nomination: dict[str, dict[str, str]] | None = None
    ) -> tuple[Assignment, list[Target]]:
        engine = self.engine
        if info.last_assignment is not None and self._progress_outdated(info, cq):
            info.last_assignment = None
        assigner = FlavorAssigner(
            info,
            cq,
            engine.flavors,
            engine.preemptor,
            fair_sharing=engine.config.fair_sharing.enabled,
            ignore_undeclared=engine.config.ignore_undeclared_resources,
            tas=engine.tas if engine.config.gate("TopologyAwareScheduling") else None,
            least_free_profile=engine.config.gate("TASProfileMixed"),
            delay_topology=any((ac := engine.admission_checks.get(rule.name)) is not None
                               and ac.controller_name == MULTIKUEUE_CONTROLLER for rule in cq.spec.admission_checks),
            allowed_flavors=engine.ca.allowed(info),
        )
        assigner.nomination = nomination
        full = assigner.assign()
        assignment, targets = full, []
        mode = full.mode()
        if mode == Mode.PREEMPT and full.tas_blocked:
            targets = tas_targets(info, cq, full, engine.tas, engine.preemption_ctx)
        elif mode == Mode.PREEMPT:
            targets = engine.preemptor.get_targets(info, full, cq)
        if mode != Mode.FIT and not (mode == Mode.PREEMPT and targets):
            partial = self._partial(info, cq, assigner) if engine.config.gate("PartialAdmission") else None
            if partial is not None:
                assignment, targets = partial
            else:
                targets = []
        info.last_assignment = assignment.last_state
        info.last_cycle = self.cycle
        info.last_generation = cq.generation
        return assignment, targets

    def _progress_outdated(self, info: WorkloadInfo, cq: ClusterQueueState) -> bool:
        if self.cycle - info.last_cycle <= 1:
            return False
        return cq.generation > info.last_generation

    def _partial(
        self, info: WorkloadInfo, cq: ClusterQueueState, assigner: FlavorAssigner
    ) -> tuple[Assignment, list[Target]] | None:
        pod_sets = info.wl.pod_sets
        full = [ps.count for ps in pod_sets]
        deltas = [ps.count - (ps.min_count if ps.min_count is not None else ps.count) for ps in pod_sets]
        total = sum(deltas)
        if total <= 0:
            return None
        best: tuple[Assignment, list[Target]] | None = None
        best_index = -1

        def attempt(k: int) -> bool:
            nonlocal best, best_index
            counts = [f - (d * k // total) for f, d in zip(full, deltas)]
            assignment = assigner.assign(counts)
            mode = assignment.mode()
            if mode == Mode.FIT:
                best, best_index = (assignment, []), k
                return True
            if mode == Mode.PREEMPT:
                targets = self.engine.preemptor.get_targets(info, assignment, cq)
                if targets:
                    best, best_index = (assignment, targets), k
                    return True
            return False

        index = bisect.bisect_left(range(total + 1), True, key=attempt)
        return best if index == best_index else None

    # --- ordering -------------------------------------------------------------------------

    def _order(self, entries: list[Entry]) -> Iterator[Entry]:
        engine = self.engine
        if engine.config.fair_sharing.enabled and engine.fair_sharing_order is not None:
            yield from engine.fair_sharing_order(entries)
            return
        sort_priority = engine.config.gate("PrioritySortingWithinCohort")
        prioritize_preemptors = engine.config.gate("PrioritizePreemptorWorkloads")

        def key(e: Entry) -> tuple[bool, bool, int, int, float, int]:
            assert e.assignment is not None
            return (
                not e.info.wl.is_quota_reserved,
                prioritize_preemptors and not e.is_preemptor,
                e.assignment.borrowing,
                -e.info.priority if sort_priority else 0,
                engine.queue_timestamp(e.info),
                e.info.seq,
            )

        yield from sorted(entries, key=key)

    # --- processing -----------------------------------------------------------------------

    def _fits(self, cq: ClusterQueueState, usage: dict[FR, int], victims: list[WorkloadInfo]) -> bool:
        if not victims:  # the common case: nothing to take out and put back
            available = cq.node.available
            return all(value <= available(fr) for fr, value in usage.items())
        engine = self.engine
        for v in victims:
            engine.cqs[v.cluster_queue or ""].node.add_usage_map(v.usage, -1)
        try:
            return all(value <= cq.node.available(fr) for fr, value in usage.items())
        finally:
            for v in victims:
                engine.cqs[v.cluster_queue or ""].node.add_usage_map(v.usage, 1)

    def _victims(self, claimed: dict[str, Target], targets: list[Target]) -> list[WorkloadInfo]:
        if not claimed and not targets:
            return []
        merged = {key: t.info for key, t in claimed.items()}
        for t in targets:
            merged[t.info.key] = t.info
        return list(merged.values())

    def _process(
        self,
        entry: Entry,
        claimed: dict[str, Target],
        undo: list[tuple[ClusterQueueState, dict[FR, int]]],
        result: CycleResult,
    ) -> bool:
        """Returns True when waitForPodsReady.blockAdmission stops the cycle here."""
        engine, cq = self.engine, entry.cq
        assert entry.assignment is not None
        if engine.ca.admitted_sibling(entry.info, cq, more_preferred=True) is not None:
            entry.status = SKIPPED
            entry.message = "A more favorable variant is already admitted"
            entry.reason = PENDING_EVALUATION
            return False
        usage = entry.assignment.usage
        fits = self._fits(cq, usage, self._victims(claimed, entry.targets))
        overlap = bool(claimed) and any(t.info.key in claimed for t in entry.targets)
        if overlap and engine.config.gate("RecomputeAssignmentUponPreemptionTargetsOverlap"):
            nomination = entry.assignment.flavors_by_pod_set()
            others = [t.info for t in claimed.values()]
            for v in others:
                engine.cqs[v.cluster_queue or ""].node.add_usage_map(v.usage, -1)
            entry.info.last_assignment = None
            assignment, targets = self.get_assignments(entry.info, cq, nomination)
            for v in others:
                engine.cqs[v.cluster_queue or ""].node.add_usage_map(v.usage, 1)
            if assignment.mode() == Mode.FIT:
                assignment.forced_mode = Mode.DEFERRED_FIT
            entry.assignment, entry.targets = assignment, targets
            entry.message = assignment.message()
            usage = assignment.usage
            fits = self._fits(cq, usage, self._victims(claimed, targets))
        mode = entry.assignment.mode()
        if mode == Mode.NO_FIT:
            entry.requeue_reason = RequeueReason.NO_FIT
            entry.reason = entry.assignment.no_fit_reason or WAITING_FOR_QUOTA
            return False
        if mode == Mode.PREEMPT and not entry.targets:
            entry.requeue_reason = RequeueReason.PREEMPTION_NO_CANDIDATES
            entry.reason = WAITING_FOR_QUOTA
            reserve = self._reservation(entry)
            if reserve:
                cq.node.add_usage_map(reserve)
                undo.append((cq, reserve))
            return False
        if mode == Mode.PREEMPT and engine.ca.preemption_gated(entry.info):
            entry.status = SKIPPED
            entry.message = "Workload requires preemption, but it's gated"
            entry.reason = ADMISSION_GATED
            entry.requeue_reason = RequeueReason.PREEMPTION_GATED
            entry.info.last_assignment = None
            engine.ca.mark_gated(entry.info, entry.message)
            return False
        if mode == Mode.DEFERRED_FIT:
            entry.message = (
                "Workload has overlapping preemption targets with another workload, "
                "but will fit after these preemptions complete"
            )
            entry.reason = WAITING_FOR_PREEMPTED
            entry.requeue_reason = RequeueReason.PENDING_PREEMPTION
            entry.info.last_assignment = None
            cq.node.add_usage_map(usage)
            undo.append((cq, usage))
            return False
        if any(t.info.key in claimed for t in entry.targets):
            entry.status = SKIPPED
            entry.message = "Workload has overlapping preemption targets with another workload"
            entry.reason = WAITING_FOR_QUOTA
            return False
        if fits and mode == Mode.FIT and entry.assignment.tas:
            # Placements were chosen against the cycle's start; an admission since may have taken the nodes.
            fits = engine.tas.fits(entry.assignment.tas, {p.name: p.topology for p in entry.assignment.pod_sets
                                                          if p.topology is not None})
        if not fits:
            entry.status = SKIPPED
            entry.message = "Workload no longer fits after processing another workload"
            entry.reason = WAITING_FOR_QUOTA
            return False
        for t in entry.targets:
            claimed[t.info.key] = t
        cq.node.add_usage_map(usage)
        if mode == Mode.PREEMPT:
            undo.append((cq, usage))
            entry.reason = WAITING_FOR_PREEMPTED
            entry.preempted = engine.issue_preemptions(entry.info, entry.targets)
            entry.info.last_assignment = None
            if entry.preempted:
                entry.message += f". Pending the preemption of {entry.preempted} workload(s)"
                entry.requeue_reason = RequeueReason.PENDING_PREEMPTION
            result.preempting += 1
            return False
        wfpr = engine.config.wait_for_pods_ready
        if wfpr.enabled and wfpr.block_admission and not engine.all_reserved_pods_ready():
            # Kueue blocks the scheduler here until every admitted workload is ready,
            # then admits this entry: keep it aside and stop this cycle.
            undo.append((cq, usage))
            engine.block_on_pods_ready(entry)
            return True
        if (lower := engine.ca.admitted_sibling(entry.info, cq, more_preferred=False)) is not None:
            return self._migrate(entry, lower, usage, undo)
        entry.status = NOMINATED
        self._admit(entry, usage)
        result.admitted += 1
        return False

    def _migrate(
        self, entry: Entry, lower: WorkloadInfo, usage: dict[FR, int], undo: list[tuple[ClusterQueueState, dict[FR, int]]]
    ) -> bool:
        """Concurrent admission: a variant that fits while a less preferred sibling is admitted
        evicts that sibling first (Kueue's issueMigration); it is admitted once the parent moved."""
        undo.append((entry.cq, usage))
        if not self.engine.ca.migration_allowed(entry.info, entry.cq):
            entry.message = "Target flavor is below LastAcceptableFlavorName"
            entry.reason = PENDING_EVALUATION
            return False
        entry.reason = WAITING_FOR_PREEMPTED
        self.engine.ca.migrate(entry.info, lower)
        entry.info.last_assignment = None
        entry.requeue_reason = RequeueReason.PENDING_PREEMPTION
        entry.message += ". Pending the migration of 1 workload(s)"
        return False

    def _reservation(self, entry: Entry) -> dict[FR, int]:
        """Capacity a Preempt entry without targets holds so lower entries can't take it."""
        cq = entry.cq
        assert entry.assignment is not None
        if cq.spec.preemption.reclaim_within_cohort == "Any" and not (
            self.engine.config.gate("PrioritizePreemptorWorkloads") and entry.is_preemptor
        ):
            return {}
        reserved: dict[FR, int] = {}
        for fr, value in entry.assignment.usage.items():
            quota = cq.quota_for(fr)
            used = cq.node.usage.get(fr, 0)
            if entry.assignment.borrowing > 0:
                if quota.borrowing_limit is None:
                    reserved[fr] = value
                else:
                    reserved[fr] = min(value, quota.nominal + quota.borrowing_limit - used)
            else:
                reserved[fr] = max(0, min(value, quota.nominal - used))
        return {fr: v for fr, v in reserved.items() if v > 0}

    def _admit(self, entry: Entry, usage: dict[FR, int]) -> None:
        assert entry.assignment is not None
        assignments = []
        for psa in entry.assignment.pod_sets:
            assignments.append(
                PodSetAssignment(
                    name=psa.name,
                    flavors=tuple(sorted((res, c.flavor) for res, c in psa.flavors.items())),
                    resource_usage=tuple(sorted((res, psa.requests.get(res, 0)) for res in psa.flavors)),
                    count=psa.count,
                    topology_assignment=psa.topology,
                )
            )
        admission = Admission(entry.cq.name, tuple(assignments))
        entry.status = ASSUMED
        self.engine.reserve(entry.info, entry.cq, admission, usage, entry.assignment)

    # --- requeue --------------------------------------------------------------------------

    def _requeue(self, entry: Entry) -> bool:
        """Return the head to its queue and record why it waits. True if it was parked."""
        engine = self.engine
        if entry.status != NOT_NOMINATED and entry.requeue_reason == RequeueReason.GENERIC:
            entry.requeue_reason = RequeueReason.FAILED_AFTER_NOMINATION
        parked = engine.requeue(entry.info, entry.requeue_reason, entry.reason, entry.message)
        if entry.reason:
            engine.set_pending_reason(entry.info, entry.reason, entry.message)
        return parked


__all__ = ["Scheduler", "CycleHost", "Entry", "CycleResult", "NEVER"]
