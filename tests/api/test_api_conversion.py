"""v1beta1 <-> v1beta2 conversion at the manifest level, as Kueue's conversion functions rename fields."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.api.conversion import V1BETA1, V1BETA2, to_internal, to_version
from hub.api.registry import parse_object

PS = [{"name": "main", "count": 2, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]


def v1(kind: str, spec: dict[str, Any], status: dict[str, Any] | None = None, ns: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "x"}
    if ns:
        meta["namespace"] = ns
    out: dict[str, Any] = {"apiVersion": V1BETA1, "kind": kind, "metadata": meta, "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def test_cluster_queue_cohort_is_renamed_cohort_name() -> None:
    internal = to_internal(v1("ClusterQueue", {"cohort": "pool", "namespaceSelector": {}}))
    assert internal["apiVersion"] == V1BETA2
    assert internal["spec"] == {"cohortName": "pool", "namespaceSelector": {}}


def test_cluster_queue_plain_admission_checks_become_a_strategy() -> None:
    internal = to_internal(v1("ClusterQueue", {"admissionChecks": ["prov", "mk"]}))
    assert internal["spec"] == {"admissionChecksStrategy": {"admissionChecks": [{"name": "prov"}, {"name": "mk"}]}}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ({"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}, {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"}),
        ({"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}, {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor"}),
    ],
)
def test_cluster_queue_v1beta1_fungibility_values_are_mapped(old: dict[str, str], new: dict[str, str]) -> None:
    assert to_internal(v1("ClusterQueue", {"flavorFungibility": old}))["spec"]["flavorFungibility"] == new


@pytest.mark.parametrize(
    ("source", "ref"),
    [
        ("kueue.x-k8s.io/workloadpriorityclass", {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}),
        ("scheduling.k8s.io/priorityclass", {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}),
    ],
)
def test_workload_priority_class_name_and_source_become_a_ref(source: str, ref: dict[str, str]) -> None:
    wl = v1("Workload", {"podSets": PS, "priorityClassName": "high", "priorityClassSource": source, "priority": 5}, ns="team")
    internal = to_internal(wl)
    assert internal["spec"]["priorityClassRef"] == ref
    assert "priorityClassName" not in internal["spec"] and "priorityClassSource" not in internal["spec"]
    assert to_version(internal, V1BETA1) == wl


def test_workload_priority_class_name_without_source_is_dropped() -> None:
    # Kueue's Convert_v1beta1_WorkloadSpec_To_v1beta2_WorkloadSpec maps only the two known sources;
    # with an empty source no priorityClassRef is set, so the workload needs no priority either.
    wl = v1("Workload", {"podSets": PS, "priorityClassName": "high"}, ns="team")
    assert "priorityClassRef" not in to_internal(wl)["spec"]
    assert parse_object(wl).priority_class_ref is None  # type: ignore[union-attr]


def test_workload_accumulated_execution_time_misspelling() -> None:
    wl = v1("Workload", {"podSets": PS}, {"accumulatedPastExexcutionTimeSeconds": 42}, ns="team")
    internal = to_internal(wl)
    assert internal["status"] == {"accumulatedPastExecutionTimeSeconds": 42}
    assert to_version(internal, V1BETA1) == wl
    assert parse_object(wl).status.accumulated_past_execution_time_seconds == 42  # type: ignore[union-attr]


def test_local_queue_flavor_usage_is_renamed() -> None:
    lq = v1("LocalQueue", {"clusterQueue": "cq"}, {"flavorUsage": [{"name": "default", "resources": []}]}, ns="team")
    internal = to_internal(lq)
    assert internal["status"] == {"flavorsUsage": [{"name": "default", "resources": []}]}
    assert to_version(internal, V1BETA1) == lq


def test_multikueue_cluster_kubeconfig_moves_under_cluster_source() -> None:
    mkc = v1("MultiKueueCluster", {"kubeConfig": {"location": "worker1-secret", "locationType": "Secret"}})
    internal = to_internal(mkc)
    assert internal["spec"] == {"clusterSource": {"kubeConfig": {"location": "worker1-secret", "locationType": "Secret"}}}
    assert to_version(internal, V1BETA1) == mkc


def test_multikueue_config_quota_management_is_dropped_going_down() -> None:
    cfg = {"apiVersion": V1BETA2, "kind": "MultiKueueConfig", "metadata": {"name": "x"},
           "spec": {"clusters": ["a"], "quotaManagement": "Manual"}}
    assert to_version(cfg, V1BETA1)["spec"] == {"clusters": ["a"]}


V1_ROUND_TRIPS = [
    v1("ClusterQueue", {"cohort": "pool", "namespaceSelector": {}, "queueingStrategy": "StrictFIFO",
                        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4", "borrowingLimit": "2"}]}]}],
                        "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}}),
    v1("Cohort", {"parentName": "root", "resourceGroups": []}),
    v1("ResourceFlavor", {"nodeLabels": {"pool": "spot"}, "nodeTaints": [{"key": "spot", "effect": "NoSchedule"}]}),
    v1("LocalQueue", {"clusterQueue": "cq"}, ns="team"),
    v1("Workload", {"podSets": PS, "queueName": "lq", "priority": 3, "active": False}, ns="team"),
    v1("Workload", {"podSets": PS, "priorityClassName": "p", "priorityClassSource": "scheduling.k8s.io/priorityclass",
                    "priority": 1}, ns="team"),
    v1("MultiKueueCluster", {"kubeConfig": {"location": "/etc/multikueue/kubeconfigs/w1", "locationType": "Path"}}),
    v1("AdmissionCheck", {"controllerName": "kueue.x-k8s.io/multikueue"}),
]


@pytest.mark.parametrize("manifest", V1_ROUND_TRIPS, ids=lambda m: m["kind"])
def test_v1beta1_round_trips_through_v1beta2(manifest: dict[str, Any]) -> None:
    original = copy.deepcopy(manifest)
    assert to_version(to_internal(manifest), V1BETA1) == original
    assert manifest == original  # conversion never mutates its input


@pytest.mark.parametrize("manifest", V1_ROUND_TRIPS, ids=lambda m: m["kind"])
def test_v1beta2_round_trips_through_v1beta1(manifest: dict[str, Any]) -> None:
    internal = to_internal(manifest)
    assert to_internal(to_version(internal, V1BETA1)) == internal


@pytest.mark.parametrize("manifest", V1_ROUND_TRIPS, ids=lambda m: m["kind"])
def test_both_versions_parse_to_the_same_object(manifest: dict[str, Any]) -> None:
    assert parse_object(manifest) == parse_object(to_internal(manifest))


def test_non_kueue_objects_are_copied_unchanged() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 2}}
    assert to_internal(job) == job and to_internal(job) is not job
    assert to_version(job, V1BETA1) == job


def test_v1beta2_manifest_is_left_alone_going_up() -> None:
    cq = {"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": "x"}, "spec": {"cohortName": "a"}}
    assert to_internal(cq) == cq
