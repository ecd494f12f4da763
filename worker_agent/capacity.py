"""The agent's capacity reports (protocol ``Capacity``, capacity version 1).

A snapshot of every ClusterQueue of the worker: per (flavor, resource) its nominal
quota, what it could borrow in its cohort now, its usage and the most it could
ever get; per resource the demand of its pending workloads; and the LocalQueues
that point at it; the usage per priority and the ClusterQueue's withinClusterQueue
preemption policy. :class:`CapacityReporter` sends one when it differs from the
last one sent, at most once per ``interval`` seconds.
"""

from __future__ import annotations

from hub.engine.engine import Engine
from hub.engine.tas.fleet import free_topologies
from mkhub.v1 import federation_pb2 as pb

CAPACITY_VERSION = 1
DEFAULT_INTERVAL = 0.25  # seconds between two reports at most 4 a second


def topology_capacities(engine: Engine) -> list[pb.TopologyCapacity]:
    """The TAS flavors' largest free domains per level (hub.engine.tas.fleet)."""
    return [
        pb.TopologyCapacity(flavor=t.flavor, topology=t.topology, levels=[
            pb.LevelCapacity(level=lv.level, domain_count=lv.domain_count, domains=[
                pb.DomainCapacity(values=list(d.values), free=dict(d.free), largest_node_free=dict(d.largest_node),
                                  nodes=d.nodes) for d in lv.domains]) for lv in t.levels])
        for t in free_topologies(engine.tas)
    ]


def queue_capacities(engine: Engine) -> list[pb.QueueCapacity]:
    """Every ClusterQueue of the engine, sorted by name."""
    lqs: dict[str, list[str]] = {}
    for key, lq in engine.local_queues.items():
        lqs.setdefault(lq.cluster_queue, []).append(key)
    out: list[pb.QueueCapacity] = []
    for name in sorted(engine.cqs):
        state = engine.cqs[name]
        node = state.node
        # Usage per (flavor, resource) and priority: whether a newcomer could preempt its way in.
        by_priority: dict[tuple[str, str], dict[int, int]] = {}
        for info in state.reserving.values():
            for fr, value in info.usage.items():
                per = by_priority.setdefault(fr, {})
                per[info.priority] = per.get(info.priority, 0) + value
        resources: list[pb.ResourceCapacity] = []
        for fr in sorted(node.quotas):
            flavor, resource = fr
            nominal = node.nominal(fr)
            usage = node.usage.get(fr, 0)
            free = max(0, nominal - usage)
            available = node.available(fr)
            resources.append(
                pb.ResourceCapacity(
                    flavor=flavor,
                    resource=resource,
                    nominal=nominal,
                    borrowable=max(0, available - free),
                    usage=usage,
                    potential=node.potential_available(fr),
                    by_priority=[
                        pb.PriorityUsage(priority=p, usage=u) for p, u in sorted(by_priority.get(fr, {}).items()) if u
                    ],
                )
            )
        pending: dict[str, int] = {}
        count = 0
        queue = engine.queues.get(name)
        if queue is not None:
            infos = list(queue.peek_active()) + list(queue.inadmissible.values())
            count = len(infos)
            for info in infos:
                for ps in info.requests:
                    for resource, value in ps.total:
                        pending[resource] = pending.get(resource, 0) + value
        for resource in sorted(pending):
            resources.append(pb.ResourceCapacity(resource=resource, pending=pending[resource]))
        out.append(
            pb.QueueCapacity(
                cluster_queue=name,
                cohort=state.spec.cohort_name,
                local_queues=sorted(lqs.get(name, [])),
                resources=resources,
                active=state.active,
                pending_workloads=count,
                admitted_workloads=len(state.reserving),
                within_cluster_queue=state.spec.preemption.within_cluster_queue,
            )
        )
    return out


class CapacityReporter:
    """Decides when the agent sends a Capacity item (controller thread only, except
    :attr:`last`, which the transport thread reads for the Hello)."""

    def __init__(self, engine: Engine, interval: float = DEFAULT_INTERVAL) -> None:
        self.engine = engine
        self.interval = interval
        self.dirty = True
        self.generation = 0
        self.sent_at: float | None = None
        self.last: pb.Capacity | None = None  # replaced, never mutated
        self._last_queues: list[pb.QueueCapacity] = []
        self._last_topologies: list[pb.TopologyCapacity] = []

    def due(self) -> float | None:
        """When a report could next go out (None: nothing changed)."""
        if not self.dirty:
            return None
        return 0.0 if self.sent_at is None else self.sent_at + self.interval

    def report(self, now: float) -> pb.Capacity | None:
        """A new snapshot when something changed and the interval passed, else None."""
        if not self.dirty or (self.sent_at is not None and now - self.sent_at < self.interval):
            return None
        self.dirty = False
        queues = queue_capacities(self.engine)
        topologies = topology_capacities(self.engine)
        if queues == self._last_queues and topologies == self._last_topologies and self.last is not None:
            return None
        self._last_queues, self._last_topologies = queues, topologies
        self.generation += 1
        self.sent_at = now
        self.last = pb.Capacity(
            capacity_version=CAPACITY_VERSION, generation=self.generation, time=int(now * 1000), queues=queues,
            topologies=topologies,
        )
        return self.last
