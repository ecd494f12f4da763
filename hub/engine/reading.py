"""The engine's read-only queries (what callers ask of it between calls), kept apart from the
facade so :mod:`hub.engine.engine` holds the state changes only."""

from __future__ import annotations

from hub.api.workload import Workload

from .clusterqueue import ClusterQueueState
from .concurrent_admission import ConcurrentAdmission
from .fairsharing import dominant_resource_share
from .queue_manager import Blocker, QueueManager, explain_workload
from .quota import FR, QuotaTree
from .workload_info import WorkloadInfo


class EngineReading:
    """Mixed into :class:`hub.engine.engine.Engine`; reads only the containers named here."""

    infos: dict[str, WorkloadInfo]
    workloads: dict[str, Workload]
    cqs: dict[str, ClusterQueueState]
    tree: QuotaTree
    qm: QueueManager
    ca: ConcurrentAdmission

    def blocker(self, info: WorkloadInfo) -> Blocker | None:
        """Why a pending workload cannot even be queued (Kueue's queue blockers)."""
        return self.qm.blocker(info)


    def is_inadmissible(self, key: str) -> bool:
        info = self.infos.get(key)
        if info is None or info.wl.is_quota_reserved:
            return False
        blocker = self.blocker(info)
        return blocker is not None and blocker.reason in ("Misconfigured", "Suspended")

    def usage_of(self, cq: str) -> dict[FR, int]:
        state = self.cqs.get(cq)
        return dict(state.node.usage) if state is not None else {}

    def explain(self, key: str) -> str:
        """A human-readable account of where a workload stands and why."""
        wl = self.workloads.get(key)
        if wl is None:
            return f"workload {key} not found"
        info = self.infos.get(key)
        blocker = self.blocker(info) if info is not None else None
        variants = self.ca.variants.get(key) if key in self.ca.parents else None
        if variants is not None and blocker is None and not wl.is_quota_reserved and not wl.is_finished:
            pending = sorted(k.partition("/")[2] for k in variants)
            return f"pending: a concurrent-admission parent, admitted once one of its variants is ({', '.join(pending)})"
        return explain_workload(wl, blocker)

    def weighted_share(self, name: str) -> int | None:
        """``status.fairSharing.weightedShare`` of a ClusterQueue or Cohort (None if unknown)."""
        state = self.cqs.get(name)
        node = state.node if state is not None else self.tree.cohorts.get(name)
        if node is None or node.in_cycle:
            # A cohort cycle has no root to share against (Kueue leaves such queues out of its snapshot).
            return None
        return dominant_resource_share(node).rounded()

    def pending_counts(self, cq: str) -> tuple[int, int]:
        """(active, inadmissible) pending workloads of a ClusterQueue."""
        return self.qm.pending_counts(cq)
