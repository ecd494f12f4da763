"""TAS preemption: free the nodes a workload needs when quota is not what keeps it out.

A workload whose quota fits but whose pod sets fit no domain now (though they would on empty
nodes) waits for nodes, not quota, so quota preemption finds nothing to take. As Kueue does for
TAS workloads, candidates are the admitted workloads holding nodes of the same topology flavors:
the ClusterQueue's own that ``withinClusterQueue`` lets it preempt, and, with ``reclaimWithinCohort``,
those of the other ClusterQueues of its cohort tree that borrow one of the flavor-resources it needs
(Kueue's findCandidates: a queue within its nominal quota keeps its nodes), in Kueue's candidate
order (other queues first, lowest priority, most recently admitted first); they are taken out one
by one until the placement fits, then put back, latest first, wherever it still fits without them:
the fewest evictions that free a domain.
"""

from __future__ import annotations

from hub.api.queues import NEVER

from .clusterqueue import ClusterQueueState
from .flavors import Assignment
from .preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_RECLAMATION,
    PreemptionContext,
    Target,
    candidates_order_key,
    is_evicted,
    satisfies_policy,
)
from .tas import TASInventory
from .tas.inventory import LeafKey
from .workload_info import WorkloadInfo

Held = list[tuple[LeafKey, dict[str, int]]]


def tas_targets(preemptor: WorkloadInfo, cq: ClusterQueueState, assignment: Assignment, tas: TASInventory,
                ctx: PreemptionContext) -> list[Target]:
    if not assignment.tas:
        return []
    flavors = {p.flavor for p in assignment.tas}
    pre = cq.spec.preemption
    candidates = _candidates(preemptor, cq, pre.within_cluster_queue, flavors, tas, ctx)
    if cq.node.parent is not None and pre.reclaim_within_cohort != NEVER:
        frs = {fr for fr in assignment.usage if fr[0] in flavors}
        for node in cq.node.root().subtree_cqs():
            other = ctx.cqs.get(node.name)
            if other is None or other is cq or not any(node.is_borrowing(fr) for fr in frs):
                continue  # Kueue's cqIsBorrowing: nothing is reclaimed from a queue within its nominal quota
            candidates += _candidates(preemptor, other, pre.reclaim_within_cohort, flavors, tas, ctx)
    if not candidates:
        return []
    candidates.sort(key=candidates_order_key(cq.name, ctx.now))
    taken: list[tuple[WorkloadInfo, Held]] = []
    try:
        for info in candidates:
            taken.append((info, tas.take_out(info.key)))
            if not tas.place(assignment.tas)[1]:
                break
        else:
            return []
        kept: list[WorkloadInfo] = [taken[-1][0]]
        for info, held in reversed(taken[:-1]):
            tas.put_back(info.key, held)
            if tas.place(assignment.tas)[1]:
                tas.take_out(info.key)  # needed after all
                kept.append(info)
            else:
                taken.remove((info, held))
        return [Target(info, IN_CLUSTER_QUEUE if info.cluster_queue == cq.name else IN_COHORT_RECLAMATION,
                       info.cluster_queue or "") for info in reversed(kept)]
    finally:
        for info, held in taken:
            tas.put_back(info.key, held)


def _candidates(preemptor: WorkloadInfo, cq: ClusterQueueState, policy: str, flavors: set[str], tas: TASInventory,
                ctx: PreemptionContext) -> list[WorkloadInfo]:
    if policy == NEVER:
        return []
    return [info for info in cq.reserving.values()
            if info.key != preemptor.key and tas.holds(info.key) and not is_evicted(info)
            and satisfies_policy(ctx, preemptor, info, policy) and _uses(info, flavors)]


def _uses(info: WorkloadInfo, flavors: set[str]) -> bool:
    admission = info.wl.status.admission
    return admission is not None and any(f in flavors for psa in admission.pod_set_assignments for _, f in psa.flavors)
