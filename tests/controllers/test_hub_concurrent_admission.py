"""Concurrent admission through the hub reconciler and a real (in-memory) SQLite store: what
Kueue's controllers write is written (the parent label on a user's Workload, the variants as
Workloads owned by it, their spec.active both ways), and a restarted hub restores a parent
without counting its quota twice."""

from __future__ import annotations

from typing import Any

from hub_objects import T0, flavor, is_true, local_queue, namespace, seed, workload

from hub.api.config import parse_configuration
from hub.controllers.hub import HubReconciler
from hub.store import SQLiteStore

PARENT = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED = "kueue.x-k8s.io/workload-allowed-resource-flavors"
CONFIG = parse_configuration({"featureGates": {"ConcurrentAdmission": True}})


def cluster_queue(mode: str = "TryPreferredFlavors") -> dict[str, Any]:
    quotas = (("reservation", 1), ("on-demand", 2))
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "concurrentAdmissionPolicy": {"migration": {"mode": mode}},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}]} for name, cpu in quotas]}],
        },
    }


def new_hub(store: SQLiteStore, now: float = T0) -> HubReconciler:
    rec = HubReconciler(store, CONFIG, now, ready_delay=0.0)
    rec.load(now)
    return rec


def workloads(store: SQLiteStore) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in store.list("Workload")[0]}


def variant(store: SQLiteStore, parent: str, flavor_name: str) -> dict[str, Any]:
    return next(o for o in workloads(store).values()
                if (o["metadata"].get("ownerReferences") or [{}])[0].get("name") == parent
                and o["metadata"]["annotations"].get(ALLOWED) == flavor_name)


def setup(store: SQLiteStore) -> None:
    seed(store, [namespace(), flavor("reservation"), flavor("on-demand"), cluster_queue(), local_queue()])


def test_the_hub_writes_the_parent_label_the_variants_and_their_spec_active(store: SQLiteStore) -> None:
    setup(store)
    seed(store, [workload("first", duration="1h"), workload("second", duration="1h")])
    rec = new_hub(store)
    rec.round(T0)
    rec.round(T0 + 0.1)
    stored = workloads(store)
    assert {n for n, o in stored.items() if (o["metadata"].get("labels") or {}).get(PARENT) == "true"} == {"first", "second"}
    assert len(stored) == 6
    assert is_true(stored["first"], "Admitted") and is_true(stored["second"], "Admitted")
    second_reservation = variant(store, "second", "reservation")
    assert second_reservation["metadata"]["ownerReferences"][0]["uid"] == stored["second"]["metadata"]["uid"]
    assert second_reservation["spec"].get("active", True) is True  # pursues the preferred flavor
    first_on_demand = variant(store, "first", "on-demand")
    assert first_on_demand["spec"]["active"] is False  # less preferred than the admitted reservation variant

    # The first finishes: its variants finish with it; the second migrates to reservation, and on
    # the way (no variant admitted) its variants are all active again, then the others deactivated.
    rec.engine.finish("team/first", True, "", T0 + 1)
    for step in range(1, 6):
        rec.round(T0 + 1 + step / 10)
    stored = workloads(store)
    assert is_true(variant(store, "first", "on-demand"), "Finished")
    assert stored["second"]["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == "reservation"
    assert variant(store, "second", "reservation")["spec"].get("active", True) is True
    assert variant(store, "second", "on-demand")["spec"]["active"] is False


def test_a_restarted_hub_restores_a_parent_without_counting_its_quota_twice(store: SQLiteStore) -> None:
    setup(store)
    seed(store, [workload("solo", duration="1h")])
    rec = new_hub(store)
    rec.round(T0)
    rec.round(T0 + 0.1)
    assert is_true(workloads(store)["solo"], "Admitted")
    again = new_hub(store, T0 + 1)
    assert again.engine.usage_of("cq") == {("reservation", "cpu"): 1000}
    again.round(T0 + 1)
    stored = workloads(store)
    assert len(stored) == 3 and is_true(stored["solo"], "Admitted")


def set_active(rec: HubReconciler, store: SQLiteStore, name: str, active: bool, now: float) -> None:
    """A user's ``kubectl patch``: the store changes, the hub observes it."""
    obj = workloads(store)[name]
    obj["spec"]["active"] = active
    since = store.list("Workload")[1]
    store.update(obj)
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            rec.observe(ev, now)


def test_variants_deactivated_with_their_parent_are_written_active_again_when_it_is(store: SQLiteStore) -> None:
    setup(store)
    seed(store, [workload("first", duration="1h"), workload("second", duration="1h")])
    rec = new_hub(store)
    rec.round(T0)
    rec.round(T0 + 0.1)
    set_active(rec, store, "second", False, T0 + 1)
    for step in range(1, 4):
        rec.round(T0 + 1 + step / 10)
    assert variant(store, "second", "reservation")["spec"]["active"] is False  # with its parent
    set_active(rec, store, "second", True, T0 + 2)
    for step in range(1, 4):
        rec.round(T0 + 2 + step / 10)
    stored = workloads(store)
    assert is_true(stored["second"], "Admitted")
    assert stored["second"]["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == "on-demand"
    assert variant(store, "second", "reservation")["spec"]["active"] is True  # re-activated, pursuing it again


def test_kueues_events_the_parent_gets_its_variants_creation_not_an_admission_of_its_own(store: SQLiteStore) -> None:
    from prometheus_client import CollectorRegistry

    from hub.obs.events import EventRecorder
    from hub.obs.metrics import DecisionMetrics
    from hub.obs.observer import ClusterObserver

    setup(store)
    seed(store, [workload("solo", duration="1h")])
    registry = CollectorRegistry()
    observer = ClusterObserver(metrics=DecisionMetrics(registry), recorder=EventRecorder("kueue-admission"))
    rec = HubReconciler(store, CONFIG, T0, ready_delay=0.0, observer=observer)
    rec.load(T0)
    rec.round(T0)
    rec.round(T0 + 0.1)
    events = [e for e in store.list("Event")[0] if e["involvedObject"]["kind"] == "Workload"]
    by_object: dict[str, list[str]] = {}
    for e in events:
        by_object.setdefault(e["involvedObject"]["name"], []).append(e["reason"])
    assert sorted(by_object["solo"]) == ["CreatedVariant", "CreatedVariant"]
    reservation = variant(store, "solo", "reservation")["metadata"]["name"]
    assert {"QuotaReserved", "Admitted"} <= set(by_object[reservation])
    admitted = registry.get_sample_value("kueue_admitted_workloads_total", {"cluster_queue": "cq"})
    assert admitted == 1.0  # the variant's admission, counted once


def test_a_restarted_hub_knows_the_variants_it_had_deactivated(store: SQLiteStore) -> None:
    setup(store)
    seed(store, [workload("solo", duration="1h")])
    rec = new_hub(store)
    rec.round(T0)
    rec.round(T0 + 0.1)
    assert variant(store, "solo", "on-demand")["spec"]["active"] is False  # below the admitted reservation variant
    again = new_hub(store, T0 + 1)  # the inactive variant is never queued: found by its name
    again.round(T0 + 1)
    # The reservation flavor leaves the queue: its variant goes, the on-demand one is activated and admitted.
    cq = store.get("ClusterQueue", "", "cq")
    assert cq is not None
    cq["spec"]["resourceGroups"][0]["flavors"] = cq["spec"]["resourceGroups"][0]["flavors"][1:]
    since = store.list("Workload")[1]
    store.update(cq)
    with store.watch(since=since) as watch:
        while (ev := watch.next(timeout=0)) is not None:
            again.observe(ev, T0 + 2)
    for step in range(1, 6):
        again.round(T0 + 2 + step / 10)
    solo = workloads(store)["solo"]
    assert is_true(solo, "Admitted")
    assert solo["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"] == "on-demand"


def test_a_parent_restored_inactive_keeps_its_variants(store: SQLiteStore) -> None:
    setup(store)
    seed(store, [workload("solo", duration="1h")])
    rec = new_hub(store)
    rec.round(T0)
    rec.round(T0 + 0.1)
    set_active(rec, store, "solo", False, T0 + 1)
    for step in range(1, 4):
        rec.round(T0 + 1 + step / 10)
    # A crash between the parent's deactivation and its variants': one variant is still active.
    stale = variant(store, "solo", "on-demand")
    stale["spec"]["active"] = True
    store.update(stale)
    again = new_hub(store, T0 + 2)  # the parent, inactive, is never queued; that variant is
    again.round(T0 + 2)
    assert len(workloads(store)) == 3  # the variants are not garbage: their parent is there
    assert variant(store, "solo", "on-demand")["spec"]["active"] is False  # as its parent
    set_active(again, store, "solo", True, T0 + 3)
    for step in range(1, 4):
        again.round(T0 + 3 + step / 10)
    assert is_true(workloads(store)["solo"], "Admitted")
    assert len(workloads(store)) == 3
