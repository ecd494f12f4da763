"""TAS across the fleet, the worker's half (hub.engine.tas.fleet): its largest free domains per
level, as an agent reports them to the hub, and the hub's tests on them."""

from __future__ import annotations

from test_tas_engine import BLOCK, HOST, RACK, cluster, grid, node, tas_wl

from hub.engine.tas.fleet import FreeDomain, FreeLevel, free_topologies, largest_gang, may_fit


def levels_of(sim_engine: object) -> dict[str, FreeLevel]:
    (top,) = free_topologies(sim_engine.tas)  # type: ignore[attr-defined]
    assert top.flavor == "tas" and top.topology == "default"
    return {lv.level: lv for lv in top.levels}


def test_each_level_lists_its_largest_free_domains_with_their_roomiest_node() -> None:
    nodes = grid(2, 2, 2)  # 8 nodes of 4 cpus: racks of 8, blocks of 16
    nodes[0] = node("b1-r1-h1", "b1", "b1-r1", cpu=10)
    sim = cluster(*nodes)
    levels = levels_of(sim.engine)
    assert [lv.domain_count for lv in levels.values()] == [2, 4, 8]
    b1 = next(d for d in levels[BLOCK].domains if d.values == ("b1",))
    assert b1.free["cpu"] == 10_000 + 3 * 4_000 and b1.largest_node["cpu"] == 10_000 and b1.nodes == 4
    rack = next(d for d in levels[RACK].domains if d.values == ("b1", "b1-r1"))
    assert rack.free["cpu"] == 14_000


def test_placed_workloads_take_their_domains_room() -> None:
    sim = cluster(*grid(1, 2, 2))
    sim.add(tas_wl("a", 8, request={"required": RACK})).settle()
    assert sim.workload("a").status.admission is not None
    free = {d.values: d.free["cpu"] for d in levels_of(sim.engine)[RACK].domains}
    assert sorted(free.values()) == [0, 8_000]


def test_only_the_top_domains_per_resource_are_kept() -> None:
    sim = cluster(*grid(1, 1, 12))
    (top,) = free_topologies(sim.engine.tas, top=3)
    hosts = next(lv for lv in top.levels if lv.level == HOST)
    assert hosts.domain_count == 12 and len(hosts.domains) <= 3 * 3  # cpu, memory, pods


def test_may_fit_needs_the_gangs_total_in_one_domain_and_one_pod_on_its_roomiest_node() -> None:
    rack = FreeLevel(RACK, (FreeDomain(("b1", "r1"), {"cpu": 8_000}, {"cpu": 4_000}, 2),), 1)
    assert may_fit([rack], RACK, 8, {"cpu": 1_000})
    assert not may_fit([rack], RACK, 9, {"cpu": 1_000})
    assert not may_fit([rack], RACK, 1, {"cpu": 5_000})  # no node holds one pod
    assert not may_fit([rack], BLOCK, 1, {"cpu": 1_000})  # a level this worker does not have
    assert largest_gang([rack], {"cpu": 1_000}) == {RACK: 8}
