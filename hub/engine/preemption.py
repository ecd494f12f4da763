"""Choosing preemption victims (Kueue's pkg/scheduler/preemption), as decisions only.

The preemptor never evicts anything itself: it returns :class:`Target` lists
that the scheduler issues. Simulations remove candidates' usage from the live
quota tree and always restore it before returning.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hub.api.queues import ANY, LOWER_OR_NEWER_EQUAL, LOWER_PRIORITY, NEVER
from hub.api.workload import EVICTED

from .flavors import Assignment, Mode, PMode
from .quota import FR, QuotaNode, find_height_of_lowest_subtree_that_fits
from .workload_info import WorkloadInfo

if TYPE_CHECKING:
    from .clusterqueue import ClusterQueueState

# Preempted condition reasons.
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

HUMAN_REASONS = {
    IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    IN_COHORT_RECLAMATION: "reclamation within the cohort",
    IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}

# Classic preemption variants.
_WITHIN_CQ, _HIERARCHICAL, _WITHOUT_BORROWING, _WHILE_BORROWING = range(1, 5)
_VARIANT_REASON = {
    _WITHIN_CQ: IN_CLUSTER_QUEUE,
    _HIERARCHICAL: IN_COHORT_RECLAMATION,
    _WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True, slots=True)
class Target:
    """A workload to evict so the preemptor can fit, and why."""

    info: WorkloadInfo
    reason: str
    cluster_queue: str


@dataclass(slots=True)
class _Candidate:
    info: WorkloadInfo
    lca: QuotaNode | None
    variant: int


class PreemptionContext:
    """What a preemption search needs to know beyond the quota tree."""

    def __init__(
        self,
        cqs: dict[str, ClusterQueueState],
        queue_timestamp: Callable[[WorkloadInfo], float],
        now: float,
    ) -> None:
        self.cqs = cqs
        self.queue_timestamp = queue_timestamp
        self.now = now


def is_evicted(info: WorkloadInfo) -> bool:
    return info.wl.status.is_true(EVICTED)


def satisfies_policy(ctx: PreemptionContext, preemptor: WorkloadInfo, candidate: WorkloadInfo, policy: str) -> bool:
    lower = preemptor.priority > candidate.priority
    if policy == LOWER_PRIORITY:
        return lower
    if policy == LOWER_OR_NEWER_EQUAL:
        equal_newer = preemptor.priority == candidate.priority and ctx.queue_timestamp(preemptor) < ctx.queue_timestamp(
            candidate
        )
        return lower or equal_newer
    return policy == ANY


def uses_resources(info: WorkloadInfo, frs: set[FR]) -> bool:
    """Kueue's WorkloadUsesResources: any assigned (flavor, resource), even of zero quantity."""
    admission = info.wl.status.admission
    if admission is None:
        return any(fr in frs for fr in info.usage)
    return any((flavor, res) in frs for psa in admission.pod_set_assignments for res, flavor in psa.flavors)


def candidates_order_key(preemptor_cq: str, now: float) -> Callable[[WorkloadInfo], tuple[bool, bool, int, float, str]]:
    """Kueue's CandidatesOrdering: evicted first, other queues first, lower priority,
    most recently reserved, then UID."""

    def key(info: WorkloadInfo) -> tuple[bool, bool, int, float, str]:
        reserved = info.reserved_at if info.reserved_at else now
        return (not is_evicted(info), info.cluster_queue == preemptor_cq, info.priority, -reserved, info.wl.meta.uid)

    return key


def remove_usage(ctx: PreemptionContext, info: WorkloadInfo) -> None:
    ctx.cqs[info.cluster_queue or ""].node.add_usage_map(info.usage, -1)


def add_usage(ctx: PreemptionContext, info: WorkloadInfo) -> None:
    ctx.cqs[info.cluster_queue or ""].node.add_usage_map(info.usage, 1)


def take(ctx: PreemptionContext, targets: list[Target], victim: WorkloadInfo, reason: str) -> None:
    """Simulate evicting ``victim`` (its usage leaves the tree) and record it as a target."""
    remove_usage(ctx, victim)
    targets.append(Target(victim, reason, victim.cluster_queue or ""))


def restore(ctx: PreemptionContext, targets: list[Target]) -> None:
    """Undo the simulated evictions of ``targets``."""
    for t in targets:
        add_usage(ctx, t.info)


def workload_fits(cq: ClusterQueueState, usage: dict[FR, int], allow_borrowing: bool) -> bool:
    node = cq.node
    for fr, value in usage.items():
        if not allow_borrowing and node.borrowing_with(fr, value):
            return False
        if value > node.available(fr):
            return False
    return True


def fill_back(ctx: PreemptionContext, cq: ClusterQueueState, usage: dict[FR, int], targets: list[Target], allow_borrowing: bool) -> list[Target]:
    """Put victims back (newest choice kept) while the preemptor still fits."""
    i = len(targets) - 2
    while i >= 0:
        add_usage(ctx, targets[i].info)
        if workload_fits(cq, usage, allow_borrowing):
            targets[i] = targets[-1]
            targets.pop()
        else:
            remove_usage(ctx, targets[i].info)
        i -= 1
    return targets


def _fits_in_quota(node: QuotaNode, requests: dict[FR, int]) -> tuple[bool, dict[FR, int]]:
    fits = True
    remaining: dict[FR, int] = {}
    for fr, value in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - node.local_available(fr))
    return fits, remaining


class ClassicalSearch:
    """One classic preemption search for a workload on a set of contested FRs."""

    def __init__(
        self,
        ctx: PreemptionContext,
        preemptor: WorkloadInfo,
        cq: ClusterQueueState,
        usage: dict[FR, int],
        contested: set[FR],
    ) -> None:
        self.ctx = ctx
        self.preemptor = preemptor
        self.cq = cq
        self.usage = usage
        self.contested = contested
        pre = cq.spec.preemption
        self.borrow_forbidden = pre.borrow_within_cohort.policy == NEVER
        self.threshold = pre.borrow_within_cohort.max_priority_threshold

    def _variant(self, candidate: WorkloadInfo, advantage: bool) -> int:
        if not uses_resources(candidate, self.contested):
            return 0
        pre = self.cq.spec.preemption
        same = candidate.cluster_queue == self.cq.name
        policy = pre.within_cluster_queue if same else pre.reclaim_within_cohort
        if not satisfies_policy(self.ctx, self.preemptor, candidate, policy):
            return 0
        if same:
            return _WITHIN_CQ
        if advantage:
            return _HIERARCHICAL
        if self.borrow_forbidden:
            return _WITHOUT_BORROWING
        if candidate.priority >= self.preemptor.priority or (
            self.threshold is not None and candidate.priority > self.threshold
        ):
            return _WITHOUT_BORROWING
        return _WHILE_BORROWING

    def _from_cq(self, cq: ClusterQueueState, lca: QuotaNode | None, advantage: bool) -> list[_Candidate]:
        out = []
        for info in cq.reserving.values():
            variant = self._variant(info, advantage)
            if variant:
                out.append(_Candidate(info, lca, variant))
        return out

    def _collect_subtree(
        self, cohort: QuotaNode, root: QuotaNode, skip: QuotaNode | None, advantage: bool, out: list[_Candidate]
    ) -> None:
        for child in cohort.child_cohorts.values():
            if child is skip or child.within_nominal(self.contested):
                continue
            self._collect_subtree(child, root, skip, advantage, out)
        for child in cohort.child_cqs.values():
            if child is self.cq.node or child.within_nominal(self.contested):
                continue
            state = self.ctx.cqs.get(child.name)
            if state is not None:
                out.extend(self._from_cq(state, root, advantage))

    def candidates(self) -> tuple[list[_Candidate], bool, bool]:
        """All candidates in Kueue's order, and whether other queues / hierarchy offered any."""
        pre = self.cq.spec.preemption
        same: list[_Candidate] = []
        if pre.within_cluster_queue != NEVER:
            same = self._from_cq(self.cq, None, False)
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = self.cq.node
        if node.parent is not None and pre.reclaim_within_cohort != NEVER:
            advantage, remaining = _fits_in_quota(node, self.usage)
            previous: QuotaNode | None = None
            for ancestor in node.ancestors():
                target = hierarchy if advantage else priority
                self._collect_subtree(ancestor, ancestor, previous, advantage, target)
                fits, remaining = _fits_in_quota(ancestor, remaining)
                advantage = advantage or fits
                previous = ancestor
        key = candidates_order_key(self.cq.name, self.ctx.now)
        ordered: list[_Candidate] = []
        groups = [sorted(g, key=lambda c: key(c.info)) for g in (hierarchy, priority, same)]
        for evicted in (True, False):
            for group in groups:
                ordered.extend(c for c in group if is_evicted(c.info) == evicted)
        return ordered, not hierarchy and not priority, not hierarchy

    def _valid(self, candidate: _Candidate, borrowing: bool) -> bool:
        if candidate.info.cluster_queue == self.cq.name:
            return True
        if borrowing and candidate.variant == _WITHOUT_BORROWING:
            return False
        state = self.ctx.cqs.get(candidate.info.cluster_queue or "")
        if state is None or state.node.within_nominal(self.contested):
            return False
        for node in state.node.ancestors():
            if node is candidate.lca:
                break
            if node.within_nominal(self.contested):
                return False
        return True

    def _under_nominal(self) -> bool:
        node = self.cq.node
        return all(node.nominal(fr) > node.usage.get(fr, 0) for fr in self.contested)

    def run(self) -> list[Target]:
        candidates, none_from_others, none_hierarchical = self.candidates()
        if none_from_others or (self.borrow_forbidden and not self._under_nominal()):
            attempts = [True]
        elif self.borrow_forbidden and none_hierarchical:
            attempts = [False, True]
        else:
            attempts = [True, False]
        for borrowing in attempts:
            targets: list[Target] = []
            for candidate in candidates:
                if not self._valid(candidate, borrowing):
                    continue
                take(self.ctx, targets, candidate.info, _VARIANT_REASON[candidate.variant])
                if workload_fits(self.cq, self.usage, borrowing):
                    targets = fill_back(self.ctx, self.cq, self.usage, targets, borrowing)
                    restore(self.ctx, targets)
                    return targets
            restore(self.ctx, targets)
        return []


class Preemptor:
    """Finds preemption targets; the fair-sharing variant plugs in through ``fair_search``."""

    def __init__(self, ctx: PreemptionContext, fair_search: Callable[..., list[Target]] | None = None) -> None:
        self.ctx = ctx
        self.fair_search = fair_search

    def _targets(self, preemptor: WorkloadInfo, cq: ClusterQueueState, usage: dict[FR, int], contested: set[FR]) -> list[Target]:
        if self.fair_search is not None:
            return self.fair_search(self.ctx, preemptor, cq, usage, contested)
        return ClassicalSearch(self.ctx, preemptor, cq, usage, contested).run()

    def simulate_preemption(self, cq: ClusterQueueState, info: WorkloadInfo, fr: FR, quantity: int) -> tuple[PMode, int]:
        """The flavor assigner's oracle: could preemption make ``quantity`` of ``fr`` fit?"""
        targets = self._targets(info, cq, {fr: quantity}, {fr})
        if not targets:
            borrow, _ = find_height_of_lowest_subtree_that_fits(cq.node, fr, quantity)
            return PMode.NO_CANDIDATES, borrow
        for t in targets:
            remove_usage(self.ctx, t.info)
        borrow, _ = find_height_of_lowest_subtree_that_fits(cq.node, fr, quantity)
        restore(self.ctx, targets)
        if any(t.cluster_queue == cq.name for t in targets):
            return PMode.PREEMPT, borrow
        return PMode.RECLAIM, borrow

    def get_targets(self, info: WorkloadInfo, assignment: Assignment, cq: ClusterQueueState) -> list[Target]:
        contested = {
            (choice.flavor, res)
            for ps in assignment.pod_sets
            for res, choice in ps.flavors.items()
            if choice.mode == Mode.PREEMPT
        }
        usage = {fr: v for fr, v in assignment.usage.items() if v}
        return self._targets(info, cq, usage, contested)


def preemption_message(preemptor: WorkloadInfo, reason: str, preemptor_path: str, preemptee_path: str) -> str:
    uid = preemptor.wl.meta.uid or "UNKNOWN"
    job_uid = preemptor.wl.meta.labels.get("kueue.x-k8s.io/job-uid") or "UNKNOWN"
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
        f"{HUMAN_REASONS.get(reason, 'UNKNOWN')}; preemptor path: {preemptor_path or 'UNKNOWN'}; "
        f"preemptee path: {preemptee_path or 'UNKNOWN'}"
    )
