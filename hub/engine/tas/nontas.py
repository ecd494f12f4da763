"""Requeueing after pods Kueue did not place free capacity on a node, batched as Kueue batches it.

Kueue's pod usage controller (``pkg/controller/tas/pod_usage_controller.go``) updates its non-TAS
usage cache on every pod event, so the next scheduling cycle sees it, but requeues nothing on an
increase (a workload that did not fit fits no better) and, on a decrease, only notes the node. A
drainer every ``defaultRequeueBatchInterval`` (10 s) requeues the inadmissible workloads of the
ClusterQueues using a TAS flavor the noted nodes match (``NodeMatchesFlavor``: the flavor's
nodeLabels and every level of its topology), so sustained churn of other pods does not requeue
every workload on every event. With no TAS flavor nothing is requeued at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from .inventory import TASInventory

REQUEUE_BATCH_SECONDS = 10.0  # Kueue's defaultRequeueBatchInterval


class _Queue(Protocol):
    flavors: set[str]  # the ClusterQueue's flavors (hub.engine.clusterqueue.ClusterQueueState)


def freed_due(inv: TASInventory) -> float | None:
    """When the pending batch of freed nodes is drained (None: none pending)."""
    return None if inv.freed_at is None else inv.freed_at + REQUEUE_BATCH_SECONDS


def requeue_freed(inv: TASInventory, cqs: Mapping[str, _Queue], now: float) -> set[str]:
    """The ClusterQueues to requeue once the batch is due (and the batch cleared); else none."""
    due = freed_due(inv)
    if due is None or now < due:
        return set()
    nodes, inv.freed, inv.freed_at = inv.freed, set(), None
    matching: set[str] = set()
    for flavor_name, flavor in inv.flavors.items():
        topology = inv.topologies.get(flavor.topology_name or "")
        if topology is None:
            continue
        for name in nodes:
            node = inv.nodes.get(name)  # deleted meanwhile: skipped, as Kueue's drainer does
            if node is None:
                continue
            labels = node.meta.labels
            if (all(labels.get(k) == v for k, v in flavor.node_labels.items())
                    and all(level in labels for level in topology.levels)):
                matching.add(flavor_name)
                break
    return {cq for cq, state in cqs.items() if state.flavors & matching}
