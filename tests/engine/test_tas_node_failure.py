"""TAS node failure (Kueue's node controller and TASFailedNodeReplacement): ``status.unhealthyNodes``
set when an assigned node fails, the failed node's pods placed again within the domain the request
requires, eviction when there is no replacement or a second node fails, and the field's round trip."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import Sim, key, reserved
from test_tas_engine import HOST, RACK, cluster, grid, node, placement, tas_wl

from hub.api.registry import parse_object
from hub.api.workload import Workload, workload_status_to_dict

pytestmark = pytest.mark.timeout(60)


def not_ready(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    return manifest


def test_a_failed_node_is_listed_until_the_next_cycle_places_its_pods_in_the_same_rack() -> None:
    sim = cluster(*grid(2, 2, 3, cpu=1))
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    before = placement(sim, "a")
    failed = sorted(before)[0][0]
    rack = failed.rsplit("-", 1)[0]
    sim.add(not_ready(node(failed, rack.split("-")[0], rack, cpu=1)))
    assert sim.workload("a").status.unhealthy_nodes == [failed]
    sim.settle()
    after = placement(sim, "a")
    assert sim.workload("a").status.unhealthy_nodes == []
    assert (failed,) not in after and sum(after.values()) == 2
    assert {h[0].rsplit("-", 1)[0] for h in after} == {rack}  # still one rack
    assert set(before) - {(failed,)} <= set(after)  # the other pod stays where it runs
    assert "a" in sim.admitted() and not sim.events("Evicted")


def test_slices_replacement_stays_in_the_slice_that_lost_a_pod() -> None:
    # Racks of 3 one-cpu hosts; slices of 2 per rack, 4 pods: two racks with one free host each.
    sim = cluster(*grid(1, 3, 3, cpu=1))
    sim.add(tas_wl("a", 4, request={"podSetSliceRequiredTopology": RACK, "podSetSliceSize": 2})).settle()
    before = placement(sim, "a")
    failed = sorted(before)[0][0]
    rack = failed.rsplit("-", 1)[0]
    sim.add(not_ready(node(failed, "b1", rack, cpu=1))).settle()
    after = placement(sim, "a")
    per_rack: dict[str, int] = {}
    for (host,), n in after.items():
        per_rack[host.rsplit("-", 1)[0]] = per_rack.get(host.rsplit("-", 1)[0], 0) + n
    assert per_rack[rack] == 2 and all(n % 2 == 0 for n in per_rack.values())
    assert (failed,) not in after


def test_no_replacement_evicts_and_the_workload_waits_then_a_second_failure_evicts_at_once() -> None:
    sim = cluster(*grid(1, 2, 2, cpu=1))
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    failed = sorted(placement(sim, "a"))[0][0]
    rack = failed.rsplit("-", 1)[0]
    sim.add(not_ready(node(failed, "b1", rack, cpu=1))).settle()
    evicted = sim.events("Evicted")
    assert [(e.reason, e.message) for e in evicted] == [
        ("NodeFailures", f"Workload was evicted as there was no replacement for unhealthy node(s): {failed}")]
    assert [(s.reason, s.count) for s in sim.workload("a").status.evictions] == [("NodeFailures", 1)]
    # Requeued, it goes to the other rack.
    assert {h[0].rsplit("-", 1)[0] for h in placement(sim, "a")} != {rack}
    one, two = sorted(placement(sim, "a"))
    sim.engine.delete("Node", "", one[0])
    sim.engine.delete("Node", "", two[0])
    last = sim.condition("a", "Evicted")
    assert last is not None and last.reason == "NodeFailures" and last.message == (
        f"Workload eviction triggered due to multiple TAS assigned node failures, including: {one[0]}, {two[0]}")


def test_without_fail_fast_the_workload_keeps_its_nodes_and_waits_for_a_replacement() -> None:
    sim = cluster(*grid(1, 2, 2, cpu=1), config={"featureGates": {"TASFailedNodeReplacementFailFast": False}})
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    failed = sorted(placement(sim, "a"))[0][0]
    rack = failed.rsplit("-", 1)[0]
    sim.add(not_ready(node(failed, "b1", rack, cpu=1))).settle()
    assert "a" in sim.admitted() and not sim.events("Evicted")
    assert sim.workload("a").status.unhealthy_nodes == [failed]
    sim.add(node(f"{rack}-h9", "b1", rack, cpu=1)).settle()  # a new node in the rack
    assert placement(sim, "a").get((f"{rack}-h9",)) == 1 and sim.workload("a").status.unhealthy_nodes == []


def test_a_node_ready_again_before_the_cycle_is_taken_off_the_list() -> None:
    sim = cluster(*grid(1, 1, 3, cpu=1))
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    before = placement(sim, "a")
    failed = sorted(before)[0][0]
    sim.add(not_ready(node(failed, "b1", "b1-r1", cpu=1)))
    assert sim.workload("a").status.unhealthy_nodes == [failed]
    sim.add(node(failed, "b1", "b1-r1", cpu=1))
    assert sim.workload("a").status.unhealthy_nodes == []
    sim.settle()
    assert placement(sim, "a") == before


def test_the_feature_gate_off_leaves_the_workload_alone() -> None:
    sim = cluster(*grid(1, 1, 3, cpu=1), config={"featureGates": {"TASFailedNodeReplacement": False}})
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    before = placement(sim, "a")
    sim.add(not_ready(node(sorted(before)[0][0], "b1", "b1-r1", cpu=1))).settle()
    assert placement(sim, "a") == before and sim.workload("a").status.unhealthy_nodes == []


def test_a_restored_workload_with_an_unhealthy_node_gets_its_replacement() -> None:
    sim: Sim = cluster(*grid(1, 1, 3, cpu=1))
    sim.add(not_ready(node("b1-r1-h1", "b1", "b1-r1", cpu=1)))
    manifest = reserved(tas_wl("a", 2, request={"required": RACK}), "q", {"cpu": "tas"}, admitted=True)
    psa = manifest["status"]["admission"]["podSetAssignments"][0]
    psa["topologyAssignment"] = {"levels": [HOST], "domains": [{"values": ["b1-r1-h1"], "count": 1},
                                                               {"values": ["b1-r1-h2"], "count": 1}]}
    manifest["status"]["unhealthyNodes"] = [{"name": "b1-r1-h1"}]
    sim.add(manifest)
    assert sim.workload("a").status.unhealthy_nodes == ["b1-r1-h1"]
    sim.settle()
    assert placement(sim, "a") == {("b1-r1-h2",): 1, ("b1-r1-h3",): 1}
    assert sim.workload("a").status.unhealthy_nodes == []
    assert key("a") in sim.engine.infos


def test_unhealthy_nodes_round_trip_through_the_api() -> None:
    manifest = tas_wl("a", 1)
    manifest["status"] = {"unhealthyNodes": [{"name": "n1"}]}
    wl = parse_object(manifest)
    assert isinstance(wl, Workload) and wl.status.unhealthy_nodes == ["n1"]
    assert workload_status_to_dict(wl.status)["unhealthyNodes"] == [{"name": "n1"}]
