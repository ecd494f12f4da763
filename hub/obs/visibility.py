"""Kueue's visibility API (``visibility.kueue.x-k8s.io/v1beta2``) as pure functions over the engine's queues.

``PendingWorkloadsSummary`` of a ClusterQueue lists its pending workloads
(queued and inadmissible alike) in the order Kueue's ClusterQueue snapshot
gives them: the queue's ordering (priority, then queue timestamp), each item
with ``priority``, ``localQueueName``, ``positionInClusterQueue`` and
``positionInLocalQueue`` (positions from 0, counted before ``offset`` and
``limit`` cut the list). A LocalQueue's summary is the part of its
ClusterQueue's that came through it, with the same positions.

Reads only; callers run these on the engine's thread (the control service and
the Kubernetes API layer through ``HubRuntime.call``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hub.api.meta import format_time
from hub.engine.engine import Engine
from hub.engine.workload_info import WorkloadInfo

API_VERSION = "visibility.kueue.x-k8s.io/v1beta2"
KIND = "PendingWorkloadsSummary"
DEFAULT_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class PendingWorkload:
    namespace: str
    name: str
    priority: int
    local_queue_name: str
    cluster_queue: str
    position_in_cluster_queue: int
    position_in_local_queue: int
    creation_timestamp: float | None = None
    owner_references: tuple[dict[str, Any], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_dict(self) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        meta["creationTimestamp"] = format_time(self.creation_timestamp) if self.creation_timestamp is not None else None
        if self.owner_references:
            meta["ownerReferences"] = [dict(o) for o in self.owner_references]
        return {
            "metadata": meta,
            "priority": self.priority,
            "localQueueName": self.local_queue_name,
            "positionInClusterQueue": self.position_in_cluster_queue,
            "positionInLocalQueue": self.position_in_local_queue,
        }


def _ordered(engine: Engine, cq: str) -> list[WorkloadInfo]:
    queue = engine.queues.get(cq)
    if queue is None:
        return []
    infos = [*queue.peek_active(), *queue.inadmissible.values()]
    infos.sort(key=engine.qm.sort_key)
    return infos


def cluster_queue_pending(engine: Engine, cq: str) -> list[PendingWorkload] | None:
    """Every pending workload of ClusterQueue ``cq`` with its positions (None: no such ClusterQueue)."""
    if cq not in engine.cqs:
        return None
    out = []
    per_lq: dict[str, int] = {}
    for position, info in enumerate(_ordered(engine, cq)):
        wl = info.wl
        lq_position = per_lq.get(wl.queue_name, 0)
        per_lq[wl.queue_name] = lq_position + 1
        out.append(
            PendingWorkload(
                wl.meta.namespace, wl.meta.name, info.priority, wl.queue_name, cq, position, lq_position,
                wl.meta.creation_timestamp, tuple(wl.meta.owner_references),
            )
        )
    return out


def local_queue_pending(engine: Engine, namespace: str, lq: str) -> list[PendingWorkload] | None:
    """The pending workloads that came through LocalQueue ``namespace/lq`` (None: no such LocalQueue)."""
    local = engine.local_queues.get(f"{namespace}/{lq}")
    if local is None:
        return None
    items = cluster_queue_pending(engine, local.cluster_queue) or []
    return [p for p in items if p.namespace == namespace and p.local_queue_name == lq]


def summary(items: list[PendingWorkload], limit: int = DEFAULT_LIMIT, offset: int = 0) -> dict[str, Any]:
    """Kueue's ``PendingWorkloadsSummary`` of ``items[offset:offset + limit]``."""
    window = items[max(0, offset):][: max(0, limit)]
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": {"creationTimestamp": None},
        "items": [p.to_dict() for p in window],
    }


def positions(engine: Engine) -> dict[str, PendingWorkload]:
    """Workload key -> its pending entry, for every pending workload of every ClusterQueue."""
    out: dict[str, PendingWorkload] = {}
    for cq in engine.cqs:
        for p in cluster_queue_pending(engine, cq) or []:
            out[p.key] = p
    return out


def ahead_of(engine: Engine, key: str, limit: int = 10) -> tuple[PendingWorkload | None, list[PendingWorkload]]:
    """A pending workload's own entry and (up to ``limit`` of) the workloads ahead of it in its ClusterQueue."""
    info = engine.infos.get(key)
    if info is None or info.cluster_queue is None or info.wl.is_quota_reserved:
        return None, []
    items = cluster_queue_pending(engine, info.cluster_queue) or []
    for i, p in enumerate(items):
        if p.key == key:
            return p, items[max(0, i - limit):i]
    return None, []


def parse_window(limit: str | None, offset: str | None) -> tuple[int, int]:
    """``limit`` and ``offset`` query parameters (Kueue: limit 1000, offset 0); ValueError naming the bad one."""
    out = []
    for name, text, default in (("limit", limit, DEFAULT_LIMIT), ("offset", offset, 0)):
        if text is None or text == "":
            out.append(default)
            continue
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name}: {text!r} is not an integer") from None
        if value < 0:
            raise ValueError(f"{name}: must be greater than or equal to 0, got {value}")
        out.append(value)
    return out[0], out[1]
