"""Workload lifecycle (kueue-semantics §7): admission checks and waitForPodsReady."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import Sim, admission_check, cq, flavor, key, wl

pytestmark = pytest.mark.timeout(60)


# --- admission checks ------------------------------------------------------------------------


def with_checks(*checks: Any, flavors: tuple[str, ...] = ("f",), config: dict[str, Any] | None = None) -> Sim:
    sim = Sim(config).add(*(flavor(f) for f in flavors), admission_check("prov"), admission_check("quota-check"))
    sim.queue(cq("q", {f: {"cpu": 4} for f in flavors}, checks=list(checks)))
    return sim


def check_states(sim: Sim, name: str) -> dict[str, str]:
    return {c.name: c.state for c in sim.workload(name).status.admission_checks}


def test_pending_check_reserves_quota_but_does_not_admit() -> None:
    sim = with_checks("prov")
    sim.add(wl("w", "q", cpu=2)).settle()
    assert sim.state("w") == "reserved"
    assert check_states(sim, "w") == {"prov": "Pending"}
    admitted = sim.condition("w", "Admitted")
    assert admitted is not None and not admitted.is_true and admitted.reason == "UnsatisfiedAdmissionChecks"
    assert sim.usage("q") == {("f", "cpu"): 2000}  # quota is held from reservation on


def test_all_checks_ready_admits() -> None:
    sim = with_checks("prov", "quota-check")
    sim.add(wl("w", "q", cpu=2)).settle()
    sim.checks("w", prov="Ready")
    assert sim.state("w") == "reserved"
    sim.checks("w", **{"quota-check": "Ready"})
    assert sim.state("w") == "admitted"


def test_no_checks_admits_at_reservation() -> None:
    sim = with_checks()
    sim.add(wl("w", "q", cpu=2)).settle()
    assert sim.state("w") == "admitted"


def test_retry_evicts_resets_checks_and_requeues() -> None:
    sim = with_checks("prov")
    sim.add(wl("w", "q", cpu=2)).settle()
    sim.checks("w", prov="Retry")
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.is_true and evicted.reason == "AdmissionCheck"
    assert sim.state("w") == "pending" and sim.usage("q") == {}
    [check] = sim.workload("w").status.admission_checks
    assert (check.state, check.retry_count) == ("Pending", 1)
    sim.settle()
    assert sim.state("w") == "reserved"  # requeued and reserved again, waiting for the check
    assert [(e.reason, e.count) for e in sim.workload("w").status.evictions] == [("AdmissionCheck", 1)]


def test_retry_with_requeue_after_waits_before_requeueing() -> None:
    sim = with_checks("prov")
    sim.add(wl("w", "q", cpu=2)).settle()
    sim.engine.set_check_state("team/w", "prov", "Retry", "later", requeue_after_seconds=30, now=sim.now)
    sim.ctl.react(sim.now)
    requeue = sim.workload("w").status.requeue_state
    assert requeue is not None and requeue.requeue_at == sim.now + 30
    sim.settle()
    assert sim.state("w") == "pending"
    sim.advance(30).settle()
    assert sim.state("w") == "reserved"


def test_rejected_deactivates() -> None:
    sim = with_checks("prov")
    sim.add(wl("w", "q", cpu=2)).settle()
    sim.checks("w", prov="Rejected")
    w = sim.workload("w")
    assert not w.active
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.reason == "DeactivatedDueToAdmissionCheck"
    # Kueue's message names the rejected checks (the DeactivationTarget's message), not the reason.
    assert evicted.message == "The workload is deactivated due to Admission check(s): prov, were rejected"
    sim.settle()
    assert sim.state("w") == "pending" and sim.usage("q") == {}


def test_pending_workload_with_a_retry_check_is_not_scheduled() -> None:
    sim = with_checks("prov")
    sim.add(wl("w", "q", cpu=2))
    sim.engine.set_check_states("team/w", {"prov": ("Retry", "", None)}, now=sim.now)
    sim.settle()
    assert sim.state("w") == "pending"
    assert sim.reason("w") == "PendingEvaluation"


def test_check_limited_to_other_flavors_does_not_apply() -> None:
    sim = with_checks(("prov", ["f2"]), flavors=("f1", "f2"))
    sim.add(wl("on-f1", "q", cpu=4), wl("on-f2", "q", cpu=4)).settle()
    assert sim.flavors("on-f1") == {"cpu": "f1"} and sim.state("on-f1") == "admitted"
    assert sim.flavors("on-f2") == {"cpu": "f2"} and sim.state("on-f2") == "reserved"
    assert check_states(sim, "on-f2") == {"prov": "Pending"}


def test_missing_admission_check_makes_the_queue_inactive() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, checks=["nowhere"]))
    sim.add(wl("w", "q", cpu=1)).settle()
    assert sim.state("w") == "pending"
    assert sim.engine.cqs["q"].inactive_reason == "AdmissionCheckNotFound"


# --- waitForPodsReady ------------------------------------------------------------------------


def pods_ready_sim(strategy: dict[str, Any] | None = None, **wfpr: Any) -> Sim:
    config = {"waitForPodsReady": {"timeout": "5m", "requeuingStrategy": strategy or {}, **wfpr}}
    return Sim(config).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))


def test_workload_without_ready_pods_is_evicted_after_the_timeout() -> None:
    sim = pods_ready_sim()
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(299)
    assert sim.state("w") == "admitted"
    sim.advance(1)
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.is_true and evicted.reason == "PodsReadyTimeout"
    assert "5m0s" in evicted.message
    assert [(e.reason, e.underlying_cause) for e in sim.workload("w").status.evictions] == [("PodsReadyTimeout", "WaitForStart")]
    requeue = sim.workload("w").status.requeue_state
    assert requeue is not None and (requeue.count, requeue.requeue_at) == (1, sim.now + 60)
    requeued = sim.condition("w", "Requeued")
    assert requeued is not None and not requeued.is_true


def test_ready_pods_stop_the_timer() -> None:
    sim = pods_ready_sim()
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(100).pods_ready("w").advance(1000)
    assert sim.state("w") == "admitted"
    ready = sim.condition("w", "PodsReady")
    assert ready is not None and ready.is_true and ready.reason == "Started"


def test_without_wait_for_pods_ready_readiness_is_held_but_not_written() -> None:
    """Kueue's job reconciler writes PodsReady only with waitForPodsReady configured: without it the
    engine holds the runner's word (since when), and eviction's release forgets it."""
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.engine.drain()
    sim.advance(10).pods_ready("w")
    assert sim.condition("w", "PodsReady") is None
    assert sim.engine.is_pods_ready(key("w")) and sim.engine.pods_ready_at(key("w")) == sim.now
    sim.advance(5).pods_ready("w")  # said again: since when stays
    assert sim.engine.pods_ready_at(key("w")) == sim.now - 5
    sim.engine.evict(key("w"), "Preempted", "by test", now=sim.now)
    sim.stopped("w")
    assert not sim.engine.is_pods_ready(key("w")) and sim.condition("w", "PodsReady") is None


def test_with_wait_for_pods_ready_a_stored_condition_is_its_readiness() -> None:
    """A PodsReady=True read back from the store (a restart) is the readiness, since its transition."""
    sim = pods_ready_sim()
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(10).pods_ready("w")
    since = sim.now
    sim.engine.ready_pods.clear()  # as a new process that read the Workload back
    assert sim.engine.pods_ready_at(key("w")) == since
    sim.advance(5).pods_ready("w")
    assert sim.engine.pods_ready_at(key("w")) == since


def test_evicted_workload_waits_for_its_backoff() -> None:
    sim = pods_ready_sim()
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(300).settle()
    assert sim.state("w") == "pending"
    sim.advance(59).settle()
    assert sim.state("w") == "pending"
    sim.advance(1).settle()
    assert sim.state("w") == "admitted"
    requeued = sim.condition("w", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "BackoffFinished"


def test_backoff_doubles_up_to_the_maximum() -> None:
    sim = pods_ready_sim({"backoffBaseSeconds": 10, "backoffMaxSeconds": 35})
    sim.add(wl("w", "q", cpu=4)).settle()
    delays = []
    for _ in range(4):
        sim.advance(300)  # timeout
        requeue = sim.workload("w").status.requeue_state
        assert requeue is not None and requeue.requeue_at is not None
        delays.append(requeue.requeue_at - sim.now)
        sim.advance(requeue.requeue_at - sim.now).settle()
        assert sim.state("w") == "admitted"
    assert delays == [10, 20, 35, 35]  # min(base * 2^(n-1), max)


def test_requeuing_limit_deactivates() -> None:
    sim = pods_ready_sim({"backoffLimitCount": 1, "backoffBaseSeconds": 1})
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(300).advance(1).settle()
    assert sim.state("w") == "admitted"  # first timeout: requeued (count 1)
    sim.advance(300)
    w = sim.workload("w")
    assert not w.active
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.reason == "DeactivatedDueToRequeuingLimitExceeded"
    assert evicted.message == "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
    assert w.status.requeue_state is None
    sim.advance(3600).settle()
    assert sim.state("w") == "pending"


def test_block_admission_waits_for_ready_pods() -> None:
    sim = pods_ready_sim(blockAdmission=True)
    sim.add(wl("first", "q", cpu=2)).settle()
    sim.add(wl("second", "q", cpu=2)).settle()
    assert sim.state("second") == "pending"
    assert sim.reason("second") == "WaitingForPodsReady"
    sim.pods_ready("first").settle()
    assert sim.state("second") == "admitted"


def test_without_block_admission_others_are_admitted_meanwhile() -> None:
    sim = pods_ready_sim()
    sim.add(wl("first", "q", cpu=2)).settle()
    sim.add(wl("second", "q", cpu=2)).settle()
    assert sim.state("second") == "admitted"


def requeue_order(timestamp: str) -> set[str]:
    sim = pods_ready_sim({"timestamp": timestamp, "backoffBaseSeconds": 0})
    sim.add(wl("old", "q", cpu=4, created=0)).settle()
    sim.add(wl("newer", "q", cpu=4, created=10))
    sim.advance(300).settle()  # old times out and competes with newer again
    return sim.reserved()


def test_eviction_timestamp_sends_a_timed_out_workload_to_the_back() -> None:
    assert requeue_order("Eviction") == {"newer"}


def test_creation_timestamp_keeps_a_timed_out_workloads_place() -> None:
    assert requeue_order("Creation") == {"old"}


def test_recovery_timeout_applies_after_pods_stop_being_ready() -> None:
    sim = pods_ready_sim(recoveryTimeout="1m")
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.pods_ready("w")
    sim.engine.pods_ready("team/w", False, sim.now)
    sim.advance(59)
    assert sim.state("w") == "admitted"
    sim.advance(1)
    assert [(e.reason, e.underlying_cause) for e in sim.workload("w").status.evictions] == [("PodsReadyTimeout", "WaitForRecovery")]


# --- conditions across eviction and re-admission ---------------------------------------------


def test_preempted_workload_is_requeued_and_its_eviction_flips_false_on_readmission() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, within="LowerPriority"))
    sim.add(wl("low", "q", cpu=4)).settle()
    sim.add(wl("high", "q", cpu=4, priority=5)).settle()
    requeued = sim.condition("low", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "Preempted"
    sim.finish("high").settle()
    assert sim.state("low") == "admitted"
    for type_ in ("Evicted", "Preempted"):
        cond = sim.condition("low", type_)
        assert cond is not None and not cond.is_true and cond.reason == "QuotaReserved"


def test_time_spent_admitted_accumulates_across_evictions() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))
    sim.add(wl("w", "q", cpu=4)).settle()
    sim.advance(90).evict("w").settle()
    sim.advance(30).evict("w")
    assert sim.workload("w").status.accumulated_past_execution_time_seconds == 120


def test_maximum_execution_time_deactivates() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))
    manifest = wl("w", "q", cpu=4)
    manifest["spec"]["maximumExecutionTimeSeconds"] = 60
    sim.add(manifest).settle()
    sim.advance(61).settle()
    evicted = sim.condition("w", "Evicted")
    assert evicted is not None and evicted.reason == "DeactivatedDueToMaximumExecutionTimeExceeded"
