"""Kueue's balanced placement (TASBalancedPlacement, alpha, off by default): a preferred pod set is spread
evenly over the fewest domains one level below the preferred level instead of filled greedily."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import Sim
from test_tas_engine import BLOCK, RACK, cluster, node, placement, tas_wl

pytestmark = pytest.mark.timeout(60)

GATE = {"featureGates": {"TASBalancedPlacement": True}}


def per_rack(sim: Sim, name: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for (host,), n in placement(sim, name).items():
        rack = host.rsplit("-", 1)[0]
        out[rack] = out.get(rack, 0) + n
    return out


def two_racks(config: dict[str, Any] | None) -> Sim:
    """Kueue's docs example: two racks of 10 (two hosts of 5 cpus each) in one block."""
    return cluster(*[node(f"b1-r{r}-h{h}", "b1", f"b1-r{r}", 5) for r in (1, 2) for h in (1, 2)], config=config)


def test_twelve_pods_over_two_racks_of_ten_go_six_and_six() -> None:
    sim = two_racks(GATE)
    sim.add(tas_wl("a", 12, request={"preferred": BLOCK})).settle()
    assert per_rack(sim, "a") == {"b1-r1": 6, "b1-r2": 6}


def test_without_the_gate_the_greedy_fill_leaves_two_on_the_last_rack() -> None:
    sim = two_racks(None)
    sim.add(tas_wl("a", 12, request={"preferred": BLOCK})).settle()
    assert sorted(per_rack(sim, "a").values()) == [2, 10]


def test_the_fewest_domains_with_the_least_to_spare_are_chosen() -> None:
    # Racks of 10, 6 and 6 in one block: 12 pods fit two racks; the two 6s waste nothing.
    nodes = [node(f"b1-r1-h{h}", "b1", "b1-r1", 5) for h in (1, 2)]
    nodes += [node(f"b1-r{r}-h1", "b1", f"b1-r{r}", 6) for r in (2, 3)]
    sim = cluster(*nodes, config=GATE)
    sim.add(tas_wl("a", 12, request={"preferred": BLOCK})).settle()
    assert per_rack(sim, "a") == {"b1-r2": 6, "b1-r3": 6}


def test_required_and_unconstrained_pod_sets_are_placed_as_before() -> None:
    sim = two_racks(GATE)
    sim.add(tas_wl("a", 12, request={"required": BLOCK})).settle()
    assert sorted(per_rack(sim, "a").values()) == [2, 10]


def test_preferred_rack_spreads_evenly_over_hosts_when_the_block_holds_the_gang() -> None:
    # No rack holds 12 pods, their block does: one level below the rack, three hosts of 5 are the fewest
    # that hold them, so each gets 4 (the greedy fill gives 5, 5, 2).
    sim = two_racks(GATE)
    sim.add(tas_wl("a", 12, request={"preferred": RACK})).settle()
    assert placement(sim, "a") == {("b1-r1-h1",): 4, ("b1-r1-h2",): 4, ("b1-r2-h1",): 4}


def test_a_gang_no_domain_a_level_above_holds_is_placed_greedily() -> None:
    # Two blocks of one 5-cpu host each, preferred block, 8 pods: no single domain above the block level
    # exists to hold them all at once in one block, so Kueue's standard algorithm places them.
    sim = cluster(node("b1-r1-h1", "b1", "b1-r1", 5), node("b2-r1-h1", "b2", "b2-r1", 5), config=GATE)
    sim.add(tas_wl("a", 8, request={"preferred": RACK})).settle()
    assert sorted(placement(sim, "a").values()) == [3, 5]
