"""Flavor assignment (kueue-semantics §4.1, §4.2): order, eligibility, fungibility, preference,
NoFit reasons and partial admission."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import Sim, cq, flavor, pod_set, reserved, wl

from hub.api.queues import FlavorFungibility
from hub.engine.flavors import Granular, Mode, PMode, is_preferred, should_try_next_flavor

pytestmark = pytest.mark.timeout(60)


def two_flavors(*extra: dict[str, Any]) -> Sim:
    return Sim().add(flavor("f1"), flavor("f2"), *extra)


# --- order and resource groups --------------------------------------------------------------


def test_first_flavor_in_queue_order_that_fits_wins() -> None:
    sim = two_flavors().queue(cq("q", {"f2": {"cpu": 10}, "f1": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1)).settle()
    assert sim.flavors("a") == {"cpu": "f2"}


def test_a_full_flavor_falls_through_to_the_next() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 2}, "f2": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=2), wl("b", "q", cpu=2)).settle()
    assert (sim.flavors("a"), sim.flavors("b")) == ({"cpu": "f1"}, {"cpu": "f2"})


def test_resources_of_one_group_share_a_flavor() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10, "memory": "1Gi"}, "f2": {"cpu": 10, "memory": "8Gi"}}))
    sim.add(wl("a", "q", cpu=1, memory="2Gi")).settle()
    assert sim.flavors("a") == {"cpu": "f2", "memory": "f2"}


def test_each_resource_group_gets_its_own_flavor() -> None:
    sim = Sim().add(flavor("cpu-f"), flavor("mem-a"), flavor("mem-b"))
    sim.queue(cq("q", {"cpu-f": {"cpu": 10}, "mem-a": {"memory": "1Gi"}, "mem-b": {"memory": "8Gi"}}))
    sim.add(wl("a", "q", cpu=1, memory="2Gi")).settle()
    assert sim.flavors("a") == {"cpu": "cpu-f", "memory": "mem-b"}


def test_later_pod_sets_see_the_usage_of_earlier_ones() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 3}, "f2": {"cpu": 10}}))
    sim.add(wl("a", "q", pod_sets=[pod_set("driver", 1, {"cpu": 2}), pod_set("workers", 1, {"cpu": 2})])).settle()
    assert sim.flavors("a", "driver") == {"cpu": "f1"}
    assert sim.flavors("a", "workers") == {"cpu": "f2"}


def test_resume_from_the_flavor_after_the_last_tried_one() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10}, "f2": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1))
    info = sim.engine.infos["team/a"]
    info.last_assignment = [{"cpu": 0}]  # a previous attempt stopped at f1
    info.last_cycle = sim.engine.scheduler.cycle
    sim.settle()
    assert sim.flavors("a") == {"cpu": "f2"}


def test_skipped_workload_keeps_its_scan_progress_for_the_next_cycle() -> None:
    # a (in qa) fits f1 only by borrowing qb's f1 and stops there; b (no borrowing) is processed first
    # in the same cycle and takes f1, so a is skipped. Next cycle a resumes after f1 even though b is gone.
    sim = two_flavors().queue(
        cq("qa", {"f1": {"cpu": 0}, "f2": {"cpu": 10}}, cohort="co"),
        cq("qb", {"f1": {"cpu": 4}}, cohort="co"),
    )
    sim.add(wl("a", "qa", cpu=4), wl("b", "qb", cpu=4))
    sim.cycle()
    assert sim.reserved() == {"b"}
    assert sim.engine.infos["team/a"].last_assignment == [{"cpu": 0}]
    sim.finish("b").settle()
    assert sim.flavors("a") == {"cpu": "f2"}


def test_scan_progress_is_dropped_when_the_workload_changes_shape() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10}, "f2": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1, priority=0))
    sim.engine.infos["team/a"].last_assignment = [{"cpu": 0}]
    sim.update(wl("a", "q", cpu=2, priority=0)).settle()  # a spec update re-queues from scratch
    assert sim.flavors("a") == {"cpu": "f1"}


# --- eligibility -----------------------------------------------------------------------------


def test_node_selector_picks_the_matching_flavor() -> None:
    sim = Sim().add(flavor("spot", {"pool": "spot"}), flavor("on-demand", {"pool": "on-demand"}))
    sim.queue(cq("q", {"spot": {"cpu": 10}, "on-demand": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1, node_selector={"pool": "on-demand"})).settle()
    assert sim.flavors("a") == {"cpu": "on-demand"}


def test_node_selector_is_restricted_to_the_flavors_own_label_keys() -> None:
    # "zone" is not a label of f1, so the selector says nothing about f1; f2 has zone=b and is excluded.
    sim = Sim().add(flavor("f1", {"instance": "spot"}), flavor("f2", {"zone": "b"}))
    sim.queue(cq("q", {"f2": {"cpu": 10}, "f1": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1, node_selector={"zone": "a"})).settle()
    assert sim.flavors("a") == {"cpu": "f1"}


def test_required_affinity_terms_are_ored_and_filtered_by_flavor_keys() -> None:
    sim = Sim().add(flavor("f1", {"zone": "a"}), flavor("f2", {"zone": "b"}))
    sim.queue(cq("q", {"f1": {"cpu": 10}, "f2": {"cpu": 10}}))
    terms = [[{"key": "zone", "operator": "In", "values": ["c"]}], [{"key": "zone", "operator": "In", "values": ["b"]}]]
    sim.add(wl("a", "q", cpu=1, affinity_terms=terms)).settle()
    assert sim.flavors("a") == {"cpu": "f2"}


def test_affinity_term_left_empty_after_filtering_matches_every_flavor() -> None:
    sim = Sim().add(flavor("f1", {"zone": "a"}), flavor("f2", {"zone": "b"}))
    sim.queue(cq("q", {"f1": {"cpu": 10}, "f2": {"cpu": 10}}))
    terms = [[{"key": "zone", "operator": "In", "values": ["b"]}], [{"key": "gpu-model", "operator": "In", "values": ["x"]}]]
    sim.add(wl("a", "q", cpu=1, affinity_terms=terms)).settle()
    assert sim.flavors("a") == {"cpu": "f1"}


def test_untolerated_no_schedule_taint_excludes_the_flavor() -> None:
    sim = Sim().add(flavor("tainted", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}]), flavor("plain"))
    sim.queue(cq("q", {"tainted": {"cpu": 10}, "plain": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1)).settle()
    assert sim.flavors("a") == {"cpu": "plain"}


def test_pod_toleration_allows_a_tainted_flavor() -> None:
    sim = Sim().add(flavor("tainted", taints=[{"key": "gpu", "value": "true", "effect": "NoExecute"}]), flavor("plain"))
    sim.queue(cq("q", {"tainted": {"cpu": 10}, "plain": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1, tolerations=[{"key": "gpu", "operator": "Equal", "value": "true"}])).settle()
    assert sim.flavors("a") == {"cpu": "tainted"}


def test_flavor_tolerations_count_as_the_pods_own() -> None:
    sim = Sim().add(
        flavor("tainted", taints=[{"key": "gpu", "effect": "NoSchedule"}], tolerations=[{"key": "gpu", "operator": "Exists"}]),
        flavor("plain"),
    )
    sim.queue(cq("q", {"tainted": {"cpu": 10}, "plain": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1)).settle()
    assert sim.flavors("a") == {"cpu": "tainted"}


def test_prefer_no_schedule_taints_are_ignored() -> None:
    sim = Sim().add(flavor("soft", taints=[{"key": "x", "effect": "PreferNoSchedule"}]))
    sim.queue(cq("q", {"soft": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1)).settle()
    assert sim.flavors("a") == {"cpu": "soft"}


# --- fungibility -----------------------------------------------------------------------------


def borrowing_setup(**fungibility: Any) -> Sim:
    """q has f1 only by borrowing (nominal 0, lender has 10) and f2 within nominal."""
    sim = two_flavors().queue(
        cq("q", {"f1": {"cpu": 0}, "f2": {"cpu": 10}}, cohort="co", **fungibility),
        cq("lender", {"f1": {"cpu": 10}}, cohort="co"),
    )
    return sim


def test_may_stop_search_takes_the_first_flavor_even_when_borrowing() -> None:
    sim = borrowing_setup()
    sim.add(wl("a", "q", cpu=2)).settle()
    assert sim.flavors("a") == {"cpu": "f1"}


def test_when_can_borrow_try_next_flavor_prefers_a_flavor_without_borrowing() -> None:
    sim = borrowing_setup(when_can_borrow="TryNextFlavor")
    sim.add(wl("a", "q", cpu=2)).settle()
    assert sim.flavors("a") == {"cpu": "f2"}


def test_when_can_borrow_try_next_flavor_falls_back_to_borrowing() -> None:
    sim = borrowing_setup(when_can_borrow="TryNextFlavor")
    sim.add(wl("big", "q", cpu=10), wl("a", "q", cpu=2)).settle()
    assert sim.flavors("big") == {"cpu": "f2"}
    assert sim.flavors("a") == {"cpu": "f1"}  # f2 is full; borrowing on f1 is the best left


def preempt_setup(**fungibility: Any) -> Sim:
    """q: f1 (4 cpu) is full with a low-priority workload, f2 (4 cpu) is empty; preemption within q allowed."""
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 4}, "f2": {"cpu": 4}}, within="LowerPriority", **fungibility))
    sim.add(reserved(wl("low", "q", cpu=4, priority=0), "q", {"cpu": "f1"}))
    return sim


def test_default_when_can_preempt_tries_the_next_flavor_instead_of_preempting() -> None:
    sim = preempt_setup()
    sim.add(wl("high", "q", cpu=4, priority=10)).settle()
    assert sim.flavors("high") == {"cpu": "f2"}
    assert sim.state("low") == "admitted"
    assert sim.preempted() == {}


def test_when_can_preempt_may_stop_search_preempts_on_the_first_flavor() -> None:
    sim = preempt_setup(when_can_preempt="MayStopSearch")
    sim.add(wl("high", "q", cpu=4, priority=10)).settle()
    assert sim.preempted() == {"low": "InClusterQueue"}
    assert sim.flavors("high") == {"cpu": "f1"}


def test_may_stop_search_without_candidates_falls_through() -> None:
    sim = preempt_setup(when_can_preempt="MayStopSearch")
    sim.add(wl("equal", "q", cpu=4, priority=0)).settle()  # cannot preempt an equal priority
    assert sim.flavors("equal") == {"cpu": "f2"}
    assert sim.state("low") == "admitted"


def test_when_all_flavors_need_preemption_the_best_one_is_used() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 4}, "f2": {"cpu": 4}}, within="LowerPriority"))
    sim.add(reserved(wl("mid", "q", cpu=4, priority=5), "q", {"cpu": "f1"}),
            reserved(wl("low", "q", cpu=4, priority=0), "q", {"cpu": "f2"}))
    sim.add(wl("high", "q", cpu=4, priority=10))
    sim.cycle()
    # Both flavors need preempting one workload; equal modes keep the first flavor scanned.
    assert sim.preempted() == {"mid": "InClusterQueue"}
    sim.cycle()
    assert sim.flavors("high") == {"cpu": "f1"}


def preference_setup(preference: str) -> Sim:
    """f1: fits only after preempting within q (no borrowing); f2: fits now but only by borrowing."""
    sim = two_flavors().queue(
        cq("q", {"f1": {"cpu": 4}, "f2": {"cpu": 0}}, cohort="co", within="LowerPriority",
           when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor", preference=preference),
        cq("lender", {"f1": {"cpu": 0}, "f2": {"cpu": 10}}, cohort="co"),
    )
    sim.add(reserved(wl("low", "q", cpu=4, priority=0), "q", {"cpu": "f1"}))
    return sim


def test_borrowing_over_preemption_prefers_borrowing() -> None:
    sim = preference_setup("BorrowingOverPreemption")
    sim.add(wl("high", "q", cpu=4, priority=10)).settle()
    assert sim.flavors("high") == {"cpu": "f2"}
    assert sim.state("low") == "admitted"


def test_preemption_over_borrowing_prefers_preempting() -> None:
    sim = preference_setup("PreemptionOverBorrowing")
    sim.add(wl("high", "q", cpu=4, priority=10)).settle()
    assert sim.flavors("high") == {"cpu": "f1"}
    assert sim.condition("low", "Preempted") is not None


MSS, TNF = "MayStopSearch", "TryNextFlavor"


@pytest.mark.parametrize(
    ("mode", "borrow_policy", "preempt_policy", "try_next"),
    [
        (Granular(PMode.FIT, 0), TNF, TNF, False),  # fits without borrowing: always stop
        (Granular(PMode.FIT, 1), MSS, TNF, False),
        (Granular(PMode.FIT, 1), TNF, TNF, True),
        (Granular(PMode.PREEMPT, 0), MSS, MSS, False),
        (Granular(PMode.PREEMPT, 0), MSS, TNF, True),
        (Granular(PMode.RECLAIM, 1), TNF, MSS, True),  # preempting while borrowing with whenCanBorrow=TryNextFlavor
        (Granular(PMode.RECLAIM, 1), MSS, MSS, False),
        (Granular(PMode.NO_CANDIDATES, 0), MSS, MSS, True),
        (Granular(PMode.NO_FIT, 0), MSS, MSS, True),
    ],
)
def test_should_try_next_flavor(mode: Granular, borrow_policy: str, preempt_policy: str, try_next: bool) -> None:
    assert should_try_next_flavor(mode, FlavorFungibility(borrow_policy, preempt_policy)) is try_next


BOP = FlavorFungibility(TNF, TNF, "BorrowingOverPreemption")
POB = FlavorFungibility(TNF, TNF, "PreemptionOverBorrowing")


@pytest.mark.parametrize(
    ("a", "b", "ff", "preferred"),
    [
        (Granular(PMode.NO_FIT, 0), Granular(PMode.NO_FIT, 0), BOP, False),
        (Granular(PMode.NO_CANDIDATES, 0), Granular(PMode.NO_FIT, 0), BOP, True),
        (Granular(PMode.PREEMPT, 5), Granular(PMode.NO_CANDIDATES, 0), POB, True),  # any viable mode beats no candidates
        (Granular(PMode.FIT, 2), Granular(PMode.RECLAIM, 0), BOP, True),
        (Granular(PMode.FIT, 2), Granular(PMode.RECLAIM, 0), POB, False),
        (Granular(PMode.RECLAIM, 0), Granular(PMode.PREEMPT, 0), BOP, True),
        (Granular(PMode.RECLAIM, 0), Granular(PMode.PREEMPT, 0), POB, True),
        (Granular(PMode.FIT, 1), Granular(PMode.FIT, 2), BOP, True),
        (Granular(PMode.PREEMPT, 1), Granular(PMode.FIT, 2), POB, True),
        (Granular(PMode.FIT, 1), Granular(PMode.FIT, 1), BOP, False),  # equal is not better
    ],
)
def test_is_preferred(a: Granular, b: Granular, ff: FlavorFungibility, preferred: bool) -> None:
    assert is_preferred(a, b, ff) is preferred


def test_default_preference_is_borrowing_over_preemption() -> None:
    unset = FlavorFungibility(TNF, TNF)
    a, b = Granular(PMode.FIT, 2), Granular(PMode.PREEMPT, 0)
    assert is_preferred(a, b, unset) == is_preferred(a, b, BOP) is True


# --- NoFit reasons ---------------------------------------------------------------------------


def test_no_matching_flavor_reason() -> None:
    sim = Sim().add(flavor("f1", {"pool": "a"})).queue(cq("q", {"f1": {"cpu": 10}}))
    sim.add(wl("a", "q", cpu=1, node_selector={"pool": "b"})).settle()
    assert sim.state("a") == "pending"
    assert sim.reason("a") == "NoMatchingFlavor"
    assert "doesn't match node affinity" in (sim.condition("a", "QuotaReserved").message or "")  # type: ignore[union-attr]


def test_exceeds_max_quota_reason() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 4}}))
    sim.add(wl("a", "q", cpu=5)).settle()
    assert sim.reason("a") == "ExceedsMaxQuota"
    assert "> maximum capacity (4)" in sim.condition("a", "QuotaReserved").message  # type: ignore[union-attr]


def test_waiting_for_quota_reason() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 4}}))
    sim.add(reserved(wl("running", "q", cpu=3), "q", {"cpu": "f1"}), wl("a", "q", cpu=2)).settle()
    assert sim.reason("a") == "WaitingForQuota"
    assert "1 more needed" in sim.condition("a", "QuotaReserved").message  # type: ignore[union-attr]


def test_least_severe_reason_among_a_groups_flavors() -> None:
    # f1 doesn't match (NoMatchingFlavor), f2 is merely busy (WaitingForQuota): the group waits for quota.
    sim = Sim().add(flavor("f1", {"pool": "x"}), flavor("f2")).queue(cq("q", {"f1": {"cpu": 10}, "f2": {"cpu": 4}}))
    sim.add(reserved(wl("running", "q", cpu=4), "q", {"cpu": "f2"}), wl("a", "q", cpu=2, node_selector={"pool": "y"}))
    sim.settle()
    assert sim.reason("a") == "WaitingForQuota"


def test_most_severe_reason_across_groups() -> None:
    # cpu would only wait for quota, but memory exceeds the maximum: ExceedsMaxQuota.
    sim = Sim().add(flavor("c"), flavor("m")).queue(cq("q", {"c": {"cpu": 4}, "m": {"memory": "1Gi"}}))
    sim.add(reserved(wl("running", "q", cpu=4, memory="1"), "q", {"cpu": "c", "memory": "m"}),
            wl("a", "q", cpu=1, memory="2Gi")).settle()
    assert sim.reason("a") == "ExceedsMaxQuota"


def test_uncovered_resource_is_unavailable() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10}}))
    sim.add(wl("a", "q", requests={"cpu": 1, "example.com/gpu": 1})).settle()
    assert sim.state("a") == "pending"
    assert "resource example.com/gpu unavailable in ClusterQueue" in sim.condition("a", "QuotaReserved").message  # type: ignore[union-attr]
    # It can never fit there: not a reason that tells the user to wait (cpu, covered, would fit).
    assert sim.reason("a") == "NoMatchingFlavor"


def test_zero_request_for_an_uncovered_resource_is_ignored() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10}}))
    sim.add(wl("a", "q", requests={"cpu": 1, "example.com/gpu": 0})).settle()
    assert sim.flavors("a") == {"cpu": "f1"}


def test_ignore_undeclared_admits_and_does_not_count_uncovered_resources() -> None:
    sim = Sim({"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}).add(flavor("f1"))
    sim.queue(cq("q", {"f1": {"cpu": 10}}))
    sim.add(wl("a", "q", requests={"cpu": 1, "example.com/gpu": 1})).settle()
    assert sim.flavors("a") == {"cpu": "f1"}
    assert sim.usage("q") == {("f1", "cpu"): 1000}


def test_pods_quota_counts_pods() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 100, "pods": 5}}))
    sim.add(wl("a", "q", cpu=1, count=3), wl("b", "q", cpu=1, count=3)).settle()
    assert sim.reserved() == {"a"}
    assert sim.usage("q") == {("f1", "cpu"): 3000, ("f1", "pods"): 3}


# --- partial admission -----------------------------------------------------------------------


def test_partial_admission_takes_the_largest_count_that_fits() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 6}}))
    sim.add(wl("a", "q", cpu=1, count=10, min_count=4)).settle()
    assert sim.state("a") == "admitted"
    adm = sim.workload("a").status.admission
    assert adm is not None and adm.pod_set_assignments[0].count == 6
    assert sim.usage("q") == {("f1", "cpu"): 6000}


def test_partial_admission_never_goes_below_min_count() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 3}}))
    sim.add(wl("a", "q", cpu=1, count=10, min_count=4)).settle()
    assert sim.state("a") == "pending"


def test_partial_admission_off_needs_the_full_count() -> None:
    sim = Sim({"featureGates": {"PartialAdmission": False}}).add(flavor("f1")).queue(cq("q", {"f1": {"cpu": 6}}))
    sim.add(wl("a", "q", cpu=1, count=10, min_count=4)).settle()
    assert sim.state("a") == "pending"


def test_partial_admission_is_not_used_when_the_full_count_can_preempt() -> None:
    sim = two_flavors().queue(cq("q", {"f1": {"cpu": 10}}, within="LowerPriority"))
    sim.add(reserved(wl("low", "q", cpu=4, priority=0), "q", {"cpu": "f1"}))
    sim.add(wl("a", "q", cpu=1, count=10, min_count=2, priority=5)).settle()
    assert sim.preempted() == {"low": "InClusterQueue"}
    adm = sim.workload("a").status.admission
    assert adm is not None and adm.pod_set_assignments[0].count == 10


def test_nominate_reports_mode_and_borrowing_level() -> None:
    sim = borrowing_setup()
    sim.add(wl("a", "q", cpu=2))
    assignment, targets = sim.nominate("a")
    assert (assignment.mode(), assignment.borrowing, targets) == (Mode.FIT, 1, [])
