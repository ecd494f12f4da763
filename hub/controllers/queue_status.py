"""ClusterQueue and LocalQueue ``status`` as Kueue's queue controllers write it.

Read-only over the engine; the hub writes the result back to the store when it
changed. Condition transition times only move when a condition's status flips,
so an unchanged queue produces an identical dict (and no store write).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from hub.api.meta import format_time, parse_time
from hub.api.quantity import format_quantity
from hub.engine.clusterqueue import ClusterQueueState
from hub.engine.engine import Engine
from hub.engine.quota import FR
from hub.engine.workload_counts import Counts  # (pendingWorkloads, reservingWorkloads, admittedWorkloads)
from hub.store.interface import ObjectKey

Status = dict[str, Any]


def _condition(previous: Status | None, active: bool, reason: str, message: str, now: float) -> dict[str, Any]:
    status = "True" if active else "False"
    since = now
    for cond in (previous or {}).get("conditions") or []:
        if cond.get("type") == "Active" and cond.get("status") == status and cond.get("lastTransitionTime"):
            since = parse_time(cond["lastTransitionTime"])
    return {
        "type": "Active",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(since),
    }


def _flavors_usage(state: ClusterQueueState, usage: dict[FR, int]) -> list[dict[str, Any]]:
    """Kueue's FlavorUsage list: every flavor/resource of the queue, in spec order."""
    out = []
    for group in state.spec.resource_groups:
        for flavor in group.flavors:
            resources = []
            for rq in flavor.resources:
                total = usage.get((flavor.name, rq.name), 0)
                resources.append(
                    {
                        "name": rq.name,
                        "total": format_quantity(rq.name, total),
                        "borrowed": format_quantity(rq.name, max(0, total - rq.nominal_quota)),
                    }
                )
            out.append({"name": flavor.name, "resources": resources})
    return out


def cluster_queue_status(engine: Engine, name: str, previous: Status | None, now: float) -> Status | None:
    """The status of one ClusterQueue, or None when the engine does not know it."""
    state = engine.cqs.get(name)
    if state is None:
        return None
    pending, inadmissible = engine.pending_counts(name)
    if state.active:
        cond = _condition(previous, True, "Ready", "Can admit new workloads", now)
    else:
        cond = _condition(previous, False, state.inactive_reason, state.inactive_message, now)
    return {
        "conditions": [cond],
        "pendingWorkloads": pending + inadmissible,
        "reservingWorkloads": len(state.reserving),
        "admittedWorkloads": state.admitted_count,
        "flavorsReservation": _flavors_usage(state, state.node.usage),
        "flavorsUsage": _flavors_usage(state, state.admitted_usage),
    }


def local_queue_counts(engine: Engine) -> dict[str, Counts]:
    """LocalQueue key -> (pending, reserving, admitted): the engine's counts, kept per change.

    Pending: active, unfinished, without quota (a deactivated workload is in no queue, as in
    Kueue's queue manager); reserving: unfinished and holding quota; admitted: those of them
    admitted. :func:`recount` derives the same from the workloads, to check them."""
    return engine.counts.local_queues()


def local_queue_status(
    engine: Engine, key: str, counts: Counts, previous: Status | None, now: float
) -> Status | None:
    lq = engine.local_queues.get(key)
    if lq is None:
        return None
    state = engine.cqs.get(lq.cluster_queue)
    if lq.stop_policy != "None":
        cond = _condition(previous, False, "Stopped", "LocalQueue is stopped", now)
    elif state is None:
        cond = _condition(previous, False, "ClusterQueueDoesNotExist", "Can't submit new workloads to clusterQueue", now)
    elif not state.active:
        cond = _condition(previous, False, "ClusterQueueIsInactive", "Can't submit new workloads to clusterQueue", now)
    else:
        cond = _condition(previous, True, "Ready", "Can submit new workloads to localQueue", now)
    pending, reserving, admitted = counts
    return {
        "conditions": [cond],
        "pendingWorkloads": pending,
        "reservingWorkloads": reserving,
        "admittedWorkloads": admitted,
    }


# --- the invariant: every queue status equals a recount from the workloads ------------------



def recount(engine: Engine) -> dict[str, Counts]:
    """``ClusterQueue/<name>`` and ``LocalQueue/<ns>/<name>`` -> counts, from the workloads alone.

    Pending: active, unfinished, without quota; a LocalQueue counts all of its own (Kueue's queue
    manager keeps them under the LocalQueue), a ClusterQueue those of its LocalQueues that are not
    stopped. Reserving and admitted: unfinished workloads holding quota, counted where their
    admission and their LocalQueue say.
    """
    rows: dict[str, list[int]] = {f"ClusterQueue/{name}": [0, 0, 0] for name in engine.cqs}
    rows.update({f"LocalQueue/{key}": [0, 0, 0] for key in engine.local_queues})
    for wl in engine.workloads.values():
        if wl.is_finished:
            continue
        lq_key = f"{wl.meta.namespace}/{wl.queue_name}"
        lq = engine.local_queues.get(lq_key)
        if wl.is_quota_reserved:
            admission = wl.status.admission
            targets = [f"LocalQueue/{lq_key}"] + ([f"ClusterQueue/{admission.cluster_queue}"] if admission else [])
            for target in targets:
                if target in rows:
                    rows[target][1] += 1
                    if wl.is_admitted:
                        rows[target][2] += 1
        elif wl.active and lq is not None:
            rows[f"LocalQueue/{lq_key}"][0] += 1
            if lq.stop_policy == "None" and lq.cluster_queue in engine.cqs:
                rows[f"ClusterQueue/{lq.cluster_queue}"][0] += 1
    return {key: (row[0], row[1], row[2]) for key, row in rows.items()}


def status_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}" if namespace else f"{kind}/{name}"


def drift(expected: dict[str, Counts], statuses: dict[str, Status]) -> list[str]:
    """Queues whose status counts differ from ``expected`` (a :func:`recount`), one line each."""
    out = []
    for key, counts in sorted(expected.items()):
        status = statuses.get(key)
        if status is None:
            continue  # not written yet (a round later)
        shown = (
            int(status.get("pendingWorkloads", 0)),
            int(status.get("reservingWorkloads", 0)),
            int(status.get("admittedWorkloads", 0)),
        )
        if shown != counts:
            out.append(
                f"{key}: status says pending/reserving/admitted {shown[0]}/{shown[1]}/{shown[2]}, "
                f"the workloads {counts[0]}/{counts[1]}/{counts[2]}"
            )
    return out


def current_statuses(engine: Engine, now: float) -> dict[str, Status]:
    """The counts :func:`cluster_queue_status` and :func:`local_queue_status` would write now."""
    out: dict[str, Status] = {}
    for name in engine.cqs:
        status = cluster_queue_status(engine, name, None, now)
        if status is not None:
            out[f"ClusterQueue/{name}"] = status
    counts = local_queue_counts(engine)
    for key in engine.local_queues:
        status = local_queue_status(engine, key, counts.get(key, (0, 0, 0)), None, now)
        if status is not None:
            out[f"LocalQueue/{key}"] = status
    return out


def _terminating_condition(previous: Status | None, now: float) -> dict[str, Any]:
    old = (previous or {}).get("conditions") or []
    since = old[0].get("lastTransitionTime") if old and old[0].get("reason") == "Terminating" else format_time(now)
    return {
        "type": "Active",
        "status": "False",
        "reason": "Terminating",
        "message": "Can't admit new workloads; clusterQueue is terminating",
        "lastTransitionTime": since,
    }


def wanted_queue_statuses(
    engine: Engine, previous: Mapping[ObjectKey, Status], terminating: Collection[str], now: float
) -> dict[ObjectKey, Status]:
    """Every queue's status as it should read now; a ClusterQueue being deleted is inactive (Terminating)."""
    wanted: dict[ObjectKey, Status] = {}
    for name in engine.cqs:
        key = ObjectKey("ClusterQueue", "", name)
        cq_status = cluster_queue_status(engine, name, previous.get(key), now)
        if cq_status is not None:
            if name in terminating:
                cq_status["conditions"] = [_terminating_condition(previous.get(key), now)]
            wanted[key] = cq_status
    counts = local_queue_counts(engine)
    for lq_key, lq in engine.local_queues.items():
        key = ObjectKey("LocalQueue", lq.meta.namespace, lq.meta.name)
        lq_status = local_queue_status(engine, lq_key, counts.get(lq_key, (0, 0, 0)), previous.get(key), now)
        if lq_status is not None:
            wanted[key] = lq_status
    return wanted
