"""The kinds the hub's reconciler lists, watches and feeds to its engine, in restore order."""

from __future__ import annotations

from hub.api.jobkinds import JOB_KINDS, REFERENCED_KINDS

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
