"""Classic preemption (kueue-semantics §6.1, §6.2): a test per policy, victim ordering, the minimal
set, the nominal-quota rule and the worked example."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import Sim, cq, flavor, reserved, target_names, wl

from hub.engine.flavors import Mode

pytestmark = pytest.mark.timeout(60)


def running(name: str, queue: str, cpu: int, priority: int = 0, at: float = 0.0, created: float | None = None) -> dict[str, Any]:
    return reserved(wl(name, queue, cpu=cpu, priority=priority, created=created), queue, {"cpu": "f"}, at=at)


def standalone(**preemption: Any) -> Sim:
    return Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, **preemption))


def lender_and_borrower(**preemption: Any) -> Sim:
    """"a" lends 4 of its nominal 4 to "b" (nominal 0), which is using it."""
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", **preemption),
        cq("b", {"f": {"cpu": 0}}, cohort="co"),
    )
    return sim


# --- withinClusterQueue ----------------------------------------------------------------------


def test_within_cluster_queue_never_does_not_preempt() -> None:
    sim = standalone()
    sim.add(running("low", "q", 4, priority=0), wl("high", "q", cpu=4, priority=100)).settle()
    assert sim.preempted() == {}
    assert sim.state("high") == "pending"


def test_within_cluster_queue_lower_priority_preempts_lower_priority() -> None:
    sim = standalone(within="LowerPriority")
    sim.add(running("low", "q", 4, priority=0), wl("high", "q", cpu=4, priority=1)).settle()
    assert sim.preempted() == {"low": "InClusterQueue"}
    assert sim.reserved() == {"high"}


def test_within_cluster_queue_lower_priority_spares_equal_priority() -> None:
    sim = standalone(within="LowerPriority")
    sim.add(running("old", "q", 4, priority=3, created=10), wl("new", "q", cpu=4, priority=3, created=0)).settle()
    assert sim.preempted() == {}


def test_lower_or_newer_equal_priority_preempts_a_newer_equal() -> None:
    sim = standalone(within="LowerOrNewerEqualPriority")
    sim.add(running("newer", "q", 4, priority=3, created=10), wl("older", "q", cpu=4, priority=3, created=0)).settle()
    assert sim.preempted() == {"newer": "InClusterQueue"}


def test_lower_or_newer_equal_priority_spares_an_older_equal() -> None:
    sim = standalone(within="LowerOrNewerEqualPriority")
    sim.add(running("older", "q", 4, priority=3, created=0), wl("newer", "q", cpu=4, priority=3, created=10)).settle()
    assert sim.preempted() == {}


def test_lower_or_newer_equal_priority_spares_a_higher_priority() -> None:
    sim = standalone(within="LowerOrNewerEqualPriority")
    sim.add(running("higher", "q", 4, priority=5, created=10), wl("w", "q", cpu=4, priority=3, created=0)).settle()
    assert sim.preempted() == {}


# --- reclaimWithinCohort ---------------------------------------------------------------------


def test_reclaim_never_leaves_borrowers_alone() -> None:
    sim = lender_and_borrower()
    sim.add(running("borrower", "b", 4, priority=0), wl("owner", "a", cpu=4, priority=100)).settle()
    assert sim.preempted() == {}
    assert sim.state("owner") == "pending"


def test_reclaim_lower_priority_takes_back_from_lower_priority_borrowers() -> None:
    sim = lender_and_borrower(reclaim="LowerPriority")
    sim.add(running("borrower", "b", 4, priority=0), wl("owner", "a", cpu=4, priority=1)).settle()
    assert sim.preempted() == {"borrower": "InCohortReclamation"}
    assert sim.reserved() == {"owner"}


def test_reclaim_lower_priority_spares_equal_priority_borrowers() -> None:
    sim = lender_and_borrower(reclaim="LowerPriority")
    sim.add(running("borrower", "b", 4, priority=1), wl("owner", "a", cpu=4, priority=1)).settle()
    assert sim.preempted() == {}


def test_reclaim_any_takes_back_even_from_higher_priority_borrowers() -> None:
    sim = lender_and_borrower(reclaim="Any")
    sim.add(running("borrower", "b", 4, priority=100), wl("owner", "a", cpu=4, priority=0)).settle()
    assert sim.preempted() == {"borrower": "InCohortReclamation"}
    assert sim.reserved() == {"owner"}


def test_reclaim_only_from_queues_that_borrow() -> None:
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", reclaim="Any"),
        cq("b", {"f": {"cpu": 4}}, cohort="co"),
    )
    # a lends 2 to b, which uses 6 (borrowing 2); a's 4-cpu workload only needs the 2 back.
    sim.add(running("a-run", "a", 2), running("b-in-nominal", "b", 4, at=1), running("b-borrowed", "b", 2, at=2))
    sim.add(wl("owner", "a", cpu=2)).settle()
    assert sim.preempted() == {"b-borrowed": "InCohortReclamation"}


def test_no_reclaim_from_a_queue_within_its_nominal() -> None:
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", reclaim="Any"),
        cq("b", {"f": {"cpu": 4}}, cohort="co"),
    )
    sim.add(running("a-run", "a", 4), running("b-run", "b", 4), wl("extra", "a", cpu=2)).settle()
    assert sim.preempted() == {}
    assert sim.state("extra") == "pending"


# --- borrowWithinCohort ----------------------------------------------------------------------


def borrowers_cohort(priority: int = 0, **options: Any) -> Sim:
    """a (nominal 2, empty) and c (nominal 2) lend to b (nominal 0), whose "b-run" uses all 4."""
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 2}}, cohort="co", reclaim="Any", **options),
        cq("b", {"f": {"cpu": 0}}, cohort="co"),
        cq("c", {"f": {"cpu": 2}}, cohort="co"),
    )
    sim.add(running("b-run", "b", 4, priority=priority))
    return sim


def test_request_within_nominal_reclaims_from_a_borrower() -> None:
    sim = borrowers_cohort()
    sim.add(wl("w", "a", cpu=2, priority=10)).settle()
    assert sim.preempted() == {"b-run": "InCohortReclamation"}
    assert sim.state("w") == "admitted"


def test_preemptor_above_its_nominal_does_not_preempt_without_borrow_within_cohort() -> None:
    # Removing b-run would make room, but 4 > a's nominal 2 and borrowWithinCohort is Never.
    sim = borrowers_cohort()
    sim.add(wl("big", "a", cpu=4, priority=10)).settle()
    assert sim.preempted() == {}
    assert sim.state("big") == "pending"
    assert sim.reason("big") == "WaitingForQuota"
    assignment, targets = sim.nominate("big")
    assert (assignment.mode(), targets) == (Mode.NO_FIT, [])


def test_borrow_within_cohort_preempts_lower_priority_while_borrowing() -> None:
    sim = borrowers_cohort(borrow_within="LowerPriority")
    sim.add(wl("big", "a", cpu=4, priority=10)).settle()
    assert sim.preempted() == {"b-run": "InCohortReclaimWhileBorrowing"}
    assert sim.state("big") == "admitted"


def test_borrow_within_cohort_spares_equal_priority() -> None:
    sim = borrowers_cohort(priority=10, borrow_within="LowerPriority")
    sim.add(wl("big", "a", cpu=4, priority=10)).settle()
    assert sim.preempted() == {}


def test_borrow_within_cohort_spares_priorities_above_the_threshold() -> None:
    sim = borrowers_cohort(priority=5, borrow_within="LowerPriority", threshold=3)
    sim.add(wl("big", "a", cpu=4, priority=10)).settle()
    assert sim.preempted() == {}


def test_borrow_within_cohort_preempts_at_or_below_the_threshold() -> None:
    sim = borrowers_cohort(priority=5, borrow_within="LowerPriority", threshold=5)
    sim.add(wl("big", "a", cpu=4, priority=10)).settle()
    assert sim.preempted() == {"b-run": "InCohortReclaimWhileBorrowing"}


def test_threshold_does_not_limit_reclaiming_within_nominal() -> None:
    sim = borrowers_cohort(priority=50, borrow_within="LowerPriority", threshold=0)
    sim.add(wl("w", "a", cpu=2, priority=10)).settle()
    assert sim.preempted() == {"b-run": "InCohortReclamation"}


# --- victim ordering -------------------------------------------------------------------------


def test_already_evicted_candidates_come_first() -> None:
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(cq("q", {"f": {"cpu": 8}}, within="LowerPriority"))
    sim.add(running("low", "q", 4, priority=0), running("mid", "q", 4, priority=1))
    sim.evict("mid")  # still stopping, still holding quota
    sim.add(wl("high", "q", cpu=4, priority=5))
    _, targets = sim.nominate("high")
    assert target_names(targets) == {"mid": "InClusterQueue"}


def test_other_queues_come_before_the_preemptors_own() -> None:
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", within="LowerPriority", reclaim="Any"),
        cq("b", {"f": {"cpu": 0}}, cohort="co"),
    )
    sim.add(running("own-low", "a", 2, priority=0), running("other-high", "b", 2, priority=50))
    sim.add(wl("w", "a", cpu=2, priority=10))
    _, targets = sim.nominate("w")
    assert target_names(targets) == {"other-high": "InCohortReclamation"}


def test_lower_priority_comes_first() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 8}}, within="LowerPriority"))
    sim.add(running("p2", "q", 4, priority=2, at=0), running("p1", "q", 4, priority=1, at=5))
    sim.add(wl("high", "q", cpu=4, priority=5))
    _, targets = sim.nominate("high")
    assert target_names(targets) == {"p1": "InClusterQueue"}


def test_most_recently_reserved_comes_first() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 8}}, within="LowerPriority"))
    sim.add(running("earlier", "q", 4, at=10), running("later", "q", 4, at=20))
    sim.add(wl("high", "q", cpu=4, priority=5))
    _, targets = sim.nominate("high")
    assert target_names(targets) == {"later": "InClusterQueue"}


def test_minimal_set_fills_back_victims_that_are_not_needed() -> None:
    # Candidates in order: a (lowest), b; removing a alone is not enough, removing b as well fits,
    # and then a can be put back: only b is preempted.
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 10}}, within="LowerPriority"))
    sim.add(running("a", "q", 2, priority=1), running("b", "q", 4, priority=2), running("c", "q", 4, priority=3))
    sim.add(wl("w", "q", cpu=4, priority=10))
    _, targets = sim.nominate("w")
    assert target_names(targets) == {"b": "InClusterQueue"}


def test_minimal_set_keeps_every_victim_that_is_needed() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 10}}, within="LowerPriority"))
    sim.add(running("a", "q", 2, priority=1), running("b", "q", 4, priority=2), running("c", "q", 4, priority=3))
    sim.add(wl("w", "q", cpu=10, priority=10))
    _, targets = sim.nominate("w")
    assert target_names(targets) == {"a": "InClusterQueue", "b": "InClusterQueue", "c": "InClusterQueue"}


def test_fill_back_returns_an_early_victim_a_later_one_made_unnecessary() -> None:
    # Removing a, b, then c fits 8; putting b back does not fit, putting a back does: {b, c}.
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 10}}, within="LowerPriority"))
    sim.add(running("a", "q", 2, priority=1), running("b", "q", 4, priority=2), running("c", "q", 4, priority=3))
    sim.add(wl("w", "q", cpu=8, priority=10))
    _, targets = sim.nominate("w")
    assert target_names(targets) == {"b": "InClusterQueue", "c": "InClusterQueue"}


def test_no_targets_when_even_all_candidates_are_not_enough() -> None:
    sim = Sim().add(flavor("f")).queue(cq("q", {"f": {"cpu": 10}}, within="LowerPriority"))
    sim.add(running("low", "q", 4, priority=1), running("high", "q", 6, priority=20))
    sim.add(wl("w", "q", cpu=8, priority=10)).settle()
    assert sim.preempted() == {}
    assert sim.state("w") == "pending" and sim.reason("w") == "WaitingForQuota"


def test_candidates_must_use_a_contested_flavor() -> None:
    sim = Sim().add(flavor("f"), flavor("g")).queue(cq("q", {"f": {"cpu": 4}, "g": {"cpu": 4}}, within="LowerPriority",
                                                       when_can_preempt="MayStopSearch"))
    sim.add(reserved(wl("on-g", "q", cpu=4, priority=0), "q", {"cpu": "g"}),
            reserved(wl("on-f", "q", cpu=4, priority=0), "q", {"cpu": "f"}))
    sim.add(wl("high", "q", cpu=4, priority=5))
    assignment, targets = sim.nominate("high")
    assert assignment.mode() == Mode.PREEMPT
    assert target_names(targets) == {"on-f": "InClusterQueue"}


# --- the scheduler's handling ----------------------------------------------------------------


def test_preemptor_waits_for_its_victims_then_is_admitted() -> None:
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(cq("q", {"f": {"cpu": 4}}, within="LowerPriority"))
    sim.add(running("low", "q", 4), wl("high", "q", cpu=4, priority=5))
    sim.cycle()
    assert sim.preempted() == {"low": "InClusterQueue"}
    evicted = sim.condition("low", "Evicted")
    assert evicted is not None and evicted.is_true and evicted.reason == "Preempted"
    preempted = sim.condition("low", "Preempted")
    assert preempted is not None and "uid-high" in preempted.message and "/q" in preempted.message
    sim.cycle()
    assert sim.state("high") == "pending"  # the victim still holds its quota
    sim.stopped("low")
    sim.cycle()
    assert sim.reserved() == {"high"}


def test_two_preemptors_do_not_claim_the_same_victim_in_one_cycle() -> None:
    sim = Sim(hold_evicted=True).add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", reclaim="Any"),
        cq("c", {"f": {"cpu": 4}}, cohort="co", reclaim="Any"),
        cq("b", {"f": {"cpu": 0}}, cohort="co"),
    )
    sim.add(running("a-run", "a", 2), running("c-run", "c", 2), running("borrower", "b", 4))
    sim.add(wl("wa", "a", cpu=2), wl("wc", "c", cpu=2))
    sim.cycle()
    assert sim.preempted() == {"borrower": "InCohortReclamation"}
    skipped = [n for n in ("wa", "wc") if "overlapping preemption targets" in (sim.condition(n, "QuotaReserved").message or "")]  # type: ignore[union-attr]
    assert len(skipped) == 1


def test_unreclaimable_preempting_head_holds_capacity_for_this_cycle() -> None:
    # "needy" needs preemption but finds no victim; with reclaimWithinCohort != Any it keeps what it
    # could use of its nominal quota this cycle, so a lower entry in the cohort cannot take it.
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 4}}, cohort="co", within="LowerPriority", reclaim="LowerPriority"),
        cq("b", {"f": {"cpu": 0}}, cohort="co"),
    )
    sim.add(running("a-high", "a", 2, priority=100), wl("needy", "a", cpu=4, priority=10), wl("b-small", "b", cpu=2))
    sim.cycle()
    assert sim.state("b-small") == "pending"
    assert sim.reason("needy") == "WaitingForQuota"


# --- the worked example ----------------------------------------------------------------------


def test_worked_example_of_kueue_semantics_section_6_2() -> None:
    sim = Sim().add(flavor("f")).queue(
        cq("a", {"f": {"cpu": 10}}, cohort="co", within="LowerPriority", reclaim="Any"),
        cq("b", {"f": {"cpu": 10}}, cohort="co"),
    )
    sim.add(running("b1", "b", 4, at=1), running("b2", "b", 4, at=2), running("b3", "b", 4, at=3),
            running("w1", "a", 4, at=1), running("w2", "a", 2, at=2))
    sim.add(wl("x", "a", cpu=6, priority=10))
    assert sim.available("a", ("f", "cpu")) == 2000
    assignment, targets = sim.nominate("x")
    assert assignment.mode() == Mode.PREEMPT
    assert target_names(targets) == {"b3": "InCohortReclamation", "w2": "InClusterQueue"}
    sim.settle()
    assert sim.preempted() == {"b3": "InCohortReclamation", "w2": "InClusterQueue"}
    # w2 comes back by borrowing the 2 cpu that b no longer uses; b3 waits.
    assert sim.reserved() == {"x", "w1", "w2", "b1", "b2"}


# --- hierarchical cohorts --------------------------------------------------------------------


def hierarchy(**preemption: Any) -> Sim:
    """root -> {left (own quota 4, lent to root) -> {a (nominal 0)}, b (nominal 0)}; b borrows left's 4."""
    from engine_helpers import cohort

    sim = Sim().add(flavor("f"), cohort("left", {"f": {"cpu": 4}}, parent="root"))
    sim.queue(cq("a", {"f": {"cpu": 0}}, cohort="left", **preemption), cq("b", {"f": {"cpu": 0}}, cohort="root"))
    sim.add(running("b-run", "b", 4, priority=100))
    return sim


def test_subtree_quota_gives_hierarchical_advantage_over_an_outside_borrower() -> None:
    # a borrows (nominal 0) but only from its own cohort, which has the 4 cpu b is using:
    # a reclaims them regardless of priority, without borrowWithinCohort.
    sim = hierarchy(reclaim="Any")
    sim.add(wl("w", "a", cpu=4, priority=0))
    assignment, targets = sim.nominate("w")
    assert (assignment.mode(), assignment.borrowing) == (Mode.PREEMPT, 1)
    assert target_names(targets) == {"b-run": "InCohortReclamation"}
    sim.settle()
    assert sim.reserved() == {"w"}


def test_hierarchical_advantage_still_needs_the_reclaim_policy() -> None:
    sim = hierarchy(reclaim="LowerPriority")
    sim.add(wl("w", "a", cpu=4, priority=0)).settle()
    assert sim.preempted() == {}


def test_request_larger_than_the_subtree_has_no_advantage() -> None:
    sim = hierarchy(reclaim="Any")
    sim.add(wl("w", "a", cpu=5, priority=0)).settle()
    assert sim.preempted() == {}
    assert sim.reason("w") == "ExceedsMaxQuota"
