"""Fair sharing: dominant resource shares, the admission tournament, fair preemption.

Follows Kueue's pkg/cache/scheduler/fair_sharing.go, pkg/scheduler/fair_sharing_iterator.go
and pkg/scheduler/preemption/fairsharing: a node's share is how much it borrows
above its subtree quota, per resource, relative to what its parent could lend,
divided by its fair-sharing weight.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hub.api.config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, Configuration
from hub.api.queues import NEVER

from .preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    PreemptionContext,
    Target,
    candidates_order_key,
    fill_back,
    restore,
    satisfies_policy,
    take,
    uses_resources,
    workload_fits,
)
from .quota import FR, QuotaNode
from .workload_info import WorkloadInfo

if TYPE_CHECKING:
    from .clusterqueue import ClusterQueueState
    from .entry import Entry

MAX_INT64 = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DRS:
    """A node's dominant resource share (unweighted ratio in thousandths)."""

    weight: float = 1.0
    ratio: float = 0.0
    dominant: str = ""
    borrowing: bool = False
    borrowed: tuple[FR, ...] = ()

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight

    def rounded(self) -> int:
        """``status.fairSharing.weightedShare``."""
        if self.zero_weight_borrows:
            return MAX_INT64
        return math.ceil(self.precise())

    def borrowing_on(self, requested: dict[FR, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


NEGATIVE_DRS = DRS(ratio=-1.0)


def compare_drs(a: DRS, b: DRS) -> int:
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return (a.ratio > b.ratio) - (a.ratio < b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    pa, pb = a.precise(), b.precise()
    return (pa > pb) - (pa < pb)


def lendable(parent: QuotaNode) -> dict[str, int]:
    """Per resource name: what ``parent`` could potentially make available, over the root's FRs."""
    root = parent.root()
    out: dict[str, int] = {}
    for fr in root.subtree:
        out[fr[1]] = out.get(fr[1], 0) + parent.potential_available(fr)
    return out


def dominant_resource_share(node: QuotaNode) -> DRS:
    if node.parent is None:
        return DRS(weight=node.weight)
    borrowing: dict[str, int] = {}
    borrowed: list[FR] = []
    for fr, quota in node.subtree.items():
        amount = node.usage.get(fr, 0) - quota
        if amount > 0:
            borrowing[fr[1]] = borrowing.get(fr[1], 0) + amount
            borrowed.append(fr)
    if not borrowing:
        return DRS(weight=node.weight)
    ratio, dominant = 0.0, ""
    lend = lendable(node.parent)
    for resource, amount in sorted(borrowing.items()):
        total = lend.get(resource, 0)
        if total > 0:
            r = amount * 1000.0 / total
            if r > ratio:
                ratio, dominant = r, resource
    return DRS(node.weight, ratio, dominant, True, tuple(borrowed))


# --- admission ordering ------------------------------------------------------------------


class _Tournament:
    """One pop of Kueue's fair-sharing iterator over a root cohort's entries."""

    def __init__(
        self, config: Configuration, timestamp: Callable[[WorkloadInfo], float], by_cq: dict[str, Entry], root: QuotaNode
    ) -> None:
        self.timestamp = timestamp
        self.by_cq = by_cq
        self.prioritize_preemptors = config.gate("PrioritizePreemptorWorkloads")
        self.non_borrowing_first = config.gate("FairSharingPrioritizeNonBorrowing")
        self.sort_priority = config.gate("PrioritySortingWithinCohort")
        # DRS of each entry's node on the path, keyed by (parent cohort, workload), with its usage added.
        self.drs: dict[tuple[str, str], DRS] = {}
        self.requested: dict[str, dict[FR, int]] = {}
        for cq_node in root.subtree_cqs():
            e = by_cq.get(cq_node.name)
            if e is None or e.assignment is None:
                continue
            usage = e.assignment.usage if not e.info.wl.is_quota_reserved else {}
            cq_node.add_usage_map(usage)
            self.requested[e.info.key] = usage
            share = dominant_resource_share(cq_node)
            for ancestor in cq_node.ancestors():
                self.drs[(ancestor.name, e.info.key)] = share
                share = dominant_resource_share(ancestor)
            cq_node.add_usage_map(usage, -1)

    def less(self, a: Entry, b: Entry, parent: str) -> bool:
        if self.prioritize_preemptors and a.is_preemptor != b.is_preemptor:
            return a.is_preemptor
        da = self.drs.get((parent, a.info.key), DRS())
        db = self.drs.get((parent, b.info.key), DRS())
        if self.non_borrowing_first:
            ba = da.borrowing_on(self.requested.get(a.info.key, {}))
            bb = db.borrowing_on(self.requested.get(b.info.key, {}))
            if ba != bb:
                return not ba
        c = compare_drs(da, db)
        if c != 0:
            return c < 0
        if self.sort_priority and a.info.priority != b.info.priority:
            return a.info.priority > b.info.priority
        ta, tb = self.timestamp(a.info), self.timestamp(b.info)
        if ta != tb:
            return ta < tb
        return a.info.seq < b.info.seq

    def winner(self, cohort: QuotaNode) -> Entry | None:
        candidates: list[Entry] = []
        for child in sorted(cohort.child_cohorts.values(), key=lambda n: n.name):
            found = self.winner(child)
            if found is not None:
                candidates.append(found)
        for child in sorted(cohort.child_cqs.values(), key=lambda n: n.name):
            entry = self.by_cq.get(child.name)
            if entry is not None:
                candidates.append(entry)
        if not candidates:
            return None
        best = candidates[0]
        for current in candidates[1:]:
            if self.less(current, best, cohort.name):
                best = current
        return best


def tournament_order(
    config: Configuration, timestamp: Callable[[WorkloadInfo], float], entries: list[Entry]
) -> Iterator[Entry]:
    """Yield entries one at a time, re-running the cohort tournament after each is processed."""
    by_cq: dict[str, Entry] = {e.cq.name: e for e in entries}
    while by_cq:
        entry = by_cq[min(by_cq)]
        node = entry.cq.node
        if node.parent is None:
            del by_cq[entry.cq.name]
            yield entry
            continue
        root = node.root()
        winner = _Tournament(config, timestamp, by_cq, root).winner(root)
        assert winner is not None
        del by_cq[winner.cq.name]
        yield winner


# --- preemption --------------------------------------------------------------------------


class _TargetOrdering:
    """Kueue's TargetClusterQueueOrdering: which ClusterQueue to take the next victim from."""

    def __init__(self, ctx: PreemptionContext, preemptor_cq: ClusterQueueState, candidates: list[WorkloadInfo]) -> None:
        self.ctx = ctx
        self.preemptor_cq = preemptor_cq
        self.ancestors = {id(n) for n in preemptor_cq.node.ancestors()}
        self.targets: dict[str, list[WorkloadInfo]] = {}
        for c in candidates:
            self.targets.setdefault(c.cluster_queue or "", []).append(c)
        self.pruned_cqs: set[str] = set()
        self.pruned_cohorts: set[int] = set()
        self.order_key = candidates_order_key(preemptor_cq.name, ctx.now)

    def has_workload(self, cq: str) -> bool:
        return bool(self.targets.get(cq))

    def pop(self, cq: str) -> WorkloadInfo:
        return self.targets[cq].pop(0)

    def drop(self, cq: str) -> None:
        self.pruned_cqs.add(cq)

    def __iter__(self) -> Iterator[str]:
        node = self.preemptor_cq.node
        if node.parent is None:
            while self.preemptor_cq.name not in self.pruned_cqs and self.has_workload(self.preemptor_cq.name):
                yield self.preemptor_cq.name
            return
        root = node.root()
        while id(root) not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> str | None:
        best_cq: QuotaNode | None = None
        best_cq_drs = NEGATIVE_DRS
        for cq in sorted(cohort.child_cqs.values(), key=lambda n: n.name):
            if cq.name in self.pruned_cqs:
                continue
            drs = dominant_resource_share(cq)
            if (not drs.borrowing and cq is not self.preemptor_cq.node) or not self.has_workload(cq.name):
                self.pruned_cqs.add(cq.name)
                continue
            c = compare_drs(drs, best_cq_drs)
            if c == 0 and best_cq is not None:
                new = self.targets[cq.name][0]
                cur = self.targets[best_cq.name][0]
                if self.order_key(new) < self.order_key(cur):
                    best_cq = cq
            elif c > 0:
                best_cq, best_cq_drs = cq, drs
        best_cohort: QuotaNode | None = None
        best_cohort_drs = NEGATIVE_DRS
        for child in sorted(cohort.child_cohorts.values(), key=lambda n: n.name):
            if id(child) in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare_drs(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if best_cohort is not None and compare_drs(best_cohort_drs, best_cq_drs) >= 0:
            return self._next(best_cohort)
        assert best_cq is not None
        return best_cq.name

    def _almost_lca(self, node: QuotaNode, lca: QuotaNode) -> QuotaNode:
        almost = node
        for ancestor in node.ancestors():
            if ancestor is lca:
                return almost
            almost = ancestor
        raise AssertionError("no almost-LCA")

    def _lca(self, target: QuotaNode) -> QuotaNode:
        for ancestor in target.ancestors():
            if id(ancestor) in self.ancestors:
                return ancestor
        raise AssertionError("no least common ancestor")

    def shares(self, target_cq: str) -> tuple[DRS, DRS]:
        """(preemptor's new share, target's old share) at the almost-LCAs."""
        target = self.ctx.cqs[target_cq].node
        lca = self._lca(target)
        preemptor_side = self._almost_lca(self.preemptor_cq.node, lca)
        target_side = self._almost_lca(target, lca)
        return dominant_resource_share(preemptor_side), dominant_resource_share(target_side)

    def target_share_after_removal(self, target_cq: str, victim: WorkloadInfo) -> DRS:
        node = self.ctx.cqs[target_cq].node
        node.add_usage_map(victim.usage, -1)
        try:
            return dominant_resource_share(self._almost_lca(node, self._lca(node)))
        finally:
            node.add_usage_map(victim.usage, 1)


def _strategy(name: str) -> Callable[[DRS, DRS, DRS], bool]:
    if name == LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
        return lambda new, _old, target_new: compare_drs(new, target_new) <= 0
    return lambda new, target_old, _t: compare_drs(new, target_old) < 0


class FairPreemption:
    """Fair-sharing preemption search, plugged into :class:`~hub.engine.preemption.Preemptor`."""

    def __init__(self, strategies: tuple[str, ...], preempt_within_nominal: bool) -> None:
        self.strategies = strategies or (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)
        self.preempt_within_nominal = preempt_within_nominal

    def _candidates(
        self, ctx: PreemptionContext, preemptor: WorkloadInfo, cq: ClusterQueueState, contested: set[FR]
    ) -> list[WorkloadInfo]:
        pre = cq.spec.preemption
        out: list[WorkloadInfo] = []
        if pre.within_cluster_queue != NEVER:
            out.extend(
                w for w in cq.reserving.values()
                if satisfies_policy(ctx, preemptor, w, pre.within_cluster_queue) and uses_resources(w, contested)
            )
        node = cq.node
        if node.parent is not None and pre.reclaim_within_cohort != NEVER:
            for other in node.root().subtree_cqs():
                if other is node or other.parent is None or not any(other.is_borrowing(fr) for fr in contested):
                    continue
                state = ctx.cqs.get(other.name)
                if state is None:
                    continue
                out.extend(
                    w for w in state.reserving.values()
                    if satisfies_policy(ctx, preemptor, w, pre.reclaim_within_cohort) and uses_resources(w, contested)
                )
        out.sort(key=candidates_order_key(cq.name, ctx.now))
        return out

    def __call__(
        self,
        ctx: PreemptionContext,
        preemptor: WorkloadInfo,
        cq: ClusterQueueState,
        usage: dict[FR, int],
        contested: set[FR],
    ) -> list[Target]:
        candidates = self._candidates(ctx, preemptor, cq, contested)
        if not candidates:
            return []
        cq.node.add_usage_map(usage)
        try:
            fits, targets, retry = self._first(ctx, preemptor, cq, usage, contested, candidates)
            if not fits and len(self.strategies) > 1:
                fits, targets = self._second(ctx, cq, usage, retry, targets)
        finally:
            cq.node.add_usage_map(usage, -1)
        if not fits:
            restore(ctx, targets)
            return []
        targets = fill_back(ctx, cq, usage, targets, True)
        restore(ctx, targets)
        return targets

    def _fits(self, cq: ClusterQueueState, usage: dict[FR, int]) -> bool:
        cq.node.add_usage_map(usage, -1)
        try:
            return workload_fits(cq, usage, True)
        finally:
            cq.node.add_usage_map(usage)

    def _first(
        self,
        ctx: PreemptionContext,
        preemptor: WorkloadInfo,
        cq: ClusterQueueState,
        usage: dict[FR, int],
        contested: set[FR],
        candidates: list[WorkloadInfo],
    ) -> tuple[bool, list[Target], list[WorkloadInfo]]:
        ordering = _TargetOrdering(ctx, cq, candidates)
        strategy = _strategy(self.strategies[0])
        targets: list[Target] = []
        retry: list[WorkloadInfo] = []
        within_nominal = self.preempt_within_nominal and not any(cq.node.is_borrowing(fr) for fr in contested)
        for target_cq in ordering:
            if target_cq == cq.name or within_nominal:
                # Own queue, or the preemptor stays within nominal: no share comparison needed.
                reason = IN_CLUSTER_QUEUE if target_cq == cq.name else IN_COHORT_RECLAMATION
                take(ctx, targets, ordering.pop(target_cq), reason)
                if self._fits(cq, usage):
                    return True, targets, []
                continue
            new_share, old_share = ordering.shares(target_cq)
            if math.isinf(new_share.precise()) and not math.isinf(old_share.precise()):
                while ordering.has_workload(target_cq):
                    retry.append(ordering.pop(target_cq))
                continue
            while ordering.has_workload(target_cq):
                victim = ordering.pop(target_cq)
                target_new = ordering.target_share_after_removal(target_cq, victim)
                if strategy(new_share, old_share, target_new):
                    take(ctx, targets, victim, IN_COHORT_FAIR_SHARING)
                    if self._fits(cq, usage):
                        return True, targets, []
                    break
                retry.append(victim)
        return False, targets, retry

    def _second(
        self,
        ctx: PreemptionContext,
        cq: ClusterQueueState,
        usage: dict[FR, int],
        retry: list[WorkloadInfo],
        targets: list[Target],
    ) -> tuple[bool, list[Target]]:
        ordering = _TargetOrdering(ctx, cq, retry)
        for target_cq in ordering:
            new_share, old_share = ordering.shares(target_cq)
            victim = ordering.pop(target_cq)
            if compare_drs(new_share, old_share) < 0:
                take(ctx, targets, victim, IN_COHORT_FAIR_SHARING)
                if self._fits(cq, usage):
                    return True, targets
            ordering.drop(target_cq)
        return False, targets
