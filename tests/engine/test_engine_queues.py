"""Queue order and the inadmissible set (kueue-semantics §3): priority, queue-order timestamps,
StrictFIFO vs BestEffortFIFO, requeue events, sticky preemptors and equivalence parking."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import T0, Sim, cq, flavor, reserved, wl

from hub.api.meta import format_time
from hub.api.registry import parse_object
from hub.api.workload import Workload
from hub.engine.workload_info import queue_order_timestamp

pytestmark = pytest.mark.timeout(60)


def one_slot(strategy: str | None = None, **options: Any) -> Sim:
    """A queue with room for exactly one 4-cpu workload."""
    return Sim(**options).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, strategy=strategy))


# --- heap order ------------------------------------------------------------------------------


def test_higher_priority_is_admitted_first() -> None:
    sim = one_slot()
    sim.add(wl("low", "q", cpu=4, priority=1, created=0), wl("high", "q", cpu=4, priority=2, created=10))
    sim.settle()
    assert sim.reserved() == {"high"}


def test_equal_priority_earlier_creation_first() -> None:
    sim = one_slot()
    sim.add(wl("later", "q", cpu=4, created=10), wl("earlier", "q", cpu=4, created=5))
    sim.settle()
    assert sim.reserved() == {"earlier"}


def test_missing_priority_counts_as_zero() -> None:
    sim = one_slot()
    sim.add(wl("negative", "q", cpu=4, priority=-1, created=0), wl("unset", "q", cpu=4, created=10))
    sim.settle()
    assert sim.reserved() == {"unset"}


def test_workload_priority_class_sets_priority() -> None:
    sim = one_slot()
    sim.add({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "urgent"},
             "value": 100})
    urgent = wl("urgent", "q", cpu=4, created=10, priority=100)
    urgent["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "urgent"}
    sim.add(wl("plain", "q", cpu=4, created=0), urgent).settle()
    assert sim.reserved() == {"urgent"}


def test_preempted_workload_keeps_its_original_place() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, within="LowerPriority"))
    sim.add(wl("old", "q", cpu=4, created=0)).settle()
    sim.add(wl("newer", "q", cpu=4, created=10), wl("urgent", "q", cpu=4, priority=10, created=20)).settle()
    assert sim.preempted() == {"old": "InClusterQueue"}
    assert sim.reserved() == {"urgent"}
    sim.finish("urgent").settle()
    assert sim.reserved() == {"old"}


# --- queue-order timestamp -------------------------------------------------------------------


def evicted_workload(reason: str | None, condition: str = "Evicted", status: str = "True") -> Workload:
    manifest = wl("w", "q", cpu=1, created=0)
    if reason is not None:
        manifest["status"] = {"conditions": [{"type": condition, "status": status, "reason": reason,
                                              "lastTransitionTime": format_time(T0 + 100)}]}
    obj = parse_object(manifest)
    assert isinstance(obj, Workload)
    return obj


def test_timestamp_is_creation_by_default() -> None:
    assert queue_order_timestamp(evicted_workload(None), eviction_timestamp=True) == T0


def test_pods_ready_timeout_eviction_uses_the_eviction_time_with_eviction_timestamps() -> None:
    assert queue_order_timestamp(evicted_workload("PodsReadyTimeout"), eviction_timestamp=True) == T0 + 100


def test_pods_ready_timeout_eviction_uses_creation_with_creation_timestamps() -> None:
    assert queue_order_timestamp(evicted_workload("PodsReadyTimeout"), eviction_timestamp=False) == T0


def test_admission_check_eviction_always_uses_the_eviction_time() -> None:
    assert queue_order_timestamp(evicted_workload("AdmissionCheck"), eviction_timestamp=False) == T0 + 100


def test_preemption_eviction_keeps_creation_time() -> None:
    assert queue_order_timestamp(evicted_workload("Preempted"), eviction_timestamp=True) == T0


def test_eviction_that_is_no_longer_true_is_ignored() -> None:
    assert queue_order_timestamp(evicted_workload("PodsReadyTimeout", status="False"), eviction_timestamp=True) == T0


def test_reclaim_while_borrowing_adds_a_millisecond_only_without_priority_sorting() -> None:
    w = evicted_workload("InCohortReclaimWhileBorrowing", condition="Preempted")
    assert queue_order_timestamp(w, True, priority_sorting_within_cohort=True) == T0
    assert queue_order_timestamp(w, True, priority_sorting_within_cohort=False) == pytest.approx(T0 + 100.001)


# --- StrictFIFO vs BestEffortFIFO -----------------------------------------------------------


def test_best_effort_fifo_lets_a_smaller_workload_pass_a_blocked_head() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=2), "q", {"cpu": "f"}))
    sim.add(wl("big", "q", cpu=4, created=0), wl("small", "q", cpu=2, created=10)).settle()
    assert sim.reserved() == {"running", "small"}
    assert sim.engine.pending_counts("q") == (0, 1)  # big parked as inadmissible


def test_strict_fifo_head_blocks_the_queue() -> None:
    sim = one_slot(strategy="StrictFIFO")
    sim.add(reserved(wl("running", "q", cpu=2), "q", {"cpu": "f"}))
    sim.add(wl("big", "q", cpu=4, created=0), wl("small", "q", cpu=2, created=10)).settle()
    assert sim.reserved() == {"running"}
    assert sim.engine.pending_counts("q") == (2, 0)  # nothing is parked


def test_strict_fifo_admits_in_order_once_the_head_fits() -> None:
    sim = one_slot(strategy="StrictFIFO")
    sim.add(reserved(wl("running", "q", cpu=2), "q", {"cpu": "f"}))
    sim.add(wl("big", "q", cpu=4, created=0), wl("small", "q", cpu=2, created=10)).settle()
    sim.finish("running").settle()
    assert sim.reserved() == {"big"}


def test_parked_workload_does_not_return_on_another_admission() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("big", "q", cpu=3, created=0)).settle()
    assert sim.engine.pending_counts("q") == (0, 1)
    sim.add(wl("tiny", "q", cpu=1, created=10)).settle()
    assert sim.reserved() == {"running", "tiny"}
    assert sim.engine.pending_counts("q") == (0, 1)


def test_parked_workload_returns_when_quota_is_released() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("big", "q", cpu=3)).settle()
    sim.finish("running").settle()
    assert sim.reserved() == {"big"}


def test_release_anywhere_in_the_cohort_requeues_the_whole_tree() -> None:
    sim = Sim().add(flavor("f")).queue(
        cq("qa", {"f": {"cpu": 0}}, cohort="co"),
        cq("qb", {"f": {"cpu": 4}}, cohort="co"),
    )
    sim.add(reserved(wl("b-running", "qb", cpu=4), "qb", {"cpu": "f"}))
    sim.add(wl("a", "qa", cpu=2)).settle()
    assert sim.engine.pending_counts("qa") == (0, 1)
    sim.finish("b-running").settle()
    assert sim.reserved() == {"a"}


def test_equivalent_workloads_are_parked_together() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("twin-1", "q", cpu=2, created=0), wl("twin-2", "q", cpu=2, created=1), wl("other", "q", cpu=3, created=2))
    sim.cycle()
    # twin-1 failed; twin-2 has the same shape so it is parked without being evaluated.
    queue = sim.engine.queues["q"]
    assert set(queue.inadmissible) == {"team/twin-1", "team/twin-2"}
    # Not evaluated, it states twin-1's reason, naming twin-1 (issue 11: no more "Bypassed scheduling evaluation").
    twin_1 = sim.condition("twin-1", "QuotaReserved")
    twin_2 = sim.condition("twin-2", "QuotaReserved")
    assert twin_1 is not None and twin_2 is not None
    assert twin_2.reason == twin_1.reason == "WaitingForQuota"
    assert twin_2.message == f"Same as equivalent workload team/twin-1, which was evaluated: {twin_1.message}"


def test_new_arrival_of_a_failed_shape_goes_straight_to_inadmissible() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("twin-1", "q", cpu=2)).settle()
    sim.add(wl("twin-2", "q", cpu=2))
    assert "team/twin-2" in sim.engine.queues["q"].inadmissible
    reason = sim.condition("twin-2", "QuotaReserved")
    assert reason is not None and reason.message.startswith("Same as equivalent workload team/twin-1, ")
    sim.finish("running").settle()
    assert sim.reserved() == {"twin-1", "twin-2"}


def test_strict_fifo_does_not_park_equivalent_workloads() -> None:
    sim = one_slot(strategy="StrictFIFO")
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("twin-1", "q", cpu=2, created=0), wl("twin-2", "q", cpu=2, created=1)).settle()
    assert sim.engine.pending_counts("q") == (2, 0)


def test_different_priority_is_a_different_shape() -> None:
    sim = one_slot()
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f"}))
    sim.add(wl("a", "q", cpu=2, priority=1, created=0), wl("b", "q", cpu=2, priority=0, created=1))
    sim.cycle()
    assert set(sim.engine.queues["q"].inadmissible) == {"team/a"}


# --- sticky preemptor ------------------------------------------------------------------------


def test_preemptor_stays_at_the_head_until_admitted() -> None:
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, within="LowerPriority"))
    sim.add(reserved(wl("victim", "q", cpu=4, priority=0), "q", {"cpu": "f"}))
    sim.add(wl("preemptor", "q", cpu=4, priority=5, created=10))
    sim.cycle()
    assert sim.preempted() == {"victim": "InClusterQueue"}
    assert sim.reason("preemptor") == "WaitingForPreemptedWorkloads"
    # A higher-priority arrival does not overtake the preemptor that is waiting for its victims.
    sim.add(wl("urgent", "q", cpu=4, priority=100, created=20))
    sim.cycle()
    assert sim.reserved() == {"victim"}  # still stopping
    sim.stopped("victim")
    sim.cycle()
    assert sim.reserved() == {"preemptor"}


def test_evicted_workload_keeps_its_quota_until_its_job_stops() -> None:
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}))
    sim.add(reserved(wl("w", "q", cpu=4), "q", {"cpu": "f"}))
    sim.evict("w")
    assert sim.state("w") == "admitted" and sim.usage("q") == {("f", "cpu"): 4000}
    sim.stopped("w")
    assert sim.state("w") == "pending" and sim.usage("q") == {}
    requeued = sim.condition("w", "Requeued")
    assert requeued is not None and requeued.is_true and requeued.reason == "NodeFailures"


# --- queue membership ------------------------------------------------------------------------


def test_workload_without_local_queue_is_not_queued() -> None:
    sim = one_slot()
    sim.add(wl("lost", "missing", cpu=1)).settle()
    assert sim.state("lost") == "pending"
    assert sim.reason("lost") == "Misconfigured"
    assert sim.engine.is_inadmissible("team/lost")


def test_namespace_selector_null_admits_nothing() -> None:
    sim = Sim().add(flavor("f"))
    manifest = cq("q", {"f": {"cpu": 4}})
    del manifest["spec"]["namespaceSelector"]
    sim.queue(manifest).add(wl("w", "q", cpu=1)).settle()
    assert sim.state("w") == "pending"
    assert sim.reason("w") == "Misconfigured"


def test_namespace_selector_matches_labels() -> None:
    sim = Sim().add(flavor("f"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"tier": "gold"}}})
    sim.queue(cq("q", {"f": {"cpu": 4}}, selector={"matchLabels": {"tier": "gold"}}))
    sim.add(wl("w", "q", cpu=1)).settle()
    assert sim.state("w") == "admitted"


def test_finished_workloads_leave_the_queue_and_free_quota() -> None:
    sim = one_slot()
    sim.add(wl("a", "q", cpu=4), wl("b", "q", cpu=4)).settle()
    sim.finish("a").settle()
    assert (sim.state("a"), sim.state("b")) == ("finished", "admitted")
    assert sim.usage("q") == {("f", "cpu"): 4000}
