"""The fleet view: what a MultiKueueCluster's ``status.fleet`` says about its worker.

Our own status field beside Kueue's ``Active`` condition (``kubectl get
multikueueclusters -o yaml`` shows it; ``mkhub top`` and ``mkhub describe
multikueuecluster`` render it)::

    fleet:
      connected: true
      since: "2026-01-01T00:00:00Z"        # connected since / disconnected since (absent: never connected)
      lastHeartbeat: "2026-01-01T00:05:00Z" # last heard from the agent (to 10 s, never before a connection's since);
                                           # kept while disconnected and across hub restarts
      capacityVersion: 1                   # 0: the agent reports no capacity
      workloads: {pending: 3, admitted: 12, running: 10}
      quota:                               # per ClusterQueue, flavor and resource, from its last report
      - {clusterQueue: cq, flavor: default, resource: cpu, nominal: "16", usage: "12"}
      topology:                            # per TAS flavor and level: the most one domain has free now
      - {flavor: tas, level: cloud.provider.com/topology-rack, domains: 4, largestFree: {cpu: "16"}}

``pending`` and ``admitted`` count the workloads the worker's queues hold (its own
included: the worker's report); ``running`` the hub workloads whose copy won there.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

from hub.api.meta import format_time, parse_time
from hub.api.others import MultiKueueCluster
from hub.api.quantity import format_quantity

from .capacity_dispatch import Report
from .mkrecords import Worker
from .mkstatus import apply_verdict, cluster_verdict

HEARTBEAT_GRAIN = 10.0  # seconds: lastHeartbeat moves in steps, so status is not rewritten every beat


def fleet_status(
    connected: bool, since: float | None, last_heartbeat: str | None, report: Report | None, running: int
) -> dict[str, Any]:
    out: dict[str, Any] = {"connected": connected}
    if since is not None:
        out["since"] = format_time(math.floor(since))  # truncated to the second, as metav1.Time is
    if last_heartbeat is not None:
        out["lastHeartbeat"] = last_heartbeat
    pending = admitted = 0
    quota: list[dict[str, str]] = []
    if report is not None:
        for name in sorted(report.queues):
            queue = report.queues[name]
            pending += queue.pending_workloads
            admitted += queue.admitted_workloads
            for (flavor, resource), q in sorted(queue.quota.items()):
                quota.append({
                    "clusterQueue": name,
                    "flavor": flavor,
                    "resource": resource,
                    "nominal": format_quantity(resource, q.nominal),
                    "usage": format_quantity(resource, q.usage),
                })
    out["capacityVersion"] = 1 if report is not None else 0
    out["workloads"] = {"pending": pending, "admitted": admitted, "running": running}
    out["quota"] = quota
    topology = []
    for flavor, levels in sorted((report.topologies if report is not None else {}).items()):
        for level in levels:
            most: dict[str, int] = {}
            for d in level.domains:
                for r, v in d.free.items():
                    most[r] = max(most.get(r, 0), v)
            topology.append({"flavor": flavor, "level": level.level, "domains": level.domain_count,
                             "largestFree": {r: format_quantity(r, v) for r, v in sorted(most.items())}})
    if topology:
        out["topology"] = topology
    return out


def refresh_cluster_status(
    cluster: MultiKueueCluster,
    worker: Worker | None,
    silence: Callable[[str], float | None] | None,
    report: Report | None,
    won: int,
    now: float,
) -> bool:
    """Bring a MultiKueueCluster's Active condition and ``status.fleet`` up to date; True if either changed."""
    connected = worker is not None and worker.connected
    changed = apply_verdict(cluster.conditions, cluster_verdict(connected, worker is not None and worker.ever_connected), now)
    since = worker.since if worker is not None else None
    fleet = fleet_status(connected, since, _last_heartbeat(cluster, silence, connected, since, now), report, won)
    if fleet != cluster.fleet:
        cluster.fleet = fleet
        changed = True
    return changed


def _last_heartbeat(
    cluster: MultiKueueCluster, silence: Callable[[str], float | None] | None, connected: bool, since: float | None, now: float
) -> str | None:
    """When the agent was last heard from. The transport remembers it after a disconnection too;
    what it never heard in this process (a restarted hub) is the stored value, kept as it was.
    It never moves back: flooring to the grain must not undo the clamp below once disconnected."""
    kept = (cluster.fleet or {}).get("lastHeartbeat")
    kept = kept if isinstance(kept, str) and kept else None
    silent = silence(cluster.meta.name) if silence is not None else None
    if silent is None:
        return kept
    heard = HEARTBEAT_GRAIN * ((now - silent) // HEARTBEAT_GRAIN)
    if connected and since is not None:
        # The Hello was heard when the connection began (the hub records it a little later):
        # flooring must not date the last heartbeat before the connection.
        heard = max(heard, math.floor(since))
    if kept is not None:
        with contextlib.suppress(ValueError):  # not a time: replaced
            stored = parse_time(kept)
            if stored <= now:  # one written by a replica whose clock ran ahead is not kept
                heard = max(heard, stored)
    return format_time(heard)
