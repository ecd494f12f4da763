"""The kinds the hub's reconciler lists, watches and feeds to its engine, in restore order."""

from __future__ import annotations

from typing import Any

from hub.api.jobkinds import JOB_KINDS, REFERENCED_KINDS
from hub.store import Object, Store

# Referenced objects before those that reference them, so a restore queues nothing twice.
KIND_ORDER = (
    "Namespace",
    "ResourceFlavor",
    "Topology",  # topology-aware scheduling's inventory (hub.engine.tas), before the Workloads placed on it
    "Node",
    "Cohort",
    "ClusterQueue",
    "LocalQueue",
    "WorkloadPriorityClass",
    "AdmissionCheck",
    "MultiKueueConfig",
    "MultiKueueCluster",
    *sorted(REFERENCED_KINDS),  # what kinds' pod sets come from (a TrainJob's runtimes), before their jobs
    "Workload",
    *JOB_KINDS,  # the kinds on the job framework (hub.api.jobkinds), after their Workloads
    "LeaderWorkerSet",  # its groups' Workloads (hub.controllers.lws), listed when its framework is enabled
    "Pod",  # Kueue's pod integration (hub.controllers.pods), listed when its framework is enabled
)
ENGINE_KINDS = frozenset(KIND_ORDER)  # others (ProvisioningRequestConfig, Event, ...) are stored only


def restore_list(store: Store, kind: str) -> tuple[list[Object], int]:
    """A restore's list of ``kind``. Workloads, the bulk of a take-over, come without the Kubernetes
    store's deep copy where it offers that (``list_shared``): the restore only reads their manifests
    and parses each, which copies it. Other kinds' manifests are kept (statuses), so are copies."""
    shared: Any = getattr(store, "list_shared", None) if kind == "Workload" else None
    objects, rv = shared(kind) if shared is not None else store.list(kind)
    for obj in objects:
        # Nothing reads managedFields (often the bulk of a manifest on a real cluster): the parse need
        # not copy them. Each listed object's metadata is its own (list_shared copies metadata too).
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return list(objects), rv
