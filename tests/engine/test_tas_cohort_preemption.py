"""TAS preemption across a cohort (Kueue's findCandidates with reclaimWithinCohort and a TAS fit check):
a gang whose quota fits but whose nodes are taken reclaims them from ClusterQueues of its cohort that
borrow, never from one within its nominal quota, and only as the policy allows."""

from __future__ import annotations

import pytest
from engine_helpers import Sim, cq, local_queue
from test_tas_engine import RACK, node, placement, tas_flavor, tas_wl, topology

pytestmark = pytest.mark.timeout(60)


def cohort_cluster(reclaim: str = "Any", b_nominal: int = 1) -> Sim:
    """Two racks of 4 cpus; team-a (8 cpus) may reclaim; team-b (``b_nominal``) runs a 3-pod workload first."""
    sim = Sim().add(topology(), tas_flavor(), *[node(f"r{r}-{h}", "b1", f"r{r}", 2) for r in (1, 2) for h in "ab"])
    sim.add(cq("team-a", {"tas": {"cpu": 8}}, cohort="pool", reclaim=reclaim, within="Never"),
            cq("team-b", {"tas": {"cpu": b_nominal}}, cohort="pool"),
            local_queue("team-a", "team-a"), local_queue("team-b", "team-b"))
    sim.add(tas_wl("other", 3, queue="team-b", request={"required": RACK}))
    sim.add(tas_wl("small", 2, queue="team-a", request={"required": RACK})).settle()
    assert {"other", "small"} <= sim.admitted()
    return sim


def test_a_gang_reclaims_the_nodes_of_a_borrowing_queue_in_its_cohort() -> None:
    sim = cohort_cluster()
    other_rack = {h[0][:2] for h in placement(sim, "other")}
    sim.add(tas_wl("gang", 4, queue="team-a", request={"required": RACK})).settle()
    assert sim.preempted() == {"other": "InCohortReclamation"}
    assert "gang" in sim.admitted() and {h[0][:2] for h in placement(sim, "gang")} == other_rack
    assert "small" in sim.admitted()


def test_a_queue_within_its_nominal_quota_keeps_its_nodes() -> None:
    sim = cohort_cluster(b_nominal=3)
    sim.add(tas_wl("gang", 4, queue="team-a", request={"required": RACK})).settle()
    assert sim.preempted() == {} and "gang" in sim.pending()


@pytest.mark.parametrize(("reclaim", "priority", "preempts"),
                         [("Never", 10, False), ("LowerPriority", 0, False), ("LowerPriority", 10, True), ("Any", 0, True)])
def test_the_reclaim_policy_decides(reclaim: str, priority: int, preempts: bool) -> None:
    sim = cohort_cluster(reclaim=reclaim)
    gang = tas_wl("gang", 4, queue="team-a", request={"required": RACK})
    gang["spec"]["priority"] = priority
    sim.add(gang).settle()
    assert (sim.preempted() == {"other": "InCohortReclamation"}) is preempts
    assert ("gang" in sim.admitted()) is preempts
