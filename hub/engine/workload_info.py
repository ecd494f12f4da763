"""The engine's per-workload record: requests, priority, queue order, usage."""

from __future__ import annotations

from dataclasses import dataclass

from hub.api.workload import (
    ALLOWED_FLAVORS_ANNOTATION,
    EVICTED,
    PREEMPTED,
    Workload,
)

from .quota import FR

# Eviction reasons that decide a workload's place in the queue after it is evicted.
EVICTED_BY_PODS_READY_TIMEOUT = "PodsReadyTimeout"
EVICTED_BY_ADMISSION_CHECK = "AdmissionCheck"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"


@dataclass(frozen=True, slots=True)
class PodSetRequests:
    """One pod set's requests: ``total`` is for all ``count`` pods."""

    name: str
    count: int
    per_pod: tuple[tuple[str, int], ...]
    total: tuple[tuple[str, int], ...]

    def scaled_to(self, count: int) -> PodSetRequests:
        return PodSetRequests(
            self.name, count, self.per_pod, tuple((r, v * count) for r, v in self.per_pod)
        )


def compute_requests(wl: Workload) -> tuple[PodSetRequests, ...]:
    """Kueue's ``workload.Info.TotalRequests``.

    For a workload holding quota, requests come from its admission (what was
    actually reserved); otherwise from the pod templates, per pod times
    ``count - reclaimablePods``.
    """
    out = []
    admission = wl.status.admission if wl.is_quota_reserved else None
    assigned = {psa.name: psa for psa in admission.pod_set_assignments} if admission else {}
    for ps in wl.pod_sets:
        psa = assigned.get(ps.name)
        if psa is not None:
            count = psa.count
            total = tuple(psa.resource_usage)
            per_pod = tuple((r, -(-v // count) if count else 0) for r, v in total)
            reclaimable = wl.status.reclaimable_pods.get(ps.name, 0)
            if reclaimable and count:
                remaining = max(0, count - reclaimable)
                total = tuple((r, v * remaining // count) for r, v in total)
                count = remaining
            out.append(PodSetRequests(ps.name, count, per_pod, total))
            continue
        per_pod = ps.spec.per_pod_requests
        count = max(0, ps.count - wl.status.reclaimable_pods.get(ps.name, 0))
        out.append(PodSetRequests(ps.name, count, per_pod, tuple((r, v * count) for r, v in per_pod)))
    return tuple(out)


def usage_from_admission(wl: Workload) -> dict[FR, int]:
    """The (flavor, resource) usage a reserved workload holds."""
    usage: dict[FR, int] = {}
    admission = wl.status.admission
    if admission is None:
        return usage
    requests = {r.name: r for r in compute_requests(wl)}
    for psa in admission.pod_set_assignments:
        req = requests.get(psa.name)
        totals = dict(req.total) if req is not None else dict(psa.resource_usage)
        for resource, flavor in psa.flavors:
            value = totals.get(resource, 0)
            if value:
                fr = (flavor, resource)
                usage[fr] = usage.get(fr, 0) + value
    return usage


class WorkloadInfo:
    """What the engine tracks for one workload while it is pending or holds quota."""

    __slots__ = (
        "wl",
        "key",
        "seq",
        "cluster_queue",
        "local_queue",
        "priority",
        "_requests",
        "usage",
        "last_assignment",
        "last_cycle",
        "last_generation",
        "reserved_at",
        "_shape",
    )

    def __init__(self, wl: Workload, seq: int) -> None:
        self.wl = wl
        self.key = wl.meta.key
        self.seq = seq
        self.cluster_queue: str | None = None
        self.local_queue: str | None = None
        self.priority = wl.priority or 0
        self._requests: tuple[PodSetRequests, ...] | None = None
        self.usage: dict[FR, int] = {}
        # Flavor scan progress: per pod set, resource -> last tried flavor index (-1 = scanned to the end).
        self.last_assignment: list[dict[str, int]] | None = None
        self.last_cycle = 0
        self.last_generation = 0
        self.reserved_at = 0.0
        self._shape: int | None = None

    @property
    def requests(self) -> tuple[PodSetRequests, ...]:
        if self._requests is None:
            self._requests = compute_requests(self.wl)
        return self._requests

    def invalidate_requests(self) -> None:
        self._requests = None
        self._shape = None

    @property
    def shape(self) -> int:
        """Kueue's scheduling equivalence hash: workloads with equal shapes get equal verdicts.

        Priority, and per pod set the name, counted pods, requests, minCount and the
        pod spec (node selectors, affinity, tolerations, resources).
        """
        if self._shape is None:
            # Requests are a function of the pod spec and the counted pods, so hashing
            # those avoids materialising requests for every pending workload.
            reclaimable = self.wl.status.reclaimable_pods
            self._shape = hash(
                (
                    self.priority,
                    tuple(
                        (ps.name, ps.count - reclaimable.get(ps.name, 0), ps.min_count, ps.spec)
                        for ps in self.wl.pod_sets
                    ),
                    self.wl.meta.annotations.get(ALLOWED_FLAVORS_ANNOTATION),  # a variant's flavor, as Kueue hashes it
                )
            )
        return self._shape

    def pending_flavors(self) -> bool:
        if self.last_assignment is None:
            return False
        return any(idx != -1 for ps in self.last_assignment for idx in ps.values())

    def next_flavor_index(self, pod_set_index: int, resource: str) -> int:
        if self.last_assignment is None or pod_set_index >= len(self.last_assignment):
            return 0
        idx = self.last_assignment[pod_set_index].get(resource)
        return 0 if idx is None else idx + 1

    def __repr__(self) -> str:
        return f"<WorkloadInfo {self.key}>"


def queue_order_timestamp(wl: Workload, eviction_timestamp: bool, priority_sorting_within_cohort: bool = True) -> float:
    """Kueue's ``GetQueueOrderTimestamp``: when the workload counts as queued."""
    evicted = wl.status.condition(EVICTED)
    if evicted is not None and evicted.is_true:
        if eviction_timestamp and evicted.reason == EVICTED_BY_PODS_READY_TIMEOUT:
            return evicted.last_transition_time
        if evicted.reason == EVICTED_BY_ADMISSION_CHECK:
            return evicted.last_transition_time
    if not priority_sorting_within_cohort:
        preempted = wl.status.condition(PREEMPTED)
        if preempted is not None and preempted.is_true and preempted.reason == IN_COHORT_RECLAIM_WHILE_BORROWING:
            return preempted.last_transition_time + 0.001
    return wl.meta.creation_timestamp or 0.0


def local_queue_key(wl: Workload) -> str:
    """``namespace/name`` of the LocalQueue a workload names."""
    return f"{wl.meta.namespace}/{wl.queue_name}"
