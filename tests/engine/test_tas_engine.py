"""Topology-aware scheduling in the engine (Kueue's TAS): the node inventory, placement by
required / preferred / unconstrained / slices, the profiles, implicit placement, flavor checks,
accounting of admitted placements, and the pending reason naming what failed."""

from __future__ import annotations

from typing import Any

import pytest
from engine_helpers import NS, V2, Sim, admission_check, cq, pod_set, wl

from hub.api.conversion import to_internal, to_version
from hub.api.errors import FieldErrors
from hub.api.topology_assignment import TopologyAssignment, read_topology_assignment, to_v1beta1, to_v1beta2

pytestmark = pytest.mark.timeout(60)

BLOCK, RACK, HOST = "cloud.example.com/block", "cloud.example.com/rack", "kubernetes.io/hostname"


def topology(name: str = "default", levels: tuple[str, ...] = (BLOCK, RACK, HOST)) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": level} for level in levels]}}


def tas_flavor(name: str = "tas", topology_name: str = "default", labels: dict[str, str] | None = None,
               tolerations: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"topologyName": topology_name, "nodeLabels": labels or {"pool": "gpu"}}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def node(name: str, block: str, rack: str, cpu: int = 4, *, ready: bool = True, taints: list[dict[str, str]] | None = None,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {BLOCK: block, RACK: rack, HOST: name, "pool": "gpu", **(labels or {})}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": {"cpu": str(cpu), "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def cluster(*nodes: dict[str, Any], quota: int = 1000, config: dict[str, Any] | None = None) -> Sim:
    sim = Sim(config).add(topology(), tas_flavor(), *nodes)
    return sim.queue(cq("q", {"tas": {"cpu": quota}}))


def grid(blocks: int = 2, racks: int = 2, hosts: int = 2, cpu: int = 4) -> list[dict[str, Any]]:
    """b1..bN / r1..rN / h1..hN nodes named b1-r1-h1."""
    return [node(f"b{b}-r{r}-h{h}", f"b{b}", f"b{b}-r{r}", cpu)
            for b in range(1, blocks + 1) for r in range(1, racks + 1) for h in range(1, hosts + 1)]


def tas_wl(name: str, count: int, cpu: int = 1, *, request: dict[str, Any] | None = None, queue: str = "q",
           **options: Any) -> dict[str, Any]:
    ps = pod_set(count=count, requests={"cpu": cpu}, **options)
    if request is not None:
        ps["topologyRequest"] = request
    return wl(name, queue, pod_sets=[ps])


def placement(sim: Sim, name: str, pod_set: str = "main") -> dict[tuple[str, ...], int]:
    adm = sim.workload(name).status.admission
    assert adm is not None, sim.workload(name).status.conditions
    psa = next(p for p in adm.pod_set_assignments if p.name == pod_set)
    assert psa.topology_assignment is not None
    return {values: count for values, count in psa.topology_assignment.domains}


def pending_message(sim: Sim, name: str) -> tuple[str, str]:
    cond = sim.workload(name).status.condition("QuotaReserved")
    assert cond is not None and cond.status == "False"
    return cond.reason, cond.message


# --- required, preferred, unconstrained ----------------------------------------------------------


def test_required_rack_places_every_pod_in_one_rack_with_best_fit() -> None:
    # b1-r1 has 8 free cpus, b2-r1 has 5 (a small node): a 5-pod gang goes where it fits tightest.
    nodes = grid(2, 1, 2)
    nodes[2] = node("b2-r1-h1", "b2", "b2-r1", cpu=1)
    sim = cluster(*nodes)
    sim.add(tas_wl("a", 5, request={"required": RACK})).settle()
    assert placement(sim, "a") == {("b2-r1-h1",): 1, ("b2-r1-h2",): 4}


def test_required_level_that_fits_nowhere_waits_naming_the_topology_and_counts() -> None:
    sim = cluster(*grid(2, 2, 2))  # racks of 8 cpus
    sim.add(tas_wl("big", 9, request={"required": RACK})).settle()
    reason, message = pending_message(sim, "big")
    assert reason == "TopologyPlacementFailed"
    assert message == ('couldn\'t assign flavors to pod set main: topology "default" allows to fit only 8 out of 9 '
                       "pod(s)")


def test_preferred_goes_up_a_level_when_no_rack_holds_the_gang() -> None:
    sim = cluster(*grid(2, 2, 2))
    sim.add(tas_wl("a", 12, request={"preferred": RACK})).settle()
    got = placement(sim, "a")
    assert sum(got.values()) == 12 and {h[0][:2] for h in got} == {"b1"} or {h[0][:2] for h in got} == {"b2"}
    assert len({h[0][:2] for h in got}) == 1  # one block


def test_preferred_spreads_over_blocks_as_a_last_resort() -> None:
    sim = cluster(*grid(2, 2, 2))
    sim.add(tas_wl("a", 20, request={"preferred": RACK})).settle()
    assert sum(placement(sim, "a").values()) == 20


def test_unconstrained_fills_the_least_free_nodes_first() -> None:
    nodes = grid(1, 1, 3)
    nodes[1] = node("b1-r1-h2", "b1", "b1-r1", cpu=2)
    sim = cluster(*nodes)
    sim.add(tas_wl("a", 2, request={"unconstrained": True})).settle()
    assert placement(sim, "a") == {("b1-r1-h2",): 2}


def test_best_fit_profile_for_unconstrained_when_the_mixed_profile_is_off() -> None:
    nodes = grid(1, 1, 3)
    nodes[1] = node("b1-r1-h2", "b1", "b1-r1", cpu=2)
    sim = cluster(*nodes, config={"featureGates": {"TASProfileMixed": False}})
    sim.add(tas_wl("a", 3, request={"unconstrained": True})).settle()
    assert placement(sim, "a") == {("b1-r1-h1",): 3}


def test_a_queue_of_topology_flavors_places_a_workload_without_annotations_implicitly() -> None:
    sim = cluster(*grid(1, 1, 2))
    sim.add(tas_wl("plain", 3)).settle()
    assert sum(placement(sim, "plain").values()) == 3


# --- slices --------------------------------------------------------------------------------------


def test_slices_keep_each_slice_within_one_rack() -> None:
    # racks of 2 hosts x 3 cpus: 6 pods per rack; slices of 4 cannot share racks, so 3 slices need 3 racks.
    sim = cluster(*grid(2, 2, 2, cpu=3))
    sim.add(tas_wl("a", 12, request={"podSetSliceRequiredTopology": RACK, "podSetSliceSize": 4})).settle()
    per_rack: dict[str, int] = {}
    for (host,), n in placement(sim, "a").items():
        per_rack[host[:5]] = per_rack.get(host[:5], 0) + n
    assert sorted(per_rack.values()) == [4, 4, 4]


def test_slices_that_do_not_fit_say_slices() -> None:
    sim = cluster(*grid(1, 2, 2, cpu=3))
    sim.add(tas_wl("a", 12, request={"required": BLOCK, "podSetSliceRequiredTopology": RACK,
                                     "podSetSliceSize": 4})).settle()
    assert pending_message(sim, "a")[1].endswith('topology "default" allows to fit only 2 out of 3 slice(s)')


# --- the inventory -------------------------------------------------------------------------------


def test_admitted_placements_take_their_nodes_until_they_finish() -> None:
    sim = cluster(*grid(1, 2, 2))
    sim.add(tas_wl("a", 8, request={"required": RACK}), tas_wl("b", 8, request={"required": RACK})).settle()
    racks_a = {h[0][:5] for h in placement(sim, "a")}
    racks_b = {h[0][:5] for h in placement(sim, "b")}
    assert racks_a.isdisjoint(racks_b)
    sim.add(tas_wl("c", 1, request={"required": RACK})).settle()
    assert pending_message(sim, "c")[0] != "TopologyPlacementFailed"  # it would fit on empty nodes: it waits
    sim.finish("a").settle()
    assert {h[0][:5] for h in placement(sim, "c")} == racks_a


def test_not_ready_and_tainted_nodes_are_excluded_and_counted() -> None:
    sim = cluster(node("n1", "b1", "r1", ready=False),
                  node("n2", "b1", "r1", taints=[{"key": "gpu", "value": "broken", "effect": "NoSchedule"}]),
                  node("n3", "b1", "r1", cpu=1))
    sim.add(tas_wl("a", 2, request={"required": RACK})).settle()
    reason, message = pending_message(sim, "a")
    assert reason == "TopologyPlacementFailed"
    assert message.endswith('topology "default" allows to fit only 1 out of 2 pod(s). '
                            'Total nodes: 2; excluded: taint "gpu=broken:NoSchedule": 1')


def test_a_toleration_lets_a_pod_set_onto_tainted_nodes() -> None:
    taint = {"key": "gpu", "value": "x", "effect": "NoSchedule"}
    sim = cluster(node("n1", "b1", "r1", taints=[taint]))
    sim.add(tas_wl("a", 2, request={"required": RACK},
                   tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}])).settle()
    assert placement(sim, "a") == {("n1",): 2}


def test_node_selector_narrows_the_nodes() -> None:
    sim = cluster(node("n1", "b1", "r1", labels={"gen": "a"}), node("n2", "b1", "r1", labels={"gen": "b"}))
    sim.add(tas_wl("a", 2, request={"required": RACK}, node_selector={"gen": "b"})).settle()
    assert placement(sim, "a") == {("n2",): 2}


def test_nodes_applied_later_let_a_waiting_workload_in() -> None:
    sim = cluster(node("n1", "b1", "r1", cpu=1))
    sim.add(tas_wl("a", 3, request={"required": RACK})).settle()
    assert pending_message(sim, "a")[0] == "TopologyPlacementFailed"
    sim.add(node("n2", "b1", "r1", cpu=2)).settle()
    assert placement(sim, "a") == {("n1",): 1, ("n2",): 2}


# --- flavor checks -------------------------------------------------------------------------------


def test_a_topology_flavor_refuses_a_pod_set_without_a_request_in_a_mixed_queue() -> None:
    sim = Sim().add(topology(), tas_flavor(), *grid(1, 1, 1))
    sim.add({"apiVersion": V2, "kind": "ResourceFlavor", "metadata": {"name": "plain"}, "spec": {}})
    sim.queue(cq("q", {"tas": {"cpu": 10}, "plain": {"cpu": 10}}))
    sim.add(tas_wl("a", 1)).settle()
    assert sim.workload("a").status.admission is not None
    assert dict(sim.workload("a").status.admission.pod_set_assignments[0].flavors) == {"cpu": "plain"}


def test_a_missing_level_is_refused_by_the_flavor() -> None:
    sim = cluster(*grid(1, 1, 1))
    sim.add(tas_wl("a", 1, request={"required": "example.com/zone"})).settle()
    assert 'Flavor "tas" does not contain the requested level' in pending_message(sim, "a")[1]


# --- wire shapes ---------------------------------------------------------------------------------


def test_v1beta2_compresses_values_and_counts_as_kueue_does() -> None:
    ta = TopologyAssignment((BLOCK, HOST), ((("b1", "node-1-x"), 2), (("b1", "node-22-x"), 2)))
    assert to_v1beta2(ta) == {"levels": [BLOCK, HOST], "slices": [{
        "domainCount": 2,
        "valuesPerLevel": [{"universal": "b1"}, {"individual": {"prefix": "node-", "suffix": "-x", "roots": ["1", "22"]}}],
        "podCounts": {"universal": 2}}]}
    assert read_topology_assignment(to_v1beta2(ta), "x", FieldErrors()) == ta
    assert read_topology_assignment(to_v1beta1(ta), "x", FieldErrors()) == ta


def test_v1beta1_reads_and_writes_domains() -> None:
    sim = cluster(*grid(1, 1, 2))
    sim.add(tas_wl("a", 6, request={"required": RACK})).settle()
    from hub.api.workload import workload_status_to_dict
    manifest = {"apiVersion": V2, "kind": "Workload", "metadata": {"name": "a", "namespace": NS},
                "status": workload_status_to_dict(sim.workload("a").status)}
    old = to_version(manifest, "kueue.x-k8s.io/v1beta1")
    ta = old["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
    assert ta == {"levels": [HOST], "domains": [{"values": ["b1-r1-h1"], "count": 4},
                                                {"values": ["b1-r1-h2"], "count": 2}]}
    assert to_internal(old)["status"] == manifest["status"]


# --- pod-set groups ------------------------------------------------------------------------------


def group_wl(name: str, group: str | None) -> dict[str, Any]:
    """A LeaderWorkerSet-shaped workload: a 2-cpu leader and three 1-cpu workers, each rack-required."""
    sets = []
    for ps_name, count, cpu in (("leader", 1, 2), ("workers", 3, 1)):
        ps = pod_set(ps_name, count=count, requests={"cpu": cpu})
        ps["topologyRequest"] = {"required": RACK, **({"podSetGroupName": group} if group else {})}
        sets.append(ps)
    return wl(name, "q", pod_sets=sets)


def test_a_pod_set_group_puts_its_leader_and_workers_in_one_rack() -> None:
    # r1 (4 cpus) holds the workers alone, not with the leader; r2 (6 cpus) holds both.
    nodes = [node("r1-a", "b1", "r1", 2), node("r1-b", "b1", "r1", 2),
             node("r2-a", "b1", "r2", 2), node("r2-b", "b1", "r2", 2), node("r2-c", "b1", "r2", 2)]
    sim = cluster(*nodes)
    sim.add(group_wl("together", "lws")).settle()
    leader, workers = placement(sim, "together", "leader"), placement(sim, "together", "workers")
    assert sum(leader.values()) == 1 and sum(workers.values()) == 3
    assert {h[0][:2] for h in leader} | {h[0][:2] for h in workers} == {"r2"}


def test_without_the_group_the_leader_and_workers_are_placed_apart() -> None:
    nodes = [node("r1-a", "b1", "r1", 2), node("r1-b", "b1", "r1", 2),
             node("r2-a", "b1", "r2", 2), node("r2-b", "b1", "r2", 2), node("r2-c", "b1", "r2", 2)]
    sim = cluster(*nodes)
    sim.add(group_wl("apart", None)).settle()
    racks = {h[0][:2] for h in placement(sim, "apart", "leader")} | {h[0][:2] for h in placement(sim, "apart", "workers")}
    assert racks == {"r1", "r2"}


def test_a_group_no_rack_holds_whole_waits() -> None:
    sim = cluster(node("r1-a", "b1", "r1", 2), node("r1-b", "b1", "r1", 2), node("r2-a", "b1", "r2", 4))
    sim.add(group_wl("big", "lws")).settle()
    reason, message = pending_message(sim, "big")
    assert reason == "TopologyPlacementFailed"
    assert message.startswith("couldn't assign flavors to pod set workers: topology \"default\"")


# --- TAS preemption ------------------------------------------------------------------------------


def preempting_cluster(*nodes: dict[str, Any], policy: str = "LowerPriority") -> Sim:
    sim = Sim().add(topology(), tas_flavor(), *nodes)
    return sim.queue(cq("q", {"tas": {"cpu": 1000}}, within=policy))


def prioritized(name: str, count: int, priority: int, request: dict[str, Any]) -> dict[str, Any]:
    manifest = tas_wl(name, count, request=request)
    manifest["spec"]["priority"] = priority
    return manifest


def test_a_higher_priority_gang_frees_a_rack_evicting_candidates_in_kueues_order() -> None:
    sim = preempting_cluster(node("r1-a", "b1", "r1", 2), node("r1-b", "b1", "r1", 2), node("r2-a", "b1", "r2", 3))
    sim.add(prioritized("low-1", 2, 2, {"required": HOST}), prioritized("low-2", 2, 1, {"required": HOST}),
            prioritized("low-3", 3, 0, {"required": HOST})).settle()
    assert sim.reserved() == {"low-1", "low-2", "low-3"}
    # Quota is plentiful; the nodes are not. The lowest priority goes first and frees rack r2 alone.
    sim.add(prioritized("high", 3, 10, {"required": RACK})).settle()
    assert sim.reserved() == {"low-1", "low-2", "high"}
    assert placement(sim, "high") == {("r2-a",): 3}
    preempted = sim.workload("low-3").status.condition("Preempted")
    assert preempted is not None and preempted.reason == "InClusterQueue"


def test_candidates_not_needed_after_all_are_put_back() -> None:
    # Admitted highest priority first: low-c on r1-a, low-b on r1-b, low-a on r2-a. Candidates are taken
    # lowest priority first (low-a, low-b, low-c) until rack r1 holds 4 pods; putting low-a back still
    # fits, so only low-b and low-c are evicted (then low-c, above low-a, takes r2-a back from it).
    sim = preempting_cluster(node("r1-a", "b1", "r1", 2), node("r1-b", "b1", "r1", 2), node("r2-a", "b1", "r2", 2))
    sim.add(prioritized("low-a", 2, 0, {"required": HOST}), prioritized("low-b", 2, 1, {"required": HOST}),
            prioritized("low-c", 2, 2, {"required": HOST})).settle()
    hosts = {name: next(iter(placement(sim, name)))[0] for name in ("low-a", "low-b", "low-c")}
    assert hosts == {"low-a": "r2-a", "low-b": "r1-b", "low-c": "r1-a"}
    sim.add(prioritized("high", 4, 10, {"required": RACK})).cycle()
    assert sim.reserved() == {"low-a"}
    assert pending_message(sim, "high")[1].endswith("Pending the preemption of 2 workload(s)")
    sim.cycle()
    assert sim.reserved() == {"low-a", "high"}
    assert placement(sim, "high") == {("r1-a",): 2, ("r1-b",): 2}
    sim.settle()
    assert sim.reserved() == {"low-c", "high"} and placement(sim, "low-c") == {("r2-a",): 2}


def test_without_a_preemption_policy_the_gang_waits_for_nodes() -> None:
    sim = preempting_cluster(node("r1-a", "b1", "r1", 2), policy="Never")
    sim.add(prioritized("low", 2, 1, {"required": RACK})).settle()
    sim.add(prioritized("high", 2, 10, {"required": RACK})).settle()
    assert sim.reserved() == {"low"}
    assert "topology \"default\" doesn't allow to fit any of 2 pod(s)" in pending_message(sim, "high")[1]


def test_a_queue_whose_flavor_names_a_missing_topology_is_inactive_until_it_exists() -> None:
    sim = Sim().add(tas_flavor(), *grid(1, 1, 1)).queue(cq("q", {"tas": {"cpu": 10}}))
    sim.add(tas_wl("a", 1, request={"required": RACK})).settle()
    state = sim.engine.cqs["q"]
    assert not state.active and state.inactive_reason == "TopologyNotFound"
    assert state.inactive_message == 'Can\'t admit new workloads: there is no Topology "default" for TAS flavor "tas".'
    sim.add(topology()).settle()
    assert sim.engine.cqs["q"].active and placement(sim, "a") == {("b1-r1-h1",): 1}


def test_through_multikueue_the_manager_reserves_quota_and_leaves_placement_to_the_worker() -> None:
    # Kueue's delayed topology request: the manager has the Topology and flavor but no Nodes.
    sim = Sim().add(topology(), tas_flavor(), admission_check("mk", "kueue.x-k8s.io/multikueue"))
    sim.queue(cq("q", {"tas": {"cpu": 10}}, checks=["mk"]))
    sim.add(tas_wl("a", 4, request={"required": RACK})).settle()
    wl = sim.workload("a")
    assert wl.is_quota_reserved and wl.status.admission is not None
    assert wl.status.admission.pod_set_assignments[0].topology_assignment is None
