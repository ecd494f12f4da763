"""The capacity-aware dispatcher (``mkhub.dev/capacity-aware``): pure decisions over the
workers' capacity reports.

Kueue's dispatchers are blind: AllAtOnce copies a workload to every worker and lets
them race (a big workload then preempts on several clusters and runs on one);
Incremental guesses a few clusters per round. Agents report their ClusterQueues'
quota (the ``Capacity`` item of the protocol), so the hub can nominate **one**
worker at a time, the one most likely to admit the workload now.

**The score** of a worker for a workload, lowest first (:func:`rank`):

1. *Preference*: a worker named in the workload's ``mkhub.dev/clusters``
   (annotation or label, comma separated: only these workers, in this order — one
   name pins the workload) or ``mkhub.dev/preferred-clusters`` (these first, in
   this order, then the others) ranks by its position there.
2. *Fit*, from the worker's ClusterQueue that the workload's LocalQueue maps to
   (same namespace/name on the worker, as MultiKueue requires):
   ``FITS`` (free nominal quota holds it, no preemption, no borrowing) before
   ``BORROWS`` (it fits by borrowing in the worker's cohort) before ``UNKNOWN``
   (an agent that reports no capacity, dispatched to as before) before
   ``PREEMPTS`` (it fits once workloads of lower priority are preempted, by the
   worker ClusterQueue's ``withinClusterQueue`` policy) before ``BLOCKED`` (its
   quota could hold it, but only once others finish). ``NEVER``
   (its total quota could never hold it, or it has no such LocalQueue) is never
   nominated. Free quota counts the worker's pending demand and the copies the
   hub sent since the report as taken.
   A pod set that requires a topology level (TAS) needs a domain of that level with room
   for it in the worker's report of its largest free domains; none has: ``BLOCKED`` (a
   worker without a topology-aware flavor: ``NEVER``).
3. The order of ``MultiKueueConfig.spec.clusters``.
4. Least loaded: the lowest share of its nominal quota in use (with pending demand).
5. The name.

Per resource the best flavor of the ClusterQueue counts (an estimate: the worker's
own scheduler assigns flavors per resource group; a wrong guess costs one
nomination timeout, never correctness).

**The decision** (:func:`decide`): the best-ranked worker that has not been tried for
this reservation yet. When none is left the tried ones are tried again, in order. A
copy waiting at a nominee is re-ranked on every capacity report and moves only to a
better-ranked worker (see ``CapacityBook.nominate``).
Only one worker holds a copy at a time, so at most one worker ever preempts for
a workload. When every worker of the config reported capacity and none could
ever hold the workload, :class:`Refuse` names each worker and its shortfall; it is
``certain`` when every shortfall is against quota totals (the hub then gives up at once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hub.api.quantity import format_quantity
from hub.engine.tas.fleet import FreeLevel, may_fit

CAPACITY_AWARE = "mkhub.dev/capacity-aware"
# Pinning / ordering, as an annotation or a label of the Workload (or its Job).
CLUSTERS_KEY = "mkhub.dev/clusters"
PREFERRED_KEY = "mkhub.dev/preferred-clusters"
CAPACITY_VERSION = 1

FITS, BORROWS, UNKNOWN, PREEMPTS, BLOCKED, NEVER = 0, 1, 2, 3, 4, 5
LEVEL_NAMES = {
    FITS: "fits", BORROWS: "borrows", UNKNOWN: "unknown", PREEMPTS: "preempts", BLOCKED: "blocked", NEVER: "never"
}
LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL = "LowerPriority", "LowerOrNewerEqualPriority"


@dataclass(frozen=True, slots=True)
class ResourceQuota:
    """One (flavor, resource) of a worker's ClusterQueue, integer units."""

    nominal: int = 0
    borrowable: int = 0
    usage: int = 0
    potential: int = 0
    by_priority: tuple[tuple[int, int], ...] = ()  # (priority, usage) of the workloads holding ``usage``


@dataclass(frozen=True, slots=True)
class QueueCapacity:
    name: str
    local_queues: frozenset[str] = frozenset()
    quota: Mapping[tuple[str, str], ResourceQuota] = field(default_factory=dict)  # (flavor, resource)
    pending: Mapping[str, int] = field(default_factory=dict)  # resource -> pending demand
    active: bool = True
    pending_workloads: int = 0
    admitted_workloads: int = 0
    within_cluster_queue: str = ""  # its preemption policy; "" when the agent does not say
    # resource -> its (flavor, resource) quotas, in ``quota``'s order: what a decision reads
    by_resource: Mapping[str, tuple[ResourceQuota, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        grouped: dict[str, list[ResourceQuota]] = {}
        for (_flavor, resource), q in self.quota.items():
            grouped.setdefault(resource, []).append(q)
        object.__setattr__(self, "by_resource", {r: tuple(qs) for r, qs in grouped.items()})


@dataclass(frozen=True, slots=True)
class WorkerCapacity:
    """What one worker reported (``queues`` None: its agent sends no capacity)."""

    name: str
    queues: Mapping[str, QueueCapacity] | None = None
    # Requests of copies the hub sent since this report (not in it yet), per resource.
    in_flight: Mapping[str, int] = field(default_factory=dict)
    # LocalQueue -> ClusterQueue name (optional index; built from ``queues`` when absent)
    by_local_queue: Mapping[str, str] | None = None
    # TAS flavor -> its levels' largest free domains (hub.engine.tas.fleet); empty: no TAS flavor
    topologies: Mapping[str, tuple[FreeLevel, ...]] = field(default_factory=dict)

    def queue_for(self, local_queue: str) -> QueueCapacity | None:
        if self.queues is None:
            return None
        if self.by_local_queue is not None:
            name = self.by_local_queue.get(local_queue)
            return self.queues.get(name) if name is not None else None
        for queue in self.queues.values():
            if local_queue in queue.local_queues:
                return queue
        return None


@dataclass(frozen=True, slots=True)
class TopologyNeed:
    """A pod set that must land in one domain of ``level`` (podset-required-topology)."""

    level: str
    count: int
    per_pod: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class Request:
    """What the dispatcher knows of a workload."""

    local_queue: str  # namespace/name
    requests: Mapping[str, int]  # resource -> total, all pod sets
    only: tuple[str, ...] = ()  # mkhub.dev/clusters
    preferred: tuple[str, ...] = ()  # mkhub.dev/preferred-clusters
    priority: int = 0
    topology: tuple[TopologyNeed, ...] = ()


@dataclass(frozen=True, slots=True)
class Nominate:
    cluster: str
    level: int


@dataclass(frozen=True, slots=True)
class Refuse:
    message: str
    # Every worker's shortfall is against its quota totals (not a missing LocalQueue or an
    # inactive ClusterQueue, which an operator may yet fix): retrying cannot change the verdict.
    certain: bool = False


@dataclass(frozen=True, slots=True)
class Wait:
    """No usable worker now (none connected, or all excluded): keep the check Pending."""

    message: str


Decision = Nominate | Refuse | Wait


def names_from(meta_maps: Sequence[Mapping[str, str]], key: str) -> tuple[str, ...]:
    """A comma-separated list of cluster names from the first map that has ``key``."""
    for values in meta_maps:
        raw = values.get(key)
        if raw is not None:
            return tuple(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    return ()


def _preemptible(q: ResourceQuota, policy: str, priority: int) -> int | None:
    """Usage a workload of ``priority`` could preempt within the ClusterQueue (None: unknown).
    Equal priority counts as not preemptible under LowerOrNewerEqualPriority: the copy is the
    newest workload there, so every equal one is older."""
    if not policy:
        return None
    if policy not in (LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL):
        return 0
    return sum(u for p, u in q.by_priority if p < priority)


def _fit(
    quotas: Sequence[ResourceQuota], need: int, taken: int, policy: str = "", priority: int = 0
) -> tuple[int, int, float]:
    """(level, shortfall, load) of ``need`` of one resource in the queue's best flavor for it;
    load: the highest share of a flavor's nominal quota in use or ``taken``. PREEMPTS only where
    free quota plus what lower-priority workloads hold would make room (BLOCKED otherwise: it
    must wait for others to finish); an agent that reports no policy is assumed able to."""
    best, shortfall, load = NEVER, need, 0.0
    for q in quotas:
        if q.nominal > 0:
            load = max(load, (q.usage + taken) / q.nominal)
        if best == FITS:
            continue
        free = q.nominal - q.usage - taken
        if need <= free:
            best = FITS
        elif need <= free + q.borrowable:
            best = min(best, BORROWS)
        elif need <= q.potential:
            preemptible = _preemptible(q, policy, priority)
            room = None if preemptible is None else free + q.borrowable + preemptible
            best = min(best, PREEMPTS if room is None or need <= room else BLOCKED)
        else:
            shortfall = min(shortfall, need - q.potential)
    return best, (0 if best != NEVER else shortfall), load


def level_of(worker: WorkerCapacity, request: Request) -> tuple[int, str]:
    """How well ``worker`` could hold the workload, and for NEVER why not."""
    level, why, _ = assess(worker, request)
    return level, why


def assess(worker: WorkerCapacity, request: Request) -> tuple[int, str, float]:
    """(level, why not for NEVER, load): load is the share of the nominal quota of the
    ClusterQueue the workload would go to that is in use, pending or in flight (highest over
    the requested resources and their flavors; 0 when unknown)."""
    if worker.queues is None:
        return UNKNOWN, "", 0.0
    queue = worker.queue_for(request.local_queue)
    if queue is None:
        return NEVER, f"no LocalQueue {request.local_queue}", 0.0
    if not queue.active:
        return NEVER, f"ClusterQueue {queue.name} is inactive", 0.0
    level = FITS
    short: list[str] = []
    load = 0.0
    requests = request.requests
    for resource in sorted(requests) if len(requests) > 1 else requests:
        need = requests[resource]
        if need <= 0:
            continue
        taken = queue.pending.get(resource, 0) + worker.in_flight.get(resource, 0)
        quotas = queue.by_resource.get(resource, ())
        got, shortfall, resource_load = _fit(quotas, need, taken, queue.within_cluster_queue, request.priority)
        level = max(level, got)
        load = max(load, resource_load)
        if got == NEVER:
            short.append(f"{resource} short by {format_quantity(resource, shortfall)}")
    if short:
        return NEVER, ", ".join(short), load
    if request.topology and not worker.topologies:
        return NEVER, "no topology-aware flavor", load
    if request.topology and not all(any(may_fit(levels, need.level, need.count, need.per_pod)
                                        for levels in worker.topologies.values()) for need in request.topology):
        level = max(level, BLOCKED)  # quota would do, but no domain has room for the gang now
    return level, "", load


def _short_of_quota(worker: WorkerCapacity, request: Request) -> bool:
    """The worker is NEVER because its ClusterQueue's quota totals are too small (not because it
    lacks the LocalQueue or its ClusterQueue is inactive)."""
    queue = worker.queue_for(request.local_queue)
    return queue is not None and queue.active


def rank(
    workers: Sequence[WorkerCapacity], clusters: Sequence[str], request: Request
) -> list[tuple[tuple[int, int, int, float, str], WorkerCapacity, int, str]]:
    """Every candidate worker with its score (see the module docstring), best first,
    NEVER included (last)."""
    order = {name: i for i, name in enumerate(clusters)}
    pref = request.only or request.preferred
    pref_pos = {name: i for i, name in enumerate(pref)}
    out = []
    for worker in workers:
        if request.only and worker.name not in pref_pos:
            continue
        level, why, load = assess(worker, request)
        key = (
            level == NEVER,
            pref_pos.get(worker.name, len(pref_pos)),
            level,
            order.get(worker.name, len(order)),
            load,
            worker.name,
        )
        out.append((key, worker, level, why))
    out.sort(key=lambda t: t[0])
    return [((k[1], k[2], k[3], k[4], k[5]), w, lv, why) for k, w, lv, why in out]


def decide(
    request: Request,
    clusters: Sequence[str],
    reported: Sequence[WorkerCapacity],
    usable: Sequence[str],
    tried: Sequence[str] = (),
) -> Decision:
    """The next nominee for a reservation.

    ``reported``: every worker of the config that ever reported (or whose capacity is
    unknown: ``queues`` None); ``usable``: those connected now; ``tried``: workers
    already nominated for this reservation, in order.
    """
    usable_set = set(usable)
    ranked = rank(reported, clusters, request)
    known_all = all(w.queues is not None for w in reported) and {w.name for w in reported} >= set(clusters)
    if ranked and all(level == NEVER for _, _, level, _ in ranked) and known_all:
        parts = [f"{w.name}: {why}" for _, w, _, why in sorted(ranked, key=lambda t: t[1].name)]
        certain = all(_short_of_quota(w, request) for _, w, _, _ in ranked)
        return Refuse("No worker cluster can ever hold the workload: " + "; ".join(parts), certain)
    if request.only and not ranked:
        return Refuse(f"No worker cluster of the MultiKueueConfig is named in {CLUSTERS_KEY}: {', '.join(request.only)}")
    candidates = [(w.name, level) for _, w, level, _ in ranked if level != NEVER and w.name in usable_set]
    if not candidates:
        return Wait("No connected worker cluster can hold the workload now")
    tried_set = set(tried)
    for name, level in candidates:
        if name not in tried_set:
            return Nominate(name, level)
    # Everyone was tried: start over with the one tried longest ago.
    by_age = {name: i for i, name in enumerate(tried)}
    name, level = min(candidates, key=lambda c: by_age.get(c[0], -1))
    return Nominate(name, level)


def total_quota(reports: Sequence[Mapping[tuple[str, str], int]]) -> dict[tuple[str, str], int]:
    """Quota automation: the sum per (flavor, resource) of the workers' nominal quotas."""
    out: dict[tuple[str, str], int] = {}
    for quota in reports:
        for fr, value in quota.items():
            out[fr] = out.get(fr, 0) + value
    return out
