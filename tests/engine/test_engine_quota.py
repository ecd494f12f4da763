"""Quota accounting over hierarchical cohorts (kueue-semantics §5): subtree and local quota, bubbling,
available, potential available and the borrowing level."""

from __future__ import annotations

import pytest
from engine_helpers import Sim, cohort, cq, wl

from hub.engine.quota import Quota, QuotaTree, find_height_of_lowest_subtree_that_fits

FR = ("default", "cpu")


def worked_example() -> QuotaTree:
    """§5.2: root -> {org (nominal 4, lendingLimit 10), b1 (8, borrowingLimit 5)}; org -> {a1 (10, lendingLimit 4), a2 (6)}."""
    tree = QuotaTree()
    tree.set_cohort("org", "root", {FR: Quota(4, None, 10)})
    tree.set_cluster_queue("b1", "root", {FR: Quota(8, 5, None)})
    tree.set_cluster_queue("a1", "org", {FR: Quota(10, None, 4)})
    tree.set_cluster_queue("a2", "org", {FR: Quota(6)})
    return tree


def test_worked_example_subtree_and_local_quotas() -> None:
    tree = worked_example()
    a1, a2, b1 = tree.cqs["a1"], tree.cqs["a2"], tree.cqs["b1"]
    org, root = tree.cohorts["org"], tree.cohorts["root"]
    assert (a1.subtree[FR], a1.local[FR]) == (10, 6)  # lends 4
    assert (a2.subtree[FR], a2.local.get(FR, 0)) == (6, 0)  # lends everything
    assert (org.subtree[FR], org.local[FR]) == (14, 4)  # 4 + 4 + 6, lends 10
    assert b1.subtree[FR] == 8
    assert root.subtree[FR] == 18
    assert a1.potential_available(FR) == 28  # 6 + (4 + 18): the whole tree


def test_worked_example_usage_within_local_quota_stops_bubbling() -> None:
    tree = worked_example()
    a1, org, root = tree.cqs["a1"], tree.cohorts["org"], tree.cohorts["root"]
    a1.add_usage(FR, 8)
    assert (a1.usage[FR], org.usage[FR], root.usage.get(FR, 0)) == (8, 2, 0)
    assert not a1.is_borrowing(FR)  # 8 <= nominal 10


def test_worked_example_available_after_a1_reserves_8() -> None:
    tree = worked_example()
    tree.cqs["a1"].add_usage(FR, 8)
    assert tree.cqs["b1"].available(FR) == 13
    assert tree.cqs["a2"].available(FR) == 20
    assert tree.cqs["a1"].available(FR) == 20


def test_worked_example_available_after_b1_borrows_to_its_limit() -> None:
    tree = worked_example()
    tree.cqs["a1"].add_usage(FR, 8)
    tree.cqs["b1"].add_usage(FR, 13)
    assert tree.cohorts["root"].usage[FR] == 13
    assert tree.cqs["b1"].is_borrowing(FR)
    assert tree.cqs["b1"].available(FR) == 0  # borrowingLimit 5 reached
    assert tree.cqs["a2"].available(FR) == 7
    assert tree.cqs["a1"].available(FR) == 7
    assert tree.cqs["a1"].potential_available(FR) == 28  # usage never changes the potential


def test_worked_example_borrow_levels() -> None:
    tree = worked_example()
    tree.cqs["a1"].add_usage(FR, 8)
    tree.cqs["b1"].add_usage(FR, 13)
    # a2 asking for 7 borrows (6 < 7) but the org subtree holds it: height(org) = 1.
    assert find_height_of_lowest_subtree_that_fits(tree.cqs["a2"], FR, 7) == (1, True)
    # Anything b1 borrows can only come from the root: height(root) = 2.
    assert find_height_of_lowest_subtree_that_fits(tree.cqs["b1"], FR, 1) == (2, False)
    # Within nominal there is no borrowing at all.
    assert find_height_of_lowest_subtree_that_fits(tree.cqs["a2"], FR, 6) == (0, True)


def test_worked_example_through_the_engine() -> None:
    sim = Sim().add(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        cohort("org", {"default": {"cpu": (4, None, 10)}}, parent="root"),
    )
    sim.queue(
        cq("b1", {"default": {"cpu": (8, 5, None)}}, cohort="root"),
        cq("a1", {"default": {"cpu": (10, None, 4)}}, cohort="org"),
        cq("a2", {"default": {"cpu": 6}}, cohort="org"),
    )
    sim.add(wl("w-a1", "a1", cpu=8)).settle()
    assert [sim.available(q, FR) for q in ("b1", "a2", "a1")] == [13_000, 20_000, 20_000]
    sim.add(wl("w-b1", "b1", cpu=14)).settle()
    assert sim.state("w-b1") == "pending"  # 14 > 13 available
    sim.add(wl("w-b1-fits", "b1", cpu=13)).settle()
    assert sim.state("w-b1-fits") == "admitted"
    assert [sim.available(q, FR) for q in ("b1", "a2", "a1")] == [0, 7_000, 7_000]


def test_lending_limit_keeps_local_quota_out_of_reach_of_siblings() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("lender", "co", {FR: Quota(10, None, 3)})
    tree.set_cluster_queue("borrower", "co", {FR: Quota(2)})
    assert tree.cqs["borrower"].available(FR) == 5  # own 2 + 3 lent
    assert tree.cqs["borrower"].potential_available(FR) == 5
    assert tree.cqs["lender"].available(FR) == 10 + 2  # local 7 + the whole cohort pool 5


def test_borrowing_limit_caps_what_comes_from_the_parent() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("a", "co", {FR: Quota(4, 1, None)})
    tree.set_cluster_queue("b", "co", {FR: Quota(10)})
    assert tree.cqs["a"].available(FR) == 5
    assert tree.cqs["a"].potential_available(FR) == 5
    tree.cqs["a"].add_usage(FR, 2)
    assert tree.cqs["a"].available(FR) == 3


def test_borrowing_limit_zero_means_no_borrowing() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("a", "co", {FR: Quota(4, 0, None)})
    tree.set_cluster_queue("b", "co", {FR: Quota(10)})
    assert tree.cqs["a"].available(FR) == 4


def test_cohort_own_quota_is_a_shared_pool() -> None:
    tree = QuotaTree()
    tree.set_cohort("co", "", {FR: Quota(5)})
    tree.set_cluster_queue("a", "co", {FR: Quota(0)})
    assert tree.cqs["a"].available(FR) == 5
    tree.cqs["a"].add_usage(FR, 5)
    assert tree.cqs["a"].is_borrowing(FR)  # using the pool above its nominal 0 is borrowing
    assert tree.cqs["a"].available(FR) == 0


def test_cohort_borrowing_limit_applies_to_the_whole_subtree() -> None:
    tree = QuotaTree()
    tree.set_cohort("team", "root", {FR: Quota(0, 2, None)})
    tree.set_cluster_queue("t1", "team", {FR: Quota(3)})
    tree.set_cluster_queue("t2", "team", {FR: Quota(3)})
    tree.set_cluster_queue("other", "root", {FR: Quota(20)})
    assert tree.cqs["t1"].available(FR) == 3 + 3 + 2
    tree.cqs["t1"].add_usage(FR, 7)
    assert tree.cqs["t2"].available(FR) == 1


def test_cohort_lending_limit_hides_subtree_capacity_from_the_parent() -> None:
    tree = QuotaTree()
    tree.set_cohort("team", "root", {FR: Quota(0, None, 1)})
    tree.set_cluster_queue("t1", "team", {FR: Quota(5)})
    tree.set_cluster_queue("other", "root", {FR: Quota(0)})
    assert tree.cohorts["team"].local[FR] == 4
    assert tree.cqs["other"].available(FR) == 1
    assert tree.cqs["t1"].available(FR) == 5


def test_removing_usage_restores_every_node() -> None:
    tree = worked_example()
    before = {n: dict(node.usage) for n, node in {**tree.cqs, **tree.cohorts}.items()}
    tree.cqs["a1"].add_usage(FR, 9)
    tree.cqs["a2"].add_usage(FR, 5)
    tree.cqs["b1"].add_usage(FR, 3)
    tree.cqs["a1"].add_usage(FR, -9)
    tree.cqs["b1"].add_usage(FR, -3)
    tree.cqs["a2"].add_usage(FR, -5)
    after = {n: {fr: v for fr, v in node.usage.items() if v} for n, node in {**tree.cqs, **tree.cohorts}.items()}
    assert after == {n: {fr: v for fr, v in u.items() if v} for n, u in before.items()}


def test_rebuilding_the_tree_keeps_usage() -> None:
    tree = worked_example()
    tree.cqs["a1"].add_usage(FR, 9)
    tree.cqs["a2"].add_usage(FR, 5)
    org_usage = tree.cohorts["org"].usage[FR]
    tree.set_cluster_queue("a3", "org", {FR: Quota(1)})  # a structural change recomputes aggregates
    assert tree.cohorts["org"].usage[FR] == org_usage == (9 - 6) + 5
    assert tree.cohorts["org"].subtree[FR] == 15


def test_uncovered_flavor_resource_has_nothing_available() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("a", "", {FR: Quota(4)})
    assert tree.cqs["a"].available(("default", "memory")) == 0
    assert tree.cqs["a"].potential_available(("default", "memory")) == 0


def test_standalone_queue_never_borrows() -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("a", "", {FR: Quota(4)})
    assert find_height_of_lowest_subtree_that_fits(tree.cqs["a"], FR, 10) == (0, False)


def test_cohort_cycle_marks_its_queues() -> None:
    tree = QuotaTree()
    tree.set_cohort("x", "y", {})
    tree.set_cohort("y", "x", {})
    tree.set_cluster_queue("a", "x", {FR: Quota(4)})
    tree.set_cluster_queue("b", "", {FR: Quota(4)})
    assert tree.cqs["a"].in_cycle and not tree.cqs["b"].in_cycle
    tree.set_cohort("y", "", {})
    assert not tree.cqs["a"].in_cycle


def test_cohort_cycle_makes_the_cluster_queue_inactive() -> None:
    sim = Sim().add(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        cohort("x", parent="y"), cohort("y", parent="x"),
    )
    sim.queue(cq("a", {"default": {"cpu": 4}}, cohort="x"))
    sim.add(wl("w", "a", cpu=1)).settle()
    assert sim.state("w") == "pending"
    assert sim.engine.cqs["a"].inactive_reason == "CohortCycleDetected"
    assert sim.engine.cqs["a"].inactive_message == 'Can\'t admit new workloads: Cohort "x" has a cycle in hierarchy.'
    sim.add(cohort("y")).settle()
    assert sim.state("w") == "admitted"


@pytest.mark.parametrize(("lending", "local"), [(None, 0), (0, 10), (4, 6), (10, 0)])
def test_local_quota_is_nominal_minus_lending_limit(lending: int | None, local: int) -> None:
    tree = QuotaTree()
    tree.set_cluster_queue("a", "co", {FR: Quota(10, None, lending)})
    assert tree.cqs["a"].local.get(FR, 0) == local


def test_cluster_queue_available_is_clamped_at_zero_after_over_admission() -> None:
    # Kueue's ClusterQueueSnapshot.Available: max(0, available); cohorts may go negative.
    tree = QuotaTree()
    tree.set_cluster_queue("a", "co", {FR: Quota(4)})
    tree.cqs["a"].add_usage(FR, 6)
    tree.set_cluster_queue("a", "co", {FR: Quota(2)})  # the quota shrinks below the usage
    assert tree.cqs["a"].available(FR) == 0
    assert tree.cohorts["co"].available(FR) == -4


def test_zero_request_fits_an_over_admitted_resource() -> None:
    sim = Sim().add({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}})
    sim.queue(cq("q", {"default": {"cpu": 10, "memory": "10Gi"}}))
    sim.add(wl("big", "q", cpu=1, memory="8Gi")).settle()
    sim.add(cq("q", {"default": {"cpu": 10, "memory": "4Gi"}}))  # over-admitted on memory now
    sim.add(wl("cpu-only", "q", requests={"cpu": 1, "memory": 0})).settle()
    assert sim.state("cpu-only") == "admitted"
    sim.add(wl("needs-memory", "q", cpu=1, memory=1)).settle()
    assert sim.state("needs-memory") == "pending"


def test_a_cycle_created_under_running_workloads_neither_hangs_nor_admits() -> None:
    from engine_helpers import reserved

    sim = Sim({"fairSharing": {}}).add(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    )
    sim.queue(cq("a", {"default": {"cpu": 1}}, cohort="x"), cq("b", {"default": {"cpu": 4}}, cohort="x"))
    sim.add(reserved(wl("borrowing", "a", cpu=4), "a", {"cpu": "default"}))
    sim.add(cohort("x", parent="y"), cohort("y", parent="x"))
    sim.add(wl("new", "b", cpu=1)).settle()
    assert sim.state("new") == "pending"
    assert sim.engine.weighted_share("a") is None and sim.engine.weighted_share("x") is None
    sim.finish("borrowing").add(cohort("y")).settle()
    assert sim.state("new") == "admitted"
