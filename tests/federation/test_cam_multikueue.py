"""Concurrent admission (KEP-8691) in a ClusterQueue with a MultiKueue check, as Kueue does it:
each variant is owned by its parent Workload, a kind Kueue's MultiKueue controller has no adapter
for, so the variant's check is rejected with Kueue's message and nothing reaches a worker."""

from __future__ import annotations

from typing import Any

import pytest

from hub.api.registry import parse_object

from .mk_harness import Fed

pytestmark = pytest.mark.timeout(60)

PARENT = "kueue.x-k8s.io/concurrent-admission-parent"
KUEUE_MESSAGE = 'No multikueue adapter found for owner kind "kueue.x-k8s.io/v1beta2, Kind=Workload"'


def concurrent_cluster_queue(flavors: tuple[str, ...] = ("default",)) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "admissionChecksStrategy": {"admissionChecks": [{"name": "mk-check"}]},
            "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": f, "resources": [{"name": "cpu", "nominalQuota": "8"}]} for f in flavors]}],
        },
    }


def federation(flavors: tuple[str, ...] = ("default",)) -> Fed:
    fed = Fed({"worker-1": "4", "worker-2": "4"}, feature_gates={"ConcurrentAdmission": True})
    for name in flavors:
        fed.manager.controller.apply(parse_object(
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": name}}), fed.now)
    fed.manager.controller.apply(parse_object(concurrent_cluster_queue(flavors)), fed.now)
    return fed


def test_a_variant_is_rejected_by_multikueue_with_kueues_message_and_nothing_is_dispatched() -> None:
    fed = federation()
    parent_key = fed.submit("a")
    for _ in range(5):  # rounds later the variant is still off: no reserve-reject cycle
        fed.settle()
        fed.advance(30)
    engine = fed.manager.engine
    parent = engine.workloads[parent_key]
    assert parent.meta.labels.get(PARENT) == "true"
    assert not parent.is_quota_reserved and parent.status.cluster_name is None
    (variant,) = [wl for key, wl in engine.workloads.items() if key != parent_key]
    assert variant.meta.owner_references[0]["kind"] == "Workload"
    assert not variant.active and not variant.is_quota_reserved
    evicted = variant.status.condition("Evicted")
    assert evicted is not None and evicted.reason == "DeactivatedDueToAdmissionCheck"
    assert f"Admission check(s): mk-check, were rejected: {KUEUE_MESSAGE}" in evicted.message
    for worker in ("worker-1", "worker-2"):
        assert fed.workers[worker].engine.workloads == {}
        assert fed.running(worker) == set()
    # One reservation, one rejection: the variant is not re-activated into another.
    types = [t for t, k in fed.events() if k == variant.meta.key]
    assert types.count("QuotaReserved") == 1 and types.count("Deactivated") == 1


def test_every_variant_of_a_parent_is_rejected() -> None:
    fed = federation(("reservation", "on-demand"))
    parent_key = fed.submit("a")
    fed.settle()
    fed.advance(30)
    engine = fed.manager.engine
    variants = [wl for key, wl in engine.workloads.items() if key != parent_key]
    assert len(variants) == 2
    for v in variants:
        assert not v.active
        evicted = v.status.condition("Evicted")
        assert evicted is not None and KUEUE_MESSAGE in evicted.message
    assert not engine.workloads[parent_key].is_quota_reserved
    assert fed.workers["worker-1"].engine.workloads == {} and fed.workers["worker-2"].engine.workloads == {}



def test_the_variant_runs_once_the_queue_drops_its_multikueue_check() -> None:
    fed = federation()
    parent_key = fed.submit("a")
    fed.settle()
    engine = fed.manager.engine
    (variant_key,) = [key for key in engine.workloads if key != parent_key]
    assert not engine.workloads[variant_key].active
    plain = concurrent_cluster_queue()
    del plain["spec"]["admissionChecksStrategy"]
    fed.manager.controller.apply(parse_object(plain), fed.now)
    fed.advance(1)
    fed.settle()
    assert engine.workloads[variant_key].active and engine.workloads[variant_key].is_admitted
    assert engine.workloads[parent_key].is_admitted  # in the manager itself, as Kueue then runs it
