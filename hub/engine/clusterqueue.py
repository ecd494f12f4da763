"""The engine's view of a ClusterQueue: its spec, quota node and workloads."""

from __future__ import annotations

from hub.api.queues import ClusterQueue, ResourceGroup

from .quota import FR, Quota, QuotaNode
from .workload_info import WorkloadInfo


def quotas_of(groups: tuple[ResourceGroup, ...]) -> dict[FR, Quota]:
    out: dict[FR, Quota] = {}
    for group in groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                out[(flavor.name, rq.name)] = Quota(rq.nominal_quota, rq.borrowing_limit, rq.lending_limit)
    return out


class ClusterQueueState:
    """Everything the scheduler needs about one ClusterQueue, kept current by the engine."""

    __slots__ = (
        "spec",
        "node",
        "group_of_resource",
        "flavors",
        "active",
        "inactive_reason",
        "inactive_message",
        "generation",
        "reserving",
        "admitted",
        "admitted_usage",
    )

    def __init__(self, spec: ClusterQueue, node: QuotaNode) -> None:
        self.spec = spec
        self.node = node
        self.group_of_resource: dict[str, int] = {}
        self.flavors: set[str] = set()
        self.active = True
        self.inactive_reason = ""
        self.inactive_message = ""
        # Kueue's AllocatableResourceGeneration: bumps when capacity may have changed,
        # which invalidates saved flavor-scan progress.
        self.generation = 0
        # Workloads holding quota here (reserved or admitted), by key.
        self.reserving: dict[str, WorkloadInfo] = {}
        # The admitted ones among them, by key, with the usage each was counted with, and its sum
        # (the status's flavorsUsage): kept as admissions come and go, never recounted.
        self.admitted: dict[str, dict[FR, int]] = {}
        self.admitted_usage: dict[FR, int] = {}
        self.set_spec(spec)

    @property
    def name(self) -> str:
        return self.spec.meta.name

    def set_spec(self, spec: ClusterQueue) -> None:
        self.spec = spec
        self.group_of_resource = {}
        self.flavors = set()
        for i, group in enumerate(spec.resource_groups):
            for res in group.covered_resources:
                self.group_of_resource[res] = i
            for flavor in group.flavors:
                self.flavors.add(flavor.name)
        self.generation += 1

    def add_reservation(self, info: WorkloadInfo) -> None:
        """Account a workload holding quota here (its usage into the quota tree)."""
        self.reserving[info.key] = info
        if info.wl.is_admitted:
            self.count_admitted(info)
        self.node.add_usage_map(info.usage)

    @property
    def admitted_count(self) -> int:
        return len(self.admitted)

    def count_admitted(self, info: WorkloadInfo) -> None:
        """A workload holding quota here is now admitted (counted once however often told)."""
        if info.key in self.admitted:
            return
        usage = dict(info.usage)
        self.admitted[info.key] = usage
        total = self.admitted_usage
        for fr, value in usage.items():
            total[fr] = total.get(fr, 0) + value

    def uncount_admitted(self, key: str) -> None:
        """It no longer holds quota here: take back exactly what :meth:`count_admitted` added."""
        usage = self.admitted.pop(key, None)
        if usage is None:
            return
        total = self.admitted_usage
        for fr, value in usage.items():
            left = total.get(fr, 0) - value
            if left:
                total[fr] = left
            else:
                total.pop(fr, None)

    def quota_for(self, fr: FR) -> Quota:
        return self.node.quotas.get(fr) or Quota()

    def covers(self, resource: str) -> bool:
        return resource in self.group_of_resource
