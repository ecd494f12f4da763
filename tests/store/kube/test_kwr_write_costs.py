"""What a write costs the hub on the Kubernetes store: no copy or rebuild that the write does not need."""

from __future__ import annotations

from typing import Any

from hub.store.kube import requests as rq


def test_a_merge_patch_shares_the_new_values_it_carries_instead_of_copying_them() -> None:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    admission: dict[str, Any] = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main"}]}
    patch = rq.merge_diff({"conditions": [], "requeueState": {"count": 1}}, {"conditions": conditions, "admission": admission})
    assert patch == {"conditions": conditions, "admission": admission, "requeueState": None}
    assert patch["conditions"] is conditions and patch["admission"] is admission
    assert rq.merge_diff(None, admission) is admission


def test_a_kinds_resource_is_built_once_and_any_version_it_lacks_means_its_preferred_one() -> None:
    first = rq.resource_for("Workload")
    assert rq.resource_for("Workload") is first
    assert rq.resource_for("Workload", "kueue.x-k8s.io/v1beta1").version == "v1beta1"
    assert rq.resource_for("Workload", ["not", "a", "version"]) is first  # type: ignore[arg-type]
    assert rq.resource_for("Workload", "kueue.x-k8s.io/v9") == first


def test_a_writes_query_is_encoded_once_as_urlencode_would() -> None:
    req = rq.merge_patch(rq.resource_for("Workload"), "ns", "w", {"status": {}}, status=True, field_manager="a b&c")
    assert rq._WRITE_QUERIES[req.query] == "fieldManager=a+b%26c"
    assert req.url == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/w/status?fieldManager=a+b%26c"
