"""What ``describe`` and ``top`` show from the engine. Runs on the reconciler thread
(through :meth:`hub.controllers.hub_runtime.HubRuntime.call`), reads only."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass

from hub.api.config import Configuration
from hub.api.jobkinds import adapter_of_kind
from hub.api.jobkinds.framework import group_of, workload_name
from hub.api.jobkinds.management import framework_enabled, manages
from hub.api.meta import parse_time
from hub.api.others import QUEUE_NAME_LABEL
from hub.api.quantity import format_quantity
from hub.controllers.hub import HubReconciler
from hub.engine.engine import Engine
from hub.obs import visibility
from hub.obs.events import events_for
from hub.store.interface import ObjectKey
from mkhub.v1 import control_pb2 as pb


@dataclass(frozen=True, slots=True)
class WorkerLink:
    """What the transport knows of one agent (read on the server's loop)."""

    connected: bool
    seconds_since_heard: float | None


def _events(rec: HubReconciler, key: str) -> list[pb.Event]:
    """The workload's recorded Kubernetes Events (oldest first); the engine's own log when none were recorded."""
    namespace, _, name = key.partition("/")
    recorded = events_for(rec.store, "Workload", namespace, name)
    if not recorded:
        return [pb.Event(type=ev.type, reason=ev.reason, message=ev.message, time=ev.time) for ev in rec.events.of(key)]
    out = []
    for ev in recorded:
        last = parse_time(str(ev.get("lastTimestamp") or ev.get("firstTimestamp")))
        first = parse_time(str(ev.get("firstTimestamp") or ev.get("lastTimestamp")))
        out.append(pb.Event(type=str(ev.get("reason", "")), reason=str(ev.get("reason", "")), message=str(ev.get("message", "")),
                            time=last, event_type=str(ev.get("type", "")), count=int(ev.get("count") or 1), first_time=first))
    return out


def cluster_queue_row(engine: Engine, name: str) -> pb.ClusterQueueRow | None:
    state = engine.cqs.get(name)
    if state is None:
        return None
    pending, inadmissible = engine.pending_counts(name)
    row = pb.ClusterQueueRow(
        name=name,
        cohort=state.spec.cohort_name,
        active=state.active,
        inactive_reason=state.inactive_reason,
        pending=pending,
        inadmissible=inadmissible,
        reserving=len(state.reserving),
        admitted=state.admitted_count,
    )
    usage = state.node.usage
    for group in state.spec.resource_groups:
        for flavor in group.flavors:
            for rq in flavor.resources:
                used = usage.get((flavor.name, rq.name), 0)
                row.resources.append(
                    pb.ResourceRow(
                        flavor=flavor.name,
                        resource=rq.name,
                        usage=format_quantity(rq.name, used),
                        nominal=format_quantity(rq.name, rq.nominal_quota),
                        borrowing_limit=""
                        if rq.borrowing_limit is None
                        else format_quantity(rq.name, rq.borrowing_limit),
                        usage_value=used,
                        nominal_value=rq.nominal_quota,
                    )
                )
    return row


def _unmanaged_reason(config: Configuration, framework: str, queue: str) -> str:
    if not framework_enabled(config, framework):
        return f"not managed by Kueue ({framework} is not in the Configuration's integrations.frameworks)"
    if queue or config.manage_jobs_without_queue_name:
        return "not managed by Kueue (its namespace is not selected by managedJobsNamespaceSelector)"
    return f"not managed by Kueue (no {QUEUE_NAME_LABEL} label)"


def describe(
    rec: HubReconciler, kind: str, namespace: str, name: str, uid: str = "", labels: dict[str, str] | None = None
) -> pb.DescribeResponse:
    """The engine's part of a description; the caller adds the stored object."""
    engine = rec.engine
    out = pb.DescribeResponse()
    if kind == "ClusterQueue":
        row = cluster_queue_row(engine, name)
        if row is not None:
            out.cluster_queue.CopyFrom(row)
            out.explanation = "active" if row.active else f"inactive ({row.inactive_reason})"
        else:
            out.explanation = "not known to the engine yet"
        return out
    if kind == "LocalQueue":
        lq = engine.local_queues.get(f"{namespace}/{name}")
        if lq is not None:
            row = cluster_queue_row(engine, lq.cluster_queue)
            if row is not None:
                out.cluster_queue.CopyFrom(row)
            else:
                out.explanation = f'ClusterQueue "{lq.cluster_queue}" not found'
        return out
    adapter = adapter_of_kind(kind)
    if adapter is not None:
        wl_key = rec.controller.jobs.workload_of.get(ObjectKey(kind, namespace, name))
        queue = (labels or {}).get(QUEUE_NAME_LABEL, "")
        if wl_key is None and not manages(engine.config, adapter.framework, queue, namespace,
                                          engine.namespaces.get(namespace)):
            out.explanation = _unmanaged_reason(engine.config, adapter.framework, queue)
            return out
        if wl_key is None and uid:
            wl_key = f"{namespace}/{workload_name(adapter.kind, group_of(adapter.api_version), name, uid)}"
        if wl_key is None:
            out.explanation = "not managed by Kueue (no kueue.x-k8s.io/queue-name label)"
            return out
        out.workload_name = wl_key.partition("/")[2]
        key = wl_key
    elif kind == "Workload":
        key = f"{namespace}/{name}"
    else:
        return out
    out.explanation = engine.explain(key)
    out.events.extend(_events(rec, key))
    wl = engine.workloads.get(key)
    cq_name = None
    if wl is not None and wl.status.admission is not None:
        cq_name = wl.status.admission.cluster_queue
    elif key in engine.infos:
        cq_name = engine.infos[key].cluster_queue
    row = cluster_queue_row(engine, cq_name) if cq_name else None
    if row is not None:
        out.cluster_queue.CopyFrom(row)
    me, ahead = visibility.ahead_of(engine, key)
    out.position_in_cluster_queue = me.position_in_cluster_queue if me is not None else -1
    out.position_in_local_queue = me.position_in_local_queue if me is not None else -1
    out.ahead_count = me.position_in_cluster_queue if me is not None else 0
    out.ahead_json.extend(json.dumps(p.to_dict(), separators=(",", ":")) for p in ahead)
    return out


def top(rec: HubReconciler, now: float) -> pb.TopSnapshot:
    """ClusterQueues, workers and workload totals; the caller fills in the workers' links."""
    engine = rec.engine
    snap = pb.TopSnapshot(time=now)
    for name in sorted(engine.cqs):
        row = cluster_queue_row(engine, name)
        if row is not None:
            snap.cluster_queues.append(row)
    for name in sorted(engine.mk_clusters):
        cluster = engine.mk_clusters[name]
        active = any(c.type == "Active" and c.is_true for c in cluster.conditions)
        row = pb.WorkerRow(name=name, active=active, last_heard_seconds_ago=-1.0)
        fleet = cluster.fleet or {}
        counts = fleet.get("workloads") or {}
        row.since = str(fleet.get("since") or "")
        beat = fleet.get("lastHeartbeat")
        if isinstance(beat, str) and beat:
            # The stored heartbeat: what the transport says replaces it when it heard the agent itself.
            with contextlib.suppress(ValueError):
                row.last_heard_seconds_ago = max(0.0, now - parse_time(beat))
        row.pending, row.admitted, row.running = (int(counts.get(k) or 0) for k in ("pending", "admitted", "running"))
        row.capacity_version = int(fleet.get("capacityVersion") or 0)
        for q in fleet.get("quota") or []:
            row.quota.append(pb.WorkerQuotaRow(
                cluster_queue=str(q.get("clusterQueue", "")), flavor=str(q.get("flavor", "")),
                resource=str(q.get("resource", "")), nominal=str(q.get("nominal", "")), usage=str(q.get("usage", "")),
            ))
        snap.workers.append(row)
    pending, _reserved, admitted, finished = engine.counts.totals()
    snap.workloads_pending = pending
    snap.workloads_admitted = admitted
    snap.workloads_finished = finished
    snap.workloads_total = len(engine.workloads)
    return snap
