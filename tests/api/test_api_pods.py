"""Pod-set requests: Kubernetes PodRequests semantics, limits defaulting requests, times the counted pods."""

from __future__ import annotations

from typing import Any

from hub.api.pods import pod_requests, requests_exceed_limits
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.engine.workload_info import compute_requests

GI = 2**30


def container(name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None,
              **extra: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "pause", "resources": resources, **extra}


def workload(spec: dict[str, Any], count: int = 1, status: dict[str, Any] | None = None) -> Workload:
    manifest: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": count, "template": {"spec": spec}}]},
    }
    if status:
        manifest["status"] = status
    wl = parse_object(manifest)
    assert isinstance(wl, Workload)
    return wl


def per_pod(spec: dict[str, Any]) -> dict[str, int]:
    return pod_requests(workload(spec).pod_sets[0].spec)


def totals(wl: Workload) -> dict[str, int]:
    return dict(compute_requests(wl)[0].total)


def test_worked_example_of_kueue_semantics_section_2() -> None:
    spec = {
        "containers": [
            container("a", {"cpu": "1"}),
            container("b", {"cpu": "500m"}, limits={"memory": "1Gi"}),
        ],
        "initContainers": [container("i", {"cpu": "2"})],
        "overhead": {"cpu": "100m"},
    }
    assert per_pod(spec) == {"cpu": 2100, "memory": GI}
    assert totals(workload(spec, count=3)) == {"cpu": 6300, "memory": 3 * GI}


def test_containers_are_summed() -> None:
    spec = {"containers": [container("a", {"cpu": "1", "memory": "1Gi"}), container("b", {"cpu": "250m"})]}
    assert per_pod(spec) == {"cpu": 1250, "memory": GI}


def test_limits_default_missing_requests() -> None:
    spec = {"containers": [container("a", {"cpu": "1"}, limits={"cpu": "4", "nvidia.com/gpu": "2"})]}
    assert per_pod(spec) == {"cpu": 1000, "nvidia.com/gpu": 2}


def test_init_container_larger_than_containers_wins() -> None:
    spec = {"containers": [container("a", {"cpu": "1"})], "initContainers": [container("i", {"cpu": "3"})]}
    assert per_pod(spec) == {"cpu": 3000}


def test_init_containers_take_the_max_not_the_sum() -> None:
    spec = {
        "containers": [container("a", {"cpu": "500m"})],
        "initContainers": [container("i1", {"cpu": "2"}), container("i2", {"cpu": "1"})],
    }
    assert per_pod(spec) == {"cpu": 2000}


def test_sidecars_run_beside_the_containers() -> None:
    spec = {
        "containers": [container("a", {"cpu": "1"})],
        "initContainers": [container("proxy", {"cpu": "500m"}, restartPolicy="Always")],
    }
    assert per_pod(spec) == {"cpu": 1500}


def test_init_container_counts_the_sidecars_started_before_it() -> None:
    spec = {
        "containers": [container("a", {"cpu": "1"})],
        "initContainers": [
            container("side", {"cpu": "1"}, restartPolicy="Always"),
            container("setup", {"cpu": "2"}),  # runs while "side" runs: 3
            container("late-side", {"cpu": "100m"}, restartPolicy="Always"),
        ],
    }
    # max(containers 1 + sidecars 1.1, setup 2 + earlier sidecar 1) = 3
    assert per_pod(spec) == {"cpu": 3000}


def test_init_container_before_any_sidecar_does_not_count_it() -> None:
    spec = {
        "containers": [container("a", {"cpu": "1"})],
        "initContainers": [
            container("setup", {"cpu": "2"}),
            container("side", {"cpu": "1"}, restartPolicy="Always"),
        ],
    }
    assert per_pod(spec) == {"cpu": 2000}


def test_overhead_is_added_on_top() -> None:
    spec = {"containers": [container("a", {"memory": "1Gi"})], "overhead": {"memory": "128Mi", "cpu": "50m"}}
    assert per_pod(spec) == {"memory": GI + 128 * 2**20, "cpu": 50}


def test_pod_level_requests_replace_the_container_sum_for_the_resources_they_name() -> None:
    spec = {
        "containers": [container("a", {"cpu": "1", "memory": "1Gi"}), container("b", {"cpu": "1"})],
        "resources": {"requests": {"cpu": "3"}},
        "overhead": {"cpu": "100m"},
    }
    assert per_pod(spec) == {"cpu": 3100, "memory": GI}


def test_pod_level_limits_default_pod_level_requests() -> None:
    spec = {"containers": [container("a", {"cpu": "1"})], "resources": {"limits": {"cpu": "2"}}}
    assert per_pod(spec) == {"cpu": 2000}


def test_count_multiplies_and_reclaimable_pods_are_not_counted() -> None:
    spec = {"containers": [container("a", {"cpu": "1"})]}
    wl = workload(spec, count=5, status={"reclaimablePods": [{"name": "main", "count": 2}]})
    requests = compute_requests(wl)[0]
    assert (requests.count, dict(requests.total)) == (3, {"cpu": 3000})


def test_reserved_workload_requests_come_from_its_admission() -> None:
    spec = {"containers": [container("a", {"cpu": "1"})]}
    status = {
        "admission": {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "4"}, "count": 2}]},
        "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                        "lastTransitionTime": "2025-01-01T00:00:00Z"}],
    }
    requests = compute_requests(workload(spec, count=2, status=status))[0]
    assert (requests.count, dict(requests.total)) == (2, {"cpu": 4000})


def test_zero_count_requests_nothing() -> None:
    assert totals(workload({"containers": [container("a", {"cpu": "1"})]}, count=0)) == {"cpu": 0}


def test_requests_above_limits_are_reported() -> None:
    spec = workload({"containers": [container("a", {"cpu": "2"}, limits={"cpu": "1"})]}).pod_sets[0].spec
    problem = requests_exceed_limits(spec)
    assert problem is not None and "'a'" in problem and "cpu" in problem


def test_requests_within_limits_are_fine() -> None:
    spec = workload({"containers": [container("a", {"cpu": "1"}, limits={"cpu": "1"})]}).pod_sets[0].spec
    assert requests_exceed_limits(spec) is None
