"""TAS preemption: free the nodes a workload needs when quota is not what keeps it out.

A workload whose quota fits but whose pod sets fit no domain now (though they would on empty
nodes) waits for nodes, not quota, so quota preemption finds nothing to take. As Kueue does for
TAS workloads, candidates are the ClusterQueue's own admitted workloads holding nodes of the same
topology flavors that ``withinClusterQueue`` lets it preempt, in Kueue's candidate order (lowest
priority, most recently admitted first); they are taken out one by one until the placement fits,
then put back, latest first, wherever it still fits without them: the fewest evictions that free
a domain. Cohort reclamation through TAS is not done.
"""

from __future__ import annotations

from hub.api.queues import NEVER

from .clusterqueue import ClusterQueueState
from .flavors import Assignment
from .preemption import (
    IN_CLUSTER_QUEUE,
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
    policy = cq.spec.preemption.within_cluster_queue
    if policy == NEVER or not assignment.tas:
        return []
    flavors = {p.flavor for p in assignment.tas}
    candidates = [
        info for info in cq.reserving.values()
        if info.key != preemptor.key and tas.holds(info.key) and not is_evicted(info)
        and satisfies_policy(ctx, preemptor, info, policy) and _uses(info, flavors)
    ]
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
        return [Target(info, IN_CLUSTER_QUEUE, cq.name) for info in reversed(kept)]
    finally:
        for info, held in taken:
            tas.put_back(info.key, held)


def _uses(info: WorkloadInfo, flavors: set[str]) -> bool:
    admission = info.wl.status.admission
    return admission is not None and any(f in flavors for psa in admission.pod_set_assignments for _, f in psa.flavors)
