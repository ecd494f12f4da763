"""v1beta1 schemas, derived from the v1beta2 ones by the renames of
:mod:`hub.api.conversion` (the same fields Kueue's conversion functions touch)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from ..conversion import POD_PRIORITY_CLASS_SOURCE, WORKLOAD_PRIORITY_CLASS_SOURCE
from .dsl import DNS_SUBDOMAIN, Schema, array, integer, string
from .kueue import SCHEMAS, cluster_profile_ref, kube_config_source
from .kueue_stored import (
    admission_fair_sharing_status,
    local_queue_flavors,
    pending_workloads_status,
    topology_assignment,
    topology_request,
)

V1BETA1 = "v1beta1"
V1BETA2 = "v1beta2"
VERSIONS = (V1BETA1, V1BETA2)
STORAGE_VERSION = V1BETA2
"""mkhub stores Kueue objects in v1beta2 form (hub.service.apply converts on the way in)."""


def _props(schema: Schema, *path: str) -> dict[str, Schema]:
    node = schema
    for key in path:
        node = node["properties"][key]
    props: dict[str, Schema] = node["properties"]
    return props


def _rename(props: dict[str, Schema], old: str, new: str) -> None:
    props[new] = props.pop(old)


def _cluster_queue(schema: Schema) -> None:
    spec = _props(schema, "spec")
    _rename(spec, "cohortName", "cohort")
    spec["admissionChecks"] = array(
        string(max_length=316), "Names of the AdmissionChecks every workload admitted here must pass "
        "(v1beta1; admissionChecksStrategy may be used instead).",
    )
    # v1beta1's spellings Borrow and Preempt convert to MayStopSearch.
    ff = spec["flavorFungibility"]["properties"]
    ff["whenCanBorrow"]["enum"] = ["Borrow", *ff["whenCanBorrow"]["enum"]]
    ff["whenCanPreempt"]["enum"] = ["Preempt", *ff["whenCanPreempt"]["enum"]]
    del spec["concurrentAdmissionPolicy"]  # v1beta2 only in Kueue
    status = _props(schema, "status")
    status["pendingWorkloadsStatus"] = pending_workloads_status()
    _props(schema, "status", "fairSharing")["admissionFairSharingStatus"] = admission_fair_sharing_status()


def _workload(schema: Schema) -> None:
    spec = _props(schema, "spec")
    del spec["priorityClassRef"]
    spec["priorityClassName"] = string("Name of the priority class the priority comes from.",
                                       pattern=DNS_SUBDOMAIN, max_length=253)
    spec["priorityClassSource"] = string(
        "Where priorityClassName is looked up.",
        enum=(WORKLOAD_PRIORITY_CLASS_SOURCE, POD_PRIORITY_CLASS_SOURCE, ""), default="",
    )
    _props(schema, "spec")["podSets"]["items"]["properties"]["topologyRequest"] = topology_request(v1beta2=False)
    assignment = _props(schema, "status", "admission")["podSetAssignments"]["items"]["properties"]
    assignment["topologyAssignment"] = topology_assignment(v1beta2=False)
    # Kueue's v1beta1 spells this status field with a typo; conversion renames it.
    _rename(_props(schema, "status"), "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")


def _local_queue(schema: Schema) -> None:
    _rename(_props(schema, "status"), "flavorsUsage", "flavorUsage")
    _props(schema, "status")["flavors"] = local_queue_flavors()


def _cohort(schema: Schema) -> None:
    _props(schema, "status", "fairSharing")["admissionFairSharingStatus"] = admission_fair_sharing_status()


def _multikueue_cluster(schema: Schema) -> None:
    spec_node = schema["properties"]["spec"]
    del spec_node["properties"]["clusterSource"]
    spec_node.pop("required", None)
    spec_node["properties"]["kubeConfig"] = kube_config_source()
    spec_node["properties"]["clusterProfileRef"] = cluster_profile_ref()


def _multikueue_config(schema: Schema) -> None:
    spec = _props(schema, "spec")
    del spec["quotaManagement"]
    spec["clusters"]["x-kubernetes-list-type"] = "set"


def _admission_check(schema: Schema) -> None:
    _props(schema, "spec")["retryDelayMinutes"] = integer(
        "Deprecated in Kueue (ignored by mkhub): minutes before a Retry check is reset.", fmt="int64", default=15
    )


_DOWN: dict[str, Callable[[Schema], None]] = {
    "ClusterQueue": _cluster_queue,
    "Workload": _workload,
    "LocalQueue": _local_queue,
    "Cohort": _cohort,
    "MultiKueueCluster": _multikueue_cluster,
    "MultiKueueConfig": _multikueue_config,
    "AdmissionCheck": _admission_check,
}


def kind_schema(kind: str, version: str) -> Schema:
    """The OpenAPI v3 schema of a Kueue kind in ``v1beta1`` or ``v1beta2``."""
    if version not in VERSIONS:
        raise ValueError(f"{kind}: unknown version {version!r}; served versions: {', '.join(VERSIONS)}")
    schema = SCHEMAS[kind]()
    if version == V1BETA1 and kind in _DOWN:
        schema = copy.deepcopy(schema)
        _DOWN[kind](schema)
    return schema
