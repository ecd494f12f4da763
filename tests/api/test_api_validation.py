"""Kueue's webhook and CRD rules: one test per rejected case, each naming the field path and the reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from hub.api.errors import FieldError, ValidationError
from hub.api.registry import parse_object, validate_update

V2 = "kueue.x-k8s.io/v1beta2"
V1 = "kueue.x-k8s.io/v1beta1"


def cluster_queue(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory"],
                "flavors": [
                    {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "10"}, {"name": "memory", "nominalQuota": "10Gi"}]}
                ],
            }
        ],
    }
    base.update(spec)
    return {"apiVersion": V2, "kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": base}


def quota(cq: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The first flavor's cpu quota of ``cq``, updated with ``fields``."""
    out = copy.deepcopy(cq)
    out["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(fields)
    return out


def workload(*pod_sets: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": list(pod_sets) or [pod_set()], **spec},
    }


def pod_set(name: str = "main", count: int = 1, requests: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "pause", "resources": {"requests": requests or {"cpu": "1"}}}
    return {"name": name, "count": count, "template": {"spec": {"containers": [container]}}, **extra}


def rejected(manifest: dict[str, Any]) -> list[FieldError]:
    with pytest.raises(ValidationError) as exc:
        parse_object(manifest)
    return exc.value.errors


def assert_rejects(manifest: dict[str, Any], path: str, reason: str) -> None:
    errors = rejected(manifest)
    matching = [e for e in errors if e.path == path and reason in e.reason]
    assert matching, f"expected {path}: {reason!r}, got {[str(e) for e in errors]}"


FLAVOR0 = "spec.resourceGroups[0].flavors[0]"
CPU_QUOTA = f"{FLAVOR0}.resources[0]"


# --- accepted baselines ---------------------------------------------------------------------


def test_the_baselines_are_valid() -> None:
    parse_object(cluster_queue())
    parse_object(workload())
    parse_object(quota(cluster_queue(cohortName="co"), borrowingLimit="2", lendingLimit="10"))


# --- ClusterQueue ---------------------------------------------------------------------------


def test_cq_negative_nominal_quota() -> None:
    assert_rejects(quota(cluster_queue(), nominalQuota="-1"), f"{CPU_QUOTA}.nominalQuota", "must be greater than or equal to 0")


def test_cq_negative_borrowing_limit() -> None:
    cq = quota(cluster_queue(cohortName="co"), borrowingLimit="-500m")
    assert_rejects(cq, f"{CPU_QUOTA}.borrowingLimit", "must be greater than or equal to 0")


def test_cq_borrowing_limit_without_cohort() -> None:
    assert_rejects(quota(cluster_queue(), borrowingLimit="1"), f"{CPU_QUOTA}.borrowingLimit", "must be nil when cohort is empty")


def test_cq_lending_limit_without_cohort() -> None:
    assert_rejects(quota(cluster_queue(), lendingLimit="1"), f"{CPU_QUOTA}.lendingLimit", "must be nil when cohort is empty")


def test_cq_lending_limit_above_nominal() -> None:
    cq = quota(cluster_queue(cohortName="co"), lendingLimit="11")
    assert_rejects(cq, f"{CPU_QUOTA}.lendingLimit", "must be less than or equal to the nominalQuota")


def test_cq_lending_limit_equal_to_nominal_is_fine() -> None:
    parse_object(quota(cluster_queue(cohortName="co"), lendingLimit="10"))


def test_cq_resource_names_must_follow_covered_resources_order() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].reverse()
    assert_rejects(cq, f"{FLAVOR0}.resources[0].name", "must match the name in coveredResources")


def test_cq_flavor_must_list_as_many_resources_as_covered() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop()
    assert_rejects(cq, f"{FLAVOR0}.resources", "same number of resources as the coveredResources")


def test_cq_resource_in_two_groups() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"].append(
        {"coveredResources": ["cpu"], "flavors": [{"name": "other", "resources": [{"name": "cpu", "nominalQuota": "1"}]}]}
    )
    assert_rejects(cq, "spec.resourceGroups[1].coveredResources[0]", 'Duplicate value: "cpu"')


def test_cq_flavor_in_two_groups() -> None:
    cq = cluster_queue()
    cq["spec"]["resourceGroups"].append(
        {"coveredResources": ["gpu"], "flavors": [{"name": "default", "resources": [{"name": "gpu", "nominalQuota": "1"}]}]}
    )
    assert_rejects(cq, "spec.resourceGroups[1].flavors[0].name", 'Duplicate value: "default"')


def test_cq_reclaim_never_with_borrow_within_cohort() -> None:
    cq = cluster_queue(
        cohortName="co",
        preemption={"reclaimWithinCohort": "Never", "borrowWithinCohort": {"policy": "LowerPriority"}},
    )
    assert_rejects(cq, "spec.preemption", "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")


def test_cq_borrow_within_cohort_with_reclaim_is_fine() -> None:
    parse_object(
        cluster_queue(
            cohortName="co",
            preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 5}},
        )
    )


@pytest.mark.parametrize(
    "fungibility",
    [
        {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor", "preference": "PreemptionOverBorrowing"},
        {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch", "preference": "BorrowingOverPreemption"},
        {"preference": "PreemptionOverBorrowing"},  # defaults: whenCanBorrow=MayStopSearch
    ],
)
def test_cq_fungibility_preference_requires_try_next_flavor_for_both(fungibility: dict[str, str]) -> None:
    assert_rejects(
        cluster_queue(flavorFungibility=fungibility),
        "spec.flavorFungibility.preference",
        "requires both whenCanBorrow and whenCanPreempt to be TryNextFlavor",
    )


def test_cq_fungibility_preference_with_both_try_next_flavor_is_fine() -> None:
    parse_object(
        cluster_queue(
            flavorFungibility={"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor", "preference": "PreemptionOverBorrowing"}
        )
    )


def test_cq_negative_fair_sharing_weight() -> None:
    assert_rejects(cluster_queue(fairSharing={"weight": "-1"}), "spec.fairSharing.weight", "must be greater than or equal to 0")


def test_cq_tiny_non_zero_fair_sharing_weight() -> None:
    assert_rejects(cluster_queue(fairSharing={"weight": "1n"}), "spec.fairSharing.weight", "weight must be > 10e-9")


@pytest.mark.parametrize("weight", ["0", "2n", "0.5", "3"])
def test_cq_zero_or_positive_weight_is_fine(weight: str) -> None:
    parse_object(cluster_queue(fairSharing={"weight": weight}))


def test_cq_weight_that_is_not_a_quantity() -> None:
    assert_rejects(cluster_queue(fairSharing={"weight": "heavy"}), "spec.fairSharing.weight", "is not a quantity")


def test_cq_admission_check_on_unknown_flavor() -> None:
    cq = cluster_queue(admissionChecksStrategy={"admissionChecks": [{"name": "prov", "onFlavors": ["default", "spot"]}]})
    assert_rejects(cq, "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[1]", "supported values: default")


def test_cq_quota_that_is_not_a_quantity() -> None:
    assert_rejects(quota(cluster_queue(), nominalQuota="ten"), f"{CPU_QUOTA}.nominalQuota", "is not a quantity")


def test_cq_missing_nominal_quota() -> None:
    cq = cluster_queue()
    del cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    assert_rejects(cq, f"{CPU_QUOTA}.nominalQuota", "Required value")


def test_cq_unknown_enum_value() -> None:
    assert_rejects(cluster_queue(queueingStrategy="LIFO"), "spec.queueingStrategy", "supported values")


def test_cq_every_problem_is_reported_at_once() -> None:
    cq = quota(cluster_queue(), nominalQuota="-1", borrowingLimit="1")
    paths = {e.path for e in rejected(cq)}
    assert {f"{CPU_QUOTA}.nominalQuota", f"{CPU_QUOTA}.borrowingLimit"} <= paths


def test_error_message_names_object_field_value_and_reason() -> None:
    with pytest.raises(ValidationError) as exc:
        parse_object(quota(cluster_queue(), lendingLimit="1"))
    text = str(exc.value)
    assert text.startswith('ClusterQueue "cq" is invalid: ')
    assert f'{CPU_QUOTA}.lendingLimit: Invalid value: "1": must be nil when cohort is empty' in text


# --- Cohort ---------------------------------------------------------------------------------


def cohort(parent: str | None = None, **limits: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4", **limits}]}]}
        ]
    }
    if parent:
        spec["parentName"] = parent
    return {"apiVersion": V2, "kind": "Cohort", "metadata": {"name": "co"}, "spec": spec}


def test_cohort_borrowing_limit_without_parent() -> None:
    assert_rejects(cohort(borrowingLimit="1"), f"{CPU_QUOTA}.borrowingLimit", "must be nil when parent is empty")


def test_cohort_lending_limit_without_parent() -> None:
    assert_rejects(cohort(lendingLimit="1"), f"{CPU_QUOTA}.lendingLimit", "must be nil when parent is empty")


def test_cohort_lending_limit_may_exceed_its_own_nominal() -> None:
    # A cohort lends its whole subtree, so its lendingLimit is not bounded by its own nominal quota.
    parse_object(cohort(parent="root", lendingLimit="100", borrowingLimit="3"))


def test_cohort_cannot_be_its_own_parent() -> None:
    assert_rejects(cohort(parent="co"), "spec.parentName", "cannot point to itself")


# --- Workload -------------------------------------------------------------------------------


def test_workload_pods_resource_in_requests_is_reserved() -> None:
    wl = workload(pod_set(requests={"cpu": "1", "pods": "1"}))
    assert_rejects(
        wl, "spec.podSets[0].template.spec.containers[0].resources.requests[pods]", "the key is reserved for internal kueue use"
    )


def test_workload_pods_resource_in_limits_is_reserved() -> None:
    ps = pod_set()
    ps["template"]["spec"]["containers"][0]["resources"]["limits"] = {"pods": "1"}
    assert_rejects(workload(ps), "spec.podSets[0].template.spec.containers[0].resources.limits[pods]", "reserved")


def test_workload_pods_resource_in_pod_level_resources_is_reserved() -> None:
    ps = pod_set()
    ps["template"]["spec"]["resources"] = {"requests": {"pods": "2"}}
    assert_rejects(workload(ps), "spec.podSets[0].template.spec.resources.requests[pods]", "reserved")


def test_workload_more_than_one_pod_set_with_min_count() -> None:
    wl = workload(pod_set("a", count=4, minCount=2), pod_set("b", count=4, minCount=1))
    assert_rejects(wl, "spec.podSets", "at most one podSet can use minCount")


def test_workload_min_count_above_count() -> None:
    assert_rejects(workload(pod_set(count=2, minCount=3)), "spec.podSets[0].minCount", "less than or equal to count")


def test_workload_min_count_below_one() -> None:
    assert_rejects(workload(pod_set(count=2, minCount=0)), "spec.podSets[0].minCount", "greater than or equal to 1")


def test_workload_negative_request() -> None:
    assert_rejects(
        workload(pod_set(requests={"cpu": "-1"})),
        "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]",
        "must be greater than or equal to 0",
    )


def test_workload_negative_init_container_request() -> None:
    ps = pod_set()
    ps["template"]["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"memory": "-1Gi"}}}]
    assert_rejects(
        workload(ps), "spec.podSets[0].template.spec.initContainers[0].resources.requests[memory]", "greater than or equal to 0"
    )


def test_workload_priority_class_ref_without_priority() -> None:
    wl = workload(priorityClassRef={"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"})
    assert_rejects(wl, "spec.priority", "Required value")


def test_workload_without_pod_sets() -> None:
    wl = workload()
    wl["spec"]["podSets"] = []
    assert_rejects(wl, "spec.podSets", "must have 1 to 18 items")


def test_workload_with_too_many_pod_sets() -> None:
    wl = workload(*[pod_set(f"ps{i}") for i in range(19)])
    assert_rejects(wl, "spec.podSets", "must have 1 to 18 items")


def test_workload_duplicate_pod_set_names() -> None:
    assert_rejects(workload(pod_set("main"), pod_set("main")), "spec.podSets[1].name", 'Duplicate value: "main"')


def test_workload_negative_count() -> None:
    assert_rejects(workload(pod_set(count=-1)), "spec.podSets[0].count", "greater than or equal to 0")


def test_workload_pod_set_name_defaults_to_main_and_count_to_one() -> None:
    ps = pod_set()
    del ps["name"], ps["count"]
    wl = parse_object(workload(ps))
    assert [(p.name, p.count) for p in wl.pod_sets] == [("main", 1)]  # type: ignore[union-attr]


def test_workload_min_count_is_dropped_when_partial_admission_is_off() -> None:
    wl = workload(pod_set("a", count=4, minCount=2), pod_set("b", count=4, minCount=1))
    parsed = parse_object(wl, partial_admission=False)
    assert [p.min_count for p in parsed.pod_sets] == [None, None]  # type: ignore[union-attr]


# --- ResourceFlavor -------------------------------------------------------------------------


def flavor(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": spec}


def test_flavor_more_than_eight_node_labels() -> None:
    assert_rejects(flavor(nodeLabels={f"k{i}": "v" for i in range(9)}), "spec.nodeLabels", "must have at most 8 items")


def test_flavor_more_than_eight_taints() -> None:
    taints = [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(9)]
    assert_rejects(flavor(nodeTaints=taints), "spec.nodeTaints", "must have at most 8 items")


def test_flavor_more_than_eight_tolerations() -> None:
    tolerations = [{"key": f"k{i}", "operator": "Exists"} for i in range(9)]
    assert_rejects(flavor(tolerations=tolerations), "spec.tolerations", "must have at most 8 items")


def test_flavor_duplicate_taints() -> None:
    taints = [{"key": "gpu", "value": "a", "effect": "NoSchedule"}, {"key": "gpu", "value": "b", "effect": "NoSchedule"}]
    assert_rejects(flavor(nodeTaints=taints), "spec.nodeTaints[1]", "Duplicate value")


def test_flavor_same_taint_key_with_different_effects_is_fine() -> None:
    parse_object(flavor(nodeTaints=[{"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoExecute"}]))


def test_flavor_invalid_taint_effect() -> None:
    assert_rejects(flavor(nodeTaints=[{"key": "gpu", "effect": "Sometimes"}]), "spec.nodeTaints[0].effect", "supported values")


def test_flavor_topology_name_needs_a_node_label() -> None:
    assert_rejects(flavor(topologyName="default"), "spec.nodeLabels", "at least one nodeLabel is required")


def test_flavor_topology_name_is_immutable() -> None:
    old = parse_object(flavor(topologyName="a", nodeLabels={"pool": "x"}))
    new = parse_object(flavor(topologyName="b", nodeLabels={"pool": "x"}))
    with pytest.raises(ValidationError) as exc:
        validate_update(old, new)
    assert [(e.path, e.reason) for e in exc.value.errors] == [("spec.topologyName", "field is immutable")]


# --- LocalQueue -----------------------------------------------------------------------------


def local_queue(cq: str) -> dict[str, Any]:
    return {"apiVersion": V2, "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team"}, "spec": {"clusterQueue": cq}}


def test_local_queue_cluster_queue_is_immutable() -> None:
    old, new = parse_object(local_queue("a")), parse_object(local_queue("b"))
    with pytest.raises(ValidationError) as exc:
        validate_update(old, new)
    assert [(e.path, e.reason) for e in exc.value.errors] == [("spec.clusterQueue", "field is immutable")]


def test_local_queue_same_cluster_queue_update_is_fine() -> None:
    validate_update(parse_object(local_queue("a")), parse_object(local_queue("a")))


def test_local_queue_requires_cluster_queue() -> None:
    lq = local_queue("a")
    del lq["spec"]["clusterQueue"]
    assert_rejects(lq, "spec.clusterQueue", "Required value")


def test_local_queue_requires_a_namespace() -> None:
    lq = local_queue("a")
    del lq["metadata"]["namespace"]
    assert_rejects(lq, "metadata.namespace", "Required value")


def test_local_queue_gets_the_default_namespace() -> None:
    lq = local_queue("a")
    del lq["metadata"]["namespace"]
    assert parse_object(lq, default_namespace="ml").meta.namespace == "ml"


# --- Workload updates -----------------------------------------------------------------------


def reserved(wl: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(wl)
    out["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}],
        },
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
    }
    return out


def test_workload_pod_sets_are_immutable_while_reserved() -> None:
    old = parse_object(reserved(workload()))
    new = parse_object(reserved(workload(pod_set(count=2))))
    with pytest.raises(ValidationError) as exc:
        validate_update(old, new)
    assert exc.value.errors[0].path == "spec.podSets"


def test_workload_queue_name_is_immutable_while_reserved() -> None:
    old = parse_object(reserved(workload()))
    new = parse_object(reserved(workload(queueName="other")))
    with pytest.raises(ValidationError) as exc:
        validate_update(old, new)
    assert exc.value.errors[0].path == "spec.queueName"


def test_pending_workload_may_change_anything() -> None:
    validate_update(parse_object(workload()), parse_object(workload(pod_set(count=3), queueName="other")))


def test_reserved_workload_needs_one_assignment_per_pod_set() -> None:
    wl = reserved(workload(pod_set("a"), pod_set("b")))
    assert_rejects(wl, "status.admission.podSetAssignments", "same number of podSets")


# --- kinds and versions ---------------------------------------------------------------------


def test_unknown_kind() -> None:
    errors = rejected({"apiVersion": V2, "kind": "Queue", "metadata": {"name": "q"}})
    assert errors[0].path == "kind"
    assert "unknown kind" in errors[0].reason and "ClusterQueue" in errors[0].reason


def test_unknown_api_version() -> None:
    cq = cluster_queue()
    cq["apiVersion"] = "kueue.x-k8s.io/v1alpha1"
    errors = rejected(cq)
    assert errors[0].path == "apiVersion"
    assert V1 in errors[0].reason and V2 in errors[0].reason


def test_a_manifest_must_be_a_mapping() -> None:
    with pytest.raises(ValidationError) as exc:
        parse_object(["not", "a", "mapping"])
    assert "must be a mapping" in str(exc.value)


def test_invalid_object_name() -> None:
    cq = cluster_queue()
    cq["metadata"]["name"] = "Not_Valid"
    assert_rejects(cq, "metadata.name", "RFC 1123 subdomain")
