"""The hub's book of worker capacity and the capacity-aware dispatcher's per-reservation
state (nominee, workers tried, nomination deadline, refusals); the decisions themselves
are the pure functions of :mod:`hub.federation.capacity`.

Owned by the MultiKueue controller and used on its thread only.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from hub.api.others import MultiKueueConfig
from hub.api.queues import ClusterQueue
from hub.api.workload import Workload
from hub.engine.engine import Engine
from hub.engine.tas.fleet import FreeDomain, FreeLevel
from hub.engine.workload_info import compute_requests
from mkhub.v1 import federation_pb2 as pb

from .capacity import (
    CLUSTERS_KEY,
    FITS,
    NEVER,
    PREFERRED_KEY,
    UNKNOWN,
    Decision,
    Nominate,
    QueueCapacity,
    Refuse,
    Request,
    ResourceQuota,
    TopologyNeed,
    WorkerCapacity,
    decide,
    level_of,
    names_from,
    rank,
)


def parse_capacity(msg: pb.Capacity) -> dict[str, QueueCapacity]:
    queues: dict[str, QueueCapacity] = {}
    for q in msg.queues:
        quota: dict[tuple[str, str], ResourceQuota] = {}
        pending: dict[str, int] = {}
        for r in q.resources:
            if r.flavor:
                by_priority = tuple((p.priority, p.usage) for p in r.by_priority)
                quota[(r.flavor, r.resource)] = ResourceQuota(r.nominal, r.borrowable, r.usage, r.potential, by_priority)
            elif r.pending:
                pending[r.resource] = pending.get(r.resource, 0) + r.pending
        queues[q.cluster_queue] = QueueCapacity(
            q.cluster_queue, frozenset(q.local_queues), quota, pending, q.active, q.pending_workloads,
            q.admitted_workloads, q.within_cluster_queue,
        )
    return queues


def parse_topologies(msg: pb.Capacity) -> dict[str, tuple[FreeLevel, ...]]:
    return {t.flavor: tuple(
        FreeLevel(lv.level, tuple(FreeDomain(tuple(d.values), dict(d.free), dict(d.largest_node_free), d.nodes)
                                  for d in lv.domains), lv.domain_count) for lv in t.levels)
        for t in msg.topologies}


@dataclass
class Report:
    """One worker's latest capacity report as the hub holds it."""

    queues: dict[str, QueueCapacity]
    generation: int
    received_at: float
    previous_at: float | None = None
    # key -> (nominated at, requests): copies sent that a report may not show yet, and their sum
    in_flight: dict[str, tuple[float, dict[str, int]]] = field(default_factory=dict)
    in_flight_total: dict[str, int] = field(default_factory=dict)
    worker: WorkerCapacity | None = None  # cached view; it reads in_flight_total as it changes
    by_local_queue: dict[str, str] = field(default_factory=dict)
    topologies: dict[str, tuple[FreeLevel, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_local_queue = {lq: name for name, q in self.queues.items() for lq in q.local_queues}

    def add(self, key: str, at: float, requests: dict[str, int]) -> None:
        self.remove(key)
        self.in_flight[key] = (at, requests)
        total = self.in_flight_total
        for resource, value in requests.items():
            total[resource] = total.get(resource, 0) + value

    def remove(self, key: str) -> None:
        entry = self.in_flight.pop(key, None)
        if entry is None:
            return
        total = self.in_flight_total
        for resource, value in entry[1].items():
            total[resource] = total.get(resource, 0) - value


@dataclass
class Nomination:
    """The capacity-aware dispatcher's state for one reservation (dispatch id)."""

    key: str = ""
    tried: list[str] = field(default_factory=list)
    current: str | None = None
    deadline: float = 0.0


def _room(queue: QueueCapacity) -> dict[str, int]:
    """Per resource, what the ClusterQueue could still take: quota and borrowable beyond usage,
    less pending demand (a copy admitted there moves from pending to usage: no change)."""
    room: dict[str, int] = {}
    for (_flavor, resource), q in queue.quota.items():
        room[resource] = room.get(resource, 0) + q.nominal + q.borrowable - q.usage
    for resource, value in queue.pending.items():
        room[resource] = room.get(resource, 0) - value
    return room


def _more_room(old: Mapping[str, QueueCapacity], new: Mapping[str, QueueCapacity]) -> bool:
    """Whether any ClusterQueue of a worker could now take more than at its previous report (or
    is new, active again, or serves other LocalQueues): the test for re-ranking copies waiting
    elsewhere. Usage moving between priorities alone does not count."""
    for name, queue in new.items():
        before = old.get(name)
        if before is None or (queue.active and not before.active) or queue.local_queues != before.local_queues:
            return True
        was = _room(before)
        if any(v > was.get(r, v - 1) for r, v in _room(queue).items()):
            return True
    return False


def request_of(wl: Workload, job_meta: Sequence[Mapping[str, str]] = ()) -> Request:
    requests: dict[str, int] = {}
    needs: list[TopologyNeed] = []
    for spec, ps in zip(wl.pod_sets, compute_requests(wl)):
        for resource, value in ps.total:
            requests[resource] = requests.get(resource, 0) + value
        level = (spec.topology_request or {}).get("required")
        if isinstance(level, str) and level and ps.count > 0:
            needs.append(TopologyNeed(level, ps.count, dict(ps.per_pod)))
    maps = [wl.meta.annotations, wl.meta.labels, *job_meta]
    return Request(
        local_queue=f"{wl.meta.namespace}/{wl.queue_name}",
        requests=requests,
        only=names_from(maps, CLUSTERS_KEY),
        preferred=names_from(maps, PREFERRED_KEY),
        priority=wl.priority or 0,
        topology=tuple(needs),
    )


class CapacityBook:
    def __init__(self, nomination_timeout: float) -> None:
        self.nomination_timeout = nomination_timeout
        self.reports: dict[str, Report] = {}
        self.nominations: dict[str, Nomination] = {}  # dispatch id ->
        self.refused_since: dict[str, float] = {}  # workload key -> first refusal
        self.waiting: set[str] = set()  # workload keys no connected worker could take when last looked at
        self.rerank: set[str] = set()  # workload keys a capacity report asked to re-rank
        self.improved: dict[str, bool] = {}  # cluster -> its last report showed more room than the one before
        self._deadlines: list[tuple[float, str, str]] = []  # (deadline, key, dispatch id)

    # ------------------------------------------------------------------ reports

    def update(self, cluster: str, msg: pb.Capacity, now: float) -> bool:
        """Take a report; False when it is older than the one held."""
        old = self.reports.get(cluster)
        if old is not None and 0 < msg.generation <= old.generation:
            return False
        report = Report(parse_capacity(msg), msg.generation, now, topologies=parse_topologies(msg))
        self.improved[cluster] = old is None or _more_room(old.queues, report.queues)
        if old is not None:
            report.previous_at = old.received_at
            # A copy sent before the previous report arrived is in this one.
            for k, (at, requests) in old.in_flight.items():
                if at >= old.received_at:
                    report.add(k, at, requests)
        self.reports[cluster] = report
        return True

    def forget_generation(self, cluster: str) -> None:
        """A new agent process numbers its reports from 1 again."""
        report = self.reports.get(cluster)
        if report is not None:
            report.generation = 0

    def worker(self, cluster: str) -> WorkerCapacity:
        report = self.reports.get(cluster)
        if report is None:
            return WorkerCapacity(cluster)
        if report.worker is None:
            report.worker = WorkerCapacity(cluster, report.queues, report.in_flight_total, report.by_local_queue,
                                           report.topologies)
        return report.worker

    # ------------------------------------------------------------------ nominations

    def nominate(
        self,
        key: str,
        did: str,
        request: Request,
        clusters: Sequence[str],
        usable: Callable[[str], bool],
        now: float,
        previous: Sequence[str] = (),
    ) -> Decision | None:
        """None: keep the current nominee; else the decision for this reservation. ``previous``:
        the nominations recorded in the workload's status (a restarted hub keeps its nominee).

        Called on every capacity report and at the nominee's deadline. The copy moves only to
        a worker ranked strictly better than its nominee (judged without the copy's own demand);
        at the deadline also to an untried worker ranked as well. Otherwise it stays where it
        is, keeping its place in that worker's queue."""
        nom = self.nominations.get(did)
        if nom is None:
            nom = self.nominations[did] = Nomination(key)
            if len(previous) == 1:
                nom.current, nom.tried = previous[0], [previous[0]]
                nom.deadline = now + self.nomination_timeout
                heapq.heappush(self._deadlines, (nom.deadline, key, did))
        current = nom.current if nom.current is not None and usable(nom.current) else None
        if current is not None and now < nom.deadline and key not in self.rerank:
            return None  # no report since that could rank another worker better
        self.rerank.discard(key)
        if current is not None and now < nom.deadline and level_of(self._view(current, key, request), request)[0] == FITS:
            return None  # nobody ranks better than a nominee where it fits
        workers = [self._view(name, key, request) if name == current else self.worker(name) for name in clusters]
        decision = decide(request, clusters, workers, [n for n in clusters if usable(n)], nom.tried)
        if current is not None and not isinstance(decision, Refuse):
            moved = self._better(request, clusters, workers, current, usable, nom.tried, now >= nom.deadline)
            if moved is None:
                if now >= nom.deadline:  # nobody better: stay, and look again at the next deadline
                    nom.deadline = now + self.nomination_timeout
                    heapq.heappush(self._deadlines, (nom.deadline, key, did))
                return None
            decision = moved
        if isinstance(decision, Nominate):
            self.waiting.discard(key)
            self.refused_since.pop(key, None)
            name = decision.cluster
            if nom.current is not None and nom.current != name and nom.current in self.reports:
                self.reports[nom.current].remove(key)
            if name in nom.tried:
                nom.tried.remove(name)
            nom.tried.append(name)
            nom.current = name
            nom.deadline = now + self.nomination_timeout
            heapq.heappush(self._deadlines, (nom.deadline, key, did))
            report = self.reports.get(name)
            if report is not None:
                report.add(key, now, dict(request.requests))
        else:
            nom.current = None
            self.waiting.add(key)
        return decision

    @staticmethod
    def _better(
        request: Request,
        clusters: Sequence[str],
        workers: Sequence[WorkerCapacity],
        current: str,
        usable: Callable[[str], bool],
        tried: Sequence[str],
        due: bool,
    ) -> Nominate | None:
        """The worker to move the copy to, if any: ranked strictly better than ``current``, or
        (``due``: its time ran out) untried and ranked the same, when the nominee was expected to
        admit it without preempting (the estimate was wrong there; one where it must preempt
        or wait is no better, and moving would lose its place or preempt on a second worker)."""
        ranked = rank(workers, clusters, request)
        level = next((lv for _, w, lv, _ in ranked if w.name == current), NEVER)
        equal: list[str] = []
        for _, w, lv, _ in ranked:
            if w.name == current or lv == NEVER or not usable(w.name):
                continue
            if lv < level:
                return Nominate(w.name, lv)
            if lv == level:
                equal.append(w.name)
        if not (due and level <= UNKNOWN and equal):
            return None
        # Untried first (best ranked), else the one tried longest ago.
        age = {name: i for i, name in enumerate(tried)}
        return Nominate(min(equal, key=lambda name: (name in age, age.get(name, 0))), level)

    def _view(self, name: str, key: str, request: Request) -> WorkerCapacity:
        """The nominee as it would be without this workload's copy (in flight, or pending in
        its report): the copy must not count against its own place."""
        worker = self.worker(name)
        report = self.reports.get(name)
        if report is None or worker.queues is None:
            return worker
        entry = report.in_flight.get(key)
        if entry is not None:
            in_flight = dict(report.in_flight_total)
            for resource, value in entry[1].items():
                in_flight[resource] = in_flight.get(resource, 0) - value
            return replace(worker, in_flight=in_flight)
        queue = worker.queue_for(request.local_queue)
        if queue is None:
            return worker
        pending = {r: max(0, v - request.requests.get(r, 0)) for r, v in queue.pending.items()}
        return replace(worker, queues={**worker.queues, queue.name: replace(queue, pending=pending)})

    def rerank_keys(self, cluster: str) -> list[str]:
        """After a report from ``cluster``: the workloads whose copy waits at a nominee and could
        now rank another worker better: those waiting there (it may have filled up), and, when
        the report shows more room than the last one, every waiting copy (it may fit there)."""
        everyone = self.improved.get(cluster, True)
        keys = [nom.key for nom in self.nominations.values() if nom.current is not None and (everyone or nom.current == cluster)]
        self.rerank.update(keys)
        return keys

    def expire(self, did: str) -> None:
        """The nominee gave its copy back (refused, evicted): nominate the next one now."""
        nom = self.nominations.get(did)
        if nom is not None:
            nom.deadline = 0.0

    def current(self, did: str) -> str | None:
        nom = self.nominations.get(did)
        return nom.current if nom is not None else None

    def done(self, key: str, did: str) -> None:
        """The reservation was decided (won, or gone)."""
        self.nominations.pop(did, None)
        self.waiting.discard(key)
        self.rerank.discard(key)
        for report in self.reports.values():
            report.remove(key)

    def due(self, now: float) -> list[str]:
        """Workload keys whose nominee's time ran out."""
        out: list[str] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, key, did = heapq.heappop(heap)
            nom = self.nominations.get(did)
            if nom is not None and nom.current is not None:
                out.append(key)
        return out

    def next_deadline(self) -> float | None:
        heap = self._deadlines
        while heap and heap[0][2] not in self.nominations:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def quota_sum(self, cluster_queue: str, clusters: Sequence[str]) -> dict[tuple[str, str], int] | None:
        """Quota automation: per (flavor, resource) the nominal quotas of the workers' ClusterQueues
        named ``cluster_queue``, summed (None until one of them reported)."""
        out: dict[tuple[str, str], int] = {}
        seen = False
        for name in clusters:
            report = self.reports.get(name)
            queue = report.queues.get(cluster_queue) if report is not None else None
            if queue is None:
                continue
            seen = True
            for fr, q in queue.quota.items():
                out[fr] = out.get(fr, 0) + q.nominal
        return out if seen else None


def automated_quotas(engine: Engine, book: CapacityBook) -> list[ClusterQueue]:
    """Quota automation (``MultiKueueConfig.spec.quotaManagement: Automated``): the manager
    ClusterQueues using such a config with their nominal quotas replaced, per (flavor, resource)
    of their resource groups, by the sum of the nominal quotas of the workers' ClusterQueues of
    the same name (the last report of each worker; any number of flavors). Only those that change."""
    out: list[ClusterQueue] = []
    configs: dict[str, MultiKueueConfig] = {}
    for name, check in engine.admission_checks.items():
        if check.is_multikueue and check.parameters_kind == "MultiKueueConfig":
            config = engine.mk_configs.get(check.parameters_name)
            if config is not None and config.quota_management == "Automated":
                configs[name] = config
    if not configs:
        return out
    for name, state in engine.cqs.items():
        spec = state.spec
        config = next((configs[c.name] for c in spec.admission_checks if c.name in configs), None)
        if config is None:
            continue
        total = book.quota_sum(name, config.clusters)
        if total is None:
            continue
        groups = tuple(
            replace(
                group,
                flavors=tuple(
                    replace(
                        flavor,
                        resources=tuple(
                            replace(rq, nominal_quota=total.get((flavor.name, rq.name), 0)) for rq in flavor.resources
                        ),
                    )
                    for flavor in group.flavors
                ),
            )
            for group in spec.resource_groups
        )
        if groups != spec.resource_groups:
            out.append(replace(spec, resource_groups=groups))
    return out


class QuotaAutomation:
    """When to recompute the automated quotas: after a changed capacity report (``stale``) and
    as soon as a config, check or manager ClusterQueue it reads is applied, not only at the
    next report (a user re-applying a queue's own quota gets the automated one back)."""

    def __init__(self) -> None:
        self.stale = False
        self._check_inputs = -1
        # The manager ClusterQueues' specs last looked at, held (not their ids, which a new
        # object may reuse): a re-applied queue is a new object.
        self._specs: list[ClusterQueue] = []

    def _unchanged(self, engine: Engine) -> bool:
        specs = self._specs
        return engine.cache.check_inputs == self._check_inputs and len(specs) == len(engine.cqs) and all(
            state.spec is old for state, old in zip(engine.cqs.values(), specs, strict=True)
        )

    def run(self, engine: Engine, book: CapacityBook, now: float) -> list[str]:
        """Apply the automated quotas that changed; the names of their ClusterQueues."""
        if not self.stale and self._unchanged(engine):
            return []
        self.stale = False
        names: list[str] = []
        for spec in automated_quotas(engine, book):
            engine.apply(spec, now)
            names.append(spec.meta.name)
        self._check_inputs = engine.cache.check_inputs
        self._specs = [state.spec for state in engine.cqs.values()]
        return names
