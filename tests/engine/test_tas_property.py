"""Property: whatever the nodes and the mix of TAS requests, every admitted placement fits the free
capacity of its nodes (all placements on a node together within its allocatable), covers exactly
the admitted pod count, keeps a required level's pods in one domain of that level (a pod-set group's
leader with its workers), and keeps each slice within one domain of the slice level."""

from __future__ import annotations

from typing import Any

from engine_helpers import Sim, cq
from hypothesis import given
from hypothesis import strategies as st
from test_tas_engine import BLOCK, HOST, RACK, node, tas_flavor, tas_wl, topology

LEVELS = (BLOCK, RACK, HOST)

requests = st.one_of(
    st.builds(lambda lv: {"required": lv}, st.sampled_from(LEVELS)),
    st.builds(lambda lv: {"preferred": lv}, st.sampled_from(LEVELS)),
    st.just({"unconstrained": True}),
    st.just(None),  # implied: the queue has TAS flavors only
    st.builds(lambda size: {"required": BLOCK, "podSetSliceRequiredTopology": RACK, "podSetSliceSize": size},
              st.integers(1, 3)),
)


@given(
    cpus=st.lists(st.integers(0, 4), min_size=1, max_size=12),
    workloads=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 2), requests, st.booleans()), min_size=1, max_size=8),
    finish_first=st.booleans(),
)
def test_every_placement_fits_its_nodes_and_respects_its_levels(
        cpus: list[int], workloads: list[tuple[int, int, dict[str, Any] | None, bool]], finish_first: bool) -> None:
    nodes = [node(f"n{i}", f"b{i % 2}", f"b{i % 2}-r{i % 3}", cpu) for i, cpu in enumerate(cpus)]
    # Two queues on the same nodes: one cycle nominates a head of each against the same free capacity.
    sim = Sim().add(topology(), tas_flavor(), *nodes).queue(cq("q", {"tas": {"cpu": 1000}}),
                                                            cq("q2", {"tas": {"cpu": 1000}}))
    for i, (count, cpu, request, grouped) in enumerate(workloads):
        manifest = tas_wl(f"w{i}", count, cpu, request=request, queue="q2" if i % 2 else "q")
        if grouped and request and ("required" in request or "preferred" in request):
            # A leader pod set of one pod placed with the workers (a pod-set group).
            workers = manifest["spec"]["podSets"][0]
            workers["name"] = "workers"
            leader = {**workers, "name": "leader", "count": 1}
            request = dict(request, podSetGroupName="g")
            workers["topologyRequest"] = leader["topologyRequest"] = request
            manifest["spec"]["podSets"] = [leader, workers]
        sim.add(manifest)
    sim.settle()
    if finish_first and sim.reserved():
        sim.finish(sorted(sim.reserved())[0]).settle()
    labels = {f"n{i}": (f"b{i % 2}", f"b{i % 2}-r{i % 3}") for i in range(len(cpus))}
    used: dict[str, int] = {}
    for i, (_count, cpu, request, _) in enumerate(workloads):
        wl = sim.workload(f"w{i}")
        if wl.is_finished or wl.status.admission is None:
            continue
        hosts: dict[str, int] = {}
        for psa, ps in zip(wl.status.admission.pod_set_assignments, wl.pod_sets):
            ta = psa.topology_assignment
            assert ta is not None and ta.levels == (HOST,)
            assert ta.pod_count == psa.count == ps.count
            for values, n in ta.domains:
                hosts[values[0]] = hosts.get(values[0], 0) + n
                used[values[0]] = used.get(values[0], 0) + n * cpu
        request = request or {}
        if "required" in request and request["required"] != HOST:
            depth = LEVELS.index(request["required"])
            assert len({labels[h][depth] for h in hosts}) == 1, (request, hosts)
        if "podSetSliceSize" in request and len(wl.pod_sets) == 1:
            per_rack: dict[str, int] = {}
            for host, n in hosts.items():
                per_rack[labels[host][1]] = per_rack.get(labels[host][1], 0) + n
            assert all(n % request["podSetSliceSize"] == 0 for n in per_rack.values()), per_rack
    for host, cpu_used in used.items():
        assert cpu_used <= cpus[int(host[1:])], (host, cpu_used)
