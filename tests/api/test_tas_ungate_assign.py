"""Kueue's topology ungater, pure: which gated pod goes to which domain of a pod set's topology
assignment (by rank when the pods carry their index, greedily otherwise)."""

from __future__ import annotations

from hub.api.jobkinds.tas_ungate import TasPod, assign_gated_pods
from hub.api.topology_assignment import TopologyAssignment

HOST = "kubernetes.io/hostname"
INDEX = "batch.kubernetes.io/job-completion-index"
TA = TopologyAssignment((HOST,), ((("h1",), 2), (("h2",), 1)))


def pod(name: str, gated: bool = True, host: str = "", index: int | None = None, created: float = 0.0) -> TasPod:
    labels = {INDEX: str(index)} if index is not None else {}
    return TasPod(name, gated, {HOST: host} if host else {}, labels, created)


def test_greedy_fills_each_domain_less_the_pods_already_there_oldest_first() -> None:
    pods = [pod("c", created=3), pod("a", created=1), pod("b", created=2), pod("run", gated=False, host="h1")]
    assert assign_gated_pods(TA, 3, pods) == [("a", {HOST: "h1"}), ("b", {HOST: "h2"})]


def test_more_gated_pods_than_slots_leaves_the_rest_gated() -> None:
    pods = [pod(f"p{i}", created=i) for i in range(5)]
    assert [name for name, _ in assign_gated_pods(TA, 3, pods)] == ["p0", "p1", "p2"]


def test_ranks_put_each_index_in_its_slot() -> None:
    pods = [pod("x", index=2), pod("y", index=0), pod("z", index=1)]
    assert assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}) == [
        ("y", {HOST: "h1"}), ("z", {HOST: "h1"}), ("x", {HOST: "h2"})]


def test_ranks_across_sub_groups_of_a_jobset() -> None:
    ta = TopologyAssignment((HOST,), ((("h1",), 2), (("h2",), 2)))
    group = "jobset.sigs.k8s.io/job-index"
    pods = [TasPod(f"j{j}-{i}", True, {}, {INDEX: str(i), group: str(j)}) for j in (1, 0) for i in (0, 1)]
    out = assign_gated_pods(ta, 4, pods, {"podIndexLabel": INDEX, "subGroupIndexLabel": group, "subGroupCount": 2})
    assert out == [("j0-0", {HOST: "h1"}), ("j0-1", {HOST: "h1"}), ("j1-0", {HOST: "h2"}), ("j1-1", {HOST: "h2"})]


def test_a_running_pod_away_from_its_ranks_slot_falls_back_to_greedy() -> None:
    pods = [pod("r", gated=False, host="h2", index=0), pod("a", index=1, created=1), pod("b", index=2, created=2)]
    assert assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}) == [("a", {HOST: "h1"}), ("b", {HOST: "h1"})]


def test_a_pod_without_its_index_falls_back_to_greedy() -> None:
    pods = [pod("a", index=0, created=2), pod("b", created=1)]
    assert assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}) == [("b", {HOST: "h1"}), ("a", {HOST: "h1"})]
