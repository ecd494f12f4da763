"""What the dashboard reads from the engine: on the reconciler thread, through ``HubRuntime.call``.

The numbers are those ``mkhub top`` and ``mkhub describe`` show (:mod:`hub.service.views`
and :mod:`hub.obs.visibility`), turned into JSON; only the cohort tree is read here.
"""

from __future__ import annotations

import json
from typing import Any

from hub.api.quantity import format_quantity
from hub.controllers.hub import HubReconciler
from hub.engine.quota import QuotaNode
from hub.obs import visibility
from hub.service import views
from mkhub.v1 import control_pb2 as pb


def cluster_queue(row: pb.ClusterQueueRow) -> dict[str, Any]:
    return {
        "name": row.name, "cohort": row.cohort, "active": row.active, "inactiveReason": row.inactive_reason,
        "pending": row.pending + row.inadmissible, "inadmissible": row.inadmissible, "reserving": row.reserving,
        "admitted": row.admitted,
        "resources": [{
            "flavor": r.flavor, "resource": r.resource, "usage": r.usage, "nominal": r.nominal,
            "borrowingLimit": r.borrowing_limit, "usageValue": r.usage_value, "nominalValue": r.nominal_value,
            # Usage past the queue's own quota is borrowed from its cohort.
            "borrowedValue": max(0, r.usage_value - r.nominal_value),
        } for r in row.resources],
    }


def worker(row: pb.WorkerRow) -> dict[str, Any]:
    return {
        "name": row.name, "active": row.active, "connected": row.connected, "since": row.since,
        "lastHeardSeconds": None if row.last_heard_seconds_ago < 0 else round(row.last_heard_seconds_ago, 1),
        "pending": row.pending, "admitted": row.admitted, "running": row.running,
        "capacityReports": row.capacity_version > 0,
        "quota": [{"clusterQueue": q.cluster_queue, "flavor": q.flavor, "resource": q.resource, "nominal": q.nominal,
                   "usage": q.usage} for q in row.quota],
    }


def _node(node: QuotaNode) -> dict[str, Any]:
    """A cohort and what hangs below it, with its lending and borrowing per flavor and resource."""
    resources = []
    for fr in sorted(set(node.quotas) | set(node.usage) | set(node.subtree)):
        flavor, resource = fr
        quota = node.quotas.get(fr)
        subtree, usage = node.subtree.get(fr, 0), node.usage.get(fr, 0)
        resources.append({
            "flavor": flavor, "resource": resource, "usage": format_quantity(resource, usage),
            "quota": format_quantity(resource, subtree), "usageValue": usage, "quotaValue": subtree,
            "borrowing": format_quantity(resource, max(0, usage - subtree)),
            "lendingLimit": None if quota is None or quota.lending_limit is None
            else format_quantity(resource, quota.lending_limit),
        })
    return {
        "name": node.name, "kind": "Cohort" if node.is_cohort else "ClusterQueue", "resources": resources,
        "children": [_node(c) for _, c in sorted(node.child_cohorts.items())]
        + [_node(c) for _, c in sorted(node.child_cqs.items())],
    }


def overview(rec: HubReconciler, now: float) -> tuple[pb.TopSnapshot, list[dict[str, Any]]]:
    """``mkhub top``'s snapshot and the cohort forest (roots only; ClusterQueues without a cohort are rows)."""
    snap = views.top(rec, now)
    tree = rec.engine.tree
    roots = [_node(node) for name, node in sorted(tree.cohorts.items()) if node.parent is None and not node.in_cycle]
    return snap, roots


def detail(rec: HubReconciler, namespace: str, name: str) -> dict[str, Any]:
    """``mkhub describe workload``'s engine part: where it stands, events, and the workloads ahead."""
    out = views.describe(rec, "Workload", namespace, name)
    return {
        "explanation": out.explanation,
        "positionInClusterQueue": out.position_in_cluster_queue if out.position_in_cluster_queue >= 0 else None,
        "positionInLocalQueue": out.position_in_local_queue if out.position_in_local_queue >= 0 else None,
        "aheadCount": out.ahead_count,
        "ahead": [json.loads(a) for a in out.ahead_json],
        "events": [{"type": e.event_type or "Normal", "reason": e.reason, "message": e.message, "time": e.time,
                    "count": e.count or 1} for e in out.events],
        "queueUsage": cluster_queue(out.cluster_queue) if out.cluster_queue.name else None,
    }


def positions(rec: HubReconciler, cluster_queues: list[str]) -> dict[str, tuple[int, int]]:
    """Workload key -> (position in its ClusterQueue, in its LocalQueue), for the pending ones of these queues."""
    out: dict[str, tuple[int, int]] = {}
    for cq in cluster_queues:
        for p in visibility.cluster_queue_pending(rec.engine, cq) or []:
            out[p.key] = (p.position_in_cluster_queue, p.position_in_local_queue)
    return out


def queue_of(rec: HubReconciler, keys: list[str]) -> dict[str, str]:
    """The ClusterQueue each pending workload waits in (its LocalQueue's)."""
    out = {}
    for key in keys:
        info = rec.engine.infos.get(key)
        if info is not None and info.cluster_queue:
            out[key] = info.cluster_queue
    return out


def local_queues_of(rec: HubReconciler, cluster_queues: list[str]) -> dict[str, list[str]]:
    """The LocalQueues ("namespace/name") that point at each of these ClusterQueues."""
    wanted = set(cluster_queues)
    out: dict[str, list[str]] = {}
    for key, lq in rec.engine.local_queues.items():
        if lq.cluster_queue in wanted:
            out.setdefault(lq.cluster_queue, []).append(key)
    return out
