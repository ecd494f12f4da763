"""Every pending workload says why, with the amounts (issue: "3 requested, 1 available in cq-a and its cohort")."""

from __future__ import annotations

from engine_helpers import Sim, cq, flavor, wl


def test_reason_carries_requested_and_available_in_the_cohort() -> None:
    sim = (
        Sim()
        .add(flavor("on-demand"))
        .queue(cq("cq-a", {"on-demand": {"cpu": 2}}, cohort="team"), cq("cq-b", {"on-demand": {"cpu": 1}}, cohort="team"))
    )
    sim.add(wl("first", "cq-a", cpu=2)).settle()
    sim.add(wl("second", "cq-a", cpu=3)).settle()  # 1 cpu left in the cohort (cq-b lends it)
    cond = sim.condition("second", "QuotaReserved")
    assert cond is not None
    assert "insufficient unused quota for cpu in flavor on-demand, 2 more needed" in cond.message
    assert "(3 requested, 1 available in cq-a and its cohort)" in cond.message


def test_reason_without_cohort_names_only_the_queue() -> None:
    sim = Sim().add(flavor("on-demand")).queue(cq("solo", {"on-demand": {"cpu": 4}}))
    sim.add(wl("a", "solo", cpu=3)).settle()
    sim.add(wl("b", "solo", cpu=2)).settle()
    cond = sim.condition("b", "QuotaReserved")
    assert cond is not None
    assert "(2 requested, 1 available in solo)" in cond.message
