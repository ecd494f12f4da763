"""Object changes the engine reacts to: stop policies, deletion, deactivation, priority updates,
missing flavors and LocalQueues (kueue-semantics §1, §3.4, §7.5, §7.6)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from engine_helpers import Sim, admission_check, cq, flavor, local_queue, wl

pytestmark = pytest.mark.timeout(60)


def single(**options: Any) -> Sim:
    return Sim().add(flavor("f"), admission_check("prov")).queue(cq("q", {"f": {"cpu": 4}}, **options))


def test_hold_releases_reservations_that_are_not_admitted_yet() -> None:
    sim = single(checks=["prov"])
    sim.add(wl("waiting", "q", cpu=2)).settle()
    assert sim.state("waiting") == "reserved"
    sim.add(cq("q", {"f": {"cpu": 4}}, checks=["prov"], stop="Hold")).settle()
    assert sim.state("waiting") == "pending"
    assert sim.reason("waiting") in ("Suspended", "PendingEvaluation")
    assert sim.usage("q") == {}


def test_hold_lets_admitted_workloads_finish_but_admits_nothing_new() -> None:
    sim = single()
    sim.add(wl("running", "q", cpu=2)).settle()
    sim.add(cq("q", {"f": {"cpu": 4}}, stop="Hold"))
    sim.add(wl("new", "q", cpu=1)).settle()
    assert sim.state("running") == "admitted"
    assert sim.state("new") == "pending" and sim.reason("new") == "Suspended"


def test_hold_and_drain_evicts_admitted_workloads() -> None:
    sim = single()
    sim.add(wl("running", "q", cpu=2)).settle()
    sim.add(cq("q", {"f": {"cpu": 4}}, stop="HoldAndDrain")).settle()
    assert sim.state("running") == "pending"
    evicted = sim.condition("running", "Evicted")
    assert evicted is not None and evicted.reason == "ClusterQueueStopped"
    requeued = sim.condition("running", "Requeued")
    assert requeued is not None and not requeued.is_true


def test_restarting_a_drained_queue_requeues_its_workloads() -> None:
    sim = single()
    sim.add(wl("running", "q", cpu=2)).settle()
    sim.add(cq("q", {"f": {"cpu": 4}}, stop="HoldAndDrain")).settle()
    sim.add(cq("q", {"f": {"cpu": 4}})).settle()
    assert sim.state("running") == "admitted"
    requeued = sim.condition("running", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "ClusterQueueRestarted"


def test_local_queue_hold_and_drain() -> None:
    sim = single()
    sim.add(wl("running", "q", cpu=2)).settle()
    lq = local_queue("q", "q")
    lq["spec"]["stopPolicy"] = "HoldAndDrain"
    sim.add(lq).settle()
    evicted = sim.condition("running", "Evicted")
    assert evicted is not None and evicted.reason == "LocalQueueStopped"
    lq["spec"]["stopPolicy"] = "None"
    sim.add(lq).settle()
    assert sim.state("running") == "admitted"


def test_deleting_a_reserved_workload_frees_its_quota() -> None:
    sim = single()
    sim.add(wl("a", "q", cpu=4), wl("b", "q", cpu=4)).settle()
    sim.engine.delete("Workload", "team", "a", sim.now)
    sim.settle()
    assert "team/a" not in sim.engine.workloads
    assert sim.reserved() == {"b"}


def test_deactivating_evicts_and_reactivating_requeues() -> None:
    sim = single()
    manifest = wl("w", "q", cpu=2)
    sim.add(manifest).settle()
    manifest["spec"]["active"] = False
    sim.update(manifest).settle()
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.reason == "Deactivated"
    assert sim.state("w") == "pending" and sim.usage("q") == {}
    manifest["spec"]["active"] = True
    sim.update(manifest).settle()
    assert sim.state("w") == "admitted"
    requeued = sim.condition("w", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "Reactivated"


def test_reactivated_before_its_job_stopped_is_requeued() -> None:
    # Reactivated while its evicted job still runs (a hub catching up on a watch sees both
    # edits at once): the job's stop must not turn the reactivation back into Requeued=False,
    # which no later event would lift (found by e2e/test_kube_chaos.py).
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))
    manifest = wl("w", "q", cpu=2)
    sim.add(manifest).settle()
    sim.update({**manifest, "spec": {**manifest["spec"], "active": False}}).settle()
    sim.update({**manifest, "spec": {**manifest["spec"], "active": True}}).settle()
    assert sim.condition("w", "Evicted").reason == "Deactivated"  # type: ignore[union-attr]
    sim.stopped("w").settle()
    assert sim.state("w") == "admitted"
    requeued = sim.condition("w", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "Reactivated"


def test_reactivated_while_no_hub_ran_is_requeued_when_restored() -> None:
    # Deactivated and stopped (Requeued=False, Deactivated), then reactivated while no hub watched: the
    # restarted hub sees only the state, no transition; it must requeue it as Kueue's workload
    # controller does from the state (found by e2e/test_kube_chaos.py: the workload waited forever).
    sim = single()
    manifest = wl("w", "q", cpu=2)
    sim.add(manifest).settle()
    sim.update({**manifest, "spec": {**manifest["spec"], "active": False}}).settle()
    stored = copy.deepcopy(sim.workload("w"))
    assert stored.status.condition("Requeued").reason == "Deactivated"  # type: ignore[union-attr]
    stored.active = True
    restarted = single()
    restarted.engine.apply(stored, restarted.now)
    restarted.settle()
    assert restarted.state("w") == "admitted"
    requeued = restarted.condition("w", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "Reactivated"


def test_inactive_workload_is_never_admitted() -> None:
    sim = single()
    manifest = wl("w", "q", cpu=2)
    manifest["spec"]["active"] = False
    sim.add(manifest).settle()
    assert sim.state("w") == "pending"


def test_priority_class_value_change_reorders_pending_workloads() -> None:
    sim = single()
    wpc = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "batch"}, "value": 1}
    sim.add(wpc, wl("blocker", "q", cpu=4)).settle()
    late = wl("late", "q", cpu=4, priority=1, created=10)
    late["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "batch"}
    sim.add(wl("early", "q", cpu=4, priority=5, created=0), late).settle()
    sim.add({**wpc, "value": 10})
    assert sim.workload("late").priority == 10
    sim.finish("blocker").settle()
    assert sim.reserved() == {"late"}


def test_missing_flavor_makes_the_queue_inactive_until_it_appears() -> None:
    sim = Sim().queue(cq("q", {"f": {"cpu": 4}}))
    sim.add(wl("w", "q", cpu=1)).settle()
    assert sim.state("w") == "pending" and sim.reason("w") == "Suspended"
    assert sim.engine.cqs["q"].inactive_reason == "FlavorNotFound"
    sim.add(flavor("f")).settle()
    assert sim.state("w") == "admitted"


def test_workload_waits_for_its_local_queue() -> None:
    sim = Sim().add(flavor("f"), cq("q", {"f": {"cpu": 4}}))
    sim.add(wl("w", "lq", cpu=1)).settle()
    assert sim.state("w") == "pending"
    sim.add(local_queue("lq", "q")).settle()
    assert sim.state("w") == "admitted"


def test_workload_waits_for_its_cluster_queue() -> None:
    sim = Sim().add(flavor("f"), local_queue("lq", "q"))
    sim.add(wl("w", "lq", cpu=1)).settle()
    assert sim.state("w") == "pending" and sim.reason("w") == "Misconfigured"
    sim.add(cq("q", {"f": {"cpu": 4}})).settle()
    assert sim.state("w") == "admitted"


def test_quota_increase_requeues_parked_workloads() -> None:
    sim = single()
    sim.add(wl("big", "q", cpu=6)).settle()
    assert sim.reason("big") == "ExceedsMaxQuota"
    sim.add(cq("q", {"f": {"cpu": 8}})).settle()
    assert sim.state("big") == "admitted"


def test_explain_says_why_a_workload_waits() -> None:
    sim = single()
    sim.add(wl("big", "q", cpu=6)).settle()
    assert sim.engine.explain("team/big").startswith("pending (ExceedsMaxQuota)")
    sim.add(wl("ok", "q", cpu=1)).settle()
    assert sim.engine.explain("team/ok") == "admitted in ClusterQueue q"
