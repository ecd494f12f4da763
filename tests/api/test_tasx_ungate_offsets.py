"""Kueue's topology ungater's rank offsets (pkg/controller/tas/topology_ungater.go, ``Reconcile``
and ``readRanksForLabels``, read at kueue ff69552e79), pure and through the hub's ungater:

- a pod's rank is its index less the pod set's offset; with a sub-group label (a JobSet's Jobs)
  ``index + jobIndex * (count / subGroupCount) - offset``, the index below the Job's size;
- indexes are read below ``maxRank`` (the count plus the offsets), a rank below 0 or from the count
  up means no ranks (greedy: the test "ranks: out-of-range pod index falls back to greedy");
- a ``podSetGroupName`` pair shares one rank space: the pod set of fewer pods (the first on a tie)
  ranks from 0, the other from the first's count (a LeaderWorkerSet's leader 0, workers 1..N);
- ``kueue.x-k8s.io/pod-index-offset`` on the pod set's pods adds to both (Kueue's MPIJob webhook
  puts "1" on the Worker template with ``runLauncherAsWorker``: workers 1..N; mpijob_webhook.go);
  one that is not an integer stops the Workload's ungating (Kueue's errParseOffsetAnnotation)."""

from __future__ import annotations

import copy
from typing import Any

from hub.api.jobkinds.mpijob import MPIJobAdapter
from hub.api.jobkinds.pod import Pod, default_at_creation, read_pod
from hub.api.jobkinds.tas_ungate import (
    RankRange,
    TasPod,
    assign_gated_pods,
    rank_offsets,
    with_offset_annotation,
)
from hub.api.registry import parse_object
from hub.api.topology_assignment import TopologyAssignment
from hub.api.workload import Workload
from hub.controllers.tas_pods import TasPods, due_ungates
from tests.federation.test_agent_tas_pods import HOST, RACK, TEMPLATE, worker

INDEX = "training.kubeflow.org/replica-index"
OFFSET = "kueue.x-k8s.io/pod-index-offset"
TA = TopologyAssignment((HOST,), ((("h1",), 1), (("h2",), 1), (("h3",), 1)))


def pod(name: str, index: int, created: float) -> TasPod:
    return TasPod(name, True, {}, {INDEX: str(index)}, created)


def test_a_group_pair_ranks_the_smaller_pod_set_first_and_the_larger_after_it() -> None:
    offsets = rank_offsets([("worker", 3, "g"), ("leader", 1, "g"), ("other", 2, None)])
    assert offsets == {"leader": RankRange(0, 1), "worker": RankRange(1, 4), "other": RankRange(0, 2)}
    assert rank_offsets([("a", 2, "g"), ("b", 2, "g")]) == {"a": RankRange(0, 2), "b": RankRange(2, 4)}  # tie: the first


def test_workers_indexed_from_1_by_the_offset_go_by_rank_not_by_age() -> None:
    """Kueue's test "ranks: MPIJob with runLauncherAsWorker": w1..w3 (replica-index 1..3, offset 1)."""
    pods = [pod("w3", 3, 1.0), pod("w2", 2, 2.0), pod("w1", 1, 3.0)]  # the last index made first
    ranks = with_offset_annotation(RankRange(0, 3), {OFFSET: "1"})
    assert ranks == RankRange(1, 4)
    assert assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}, ranks) == [
        ("w1", {HOST: "h1"}), ("w2", {HOST: "h2"}), ("w3", {HOST: "h3"})]
    # Without the offset index 3 is no rank of a 3-pod set: greedy, oldest first.
    assert assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}) == [
        ("w3", {HOST: "h1"}), ("w2", {HOST: "h2"}), ("w1", {HOST: "h3"})]


def test_an_index_below_the_offset_or_past_the_largest_rank_falls_back_to_greedy() -> None:
    ranks = RankRange(1, 4)
    for stray in (0, 4):
        pods = [pod("a", 1, 2.0), pod("b", 2, 3.0), pod("stray", stray, 1.0)]
        assert [n for n, _ in assign_gated_pods(TA, 3, pods, {"podIndexLabel": INDEX}, ranks)] == ["stray", "a", "b"]


def test_sub_groups_subtract_the_offset_after_the_jobs_index() -> None:
    group = "jobset.sigs.k8s.io/job-index"
    ta = TopologyAssignment((HOST,), ((("h1",), 2), (("h2",), 2)))
    pods = [TasPod(f"j{j}-{i}", True, {}, {INDEX: str(i), group: str(j)}, 0.0) for j in (0, 1) for i in (0, 1)]
    request = {"podIndexLabel": INDEX, "subGroupIndexLabel": group, "subGroupCount": 2}
    assert assign_gated_pods(ta, 4, pods, request, RankRange(0, 4)) == [
        ("j0-0", {HOST: "h1"}), ("j0-1", {HOST: "h1"}), ("j1-0", {HOST: "h2"}), ("j1-1", {HOST: "h2"})]
    # Offset 1: j0-0 would be rank -1, so no ranks (greedy, by name on a tie of ages).
    assert [n for n, _ in assign_gated_pods(ta, 4, pods, request, RankRange(1, 5))] == ["j0-0", "j0-1", "j1-0", "j1-1"]


def test_an_offset_that_is_no_integer_is_a_one_line_reason() -> None:
    assert with_offset_annotation(RankRange(0, 3), {OFFSET: "one"}) == f"annotation {OFFSET}='one': not an integer"


def gated_pod(name: str, index: int, second: int, rv: int, annotations: dict[str, str]) -> Pod:
    return read_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv),
                                  "creationTimestamp": f"2026-01-01T00:00:0{second}Z",
                                  "labels": {"kueue.x-k8s.io/podset": "worker", INDEX: str(index)},
                                  "annotations": {"kueue.x-k8s.io/workload": "mpi", **TEMPLATE["metadata"]["annotations"],
                                                  **annotations}},
                     "spec": {**copy.deepcopy(TEMPLATE["spec"]), "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}]}})


def admitted_workers(offset: str) -> tuple[TasPods, Workload]:
    c = worker()
    wl = parse_object({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                       "metadata": {"name": "mpi", "namespace": "default"},
                       "spec": {"queueName": "q", "podSets": [{"name": "worker", "count": 3, "template": copy.deepcopy(TEMPLATE),
                                                               "topologyRequest": {"required": RACK, "podIndexLabel": INDEX}}]}})
    assert isinstance(wl, Workload)
    c.engine.apply(wl, 0.0)
    c.run_cycle(1.0)
    got = c.engine.workloads["default/mpi"]
    assert got.is_admitted
    tas = TasPods(c.engine)
    for i, index in enumerate((3, 2, 1)):  # the last index made first
        tas.apply_pod(gated_pod(f"mpi-worker-{index}", index, i, 10 + i, {OFFSET: offset}))
    tas.to_ungate.add("default/mpi")
    return tas, got


def test_the_hubs_ungater_reads_the_offset_from_the_pod_sets_pods() -> None:
    tas, wl = admitted_workers("1")
    assert wl.status.admission is not None
    ta = wl.status.admission.pod_set_assignments[0].topology_assignment
    assert ta is not None
    slots = [values[-1] for values, n in ta.domains for _ in range(n)]
    assert len(set(slots)) > 1  # ranks decide something here
    got = {key.name: selector[HOST] for key, selector in due_ungates(tas)}
    assert got == {f"mpi-worker-{i + 1}": slots[i] for i in range(3)}


def test_an_offset_that_is_no_integer_ungates_nothing_of_the_workload() -> None:
    tas, _ = admitted_workers("x")
    assert due_ungates(tas) == []


def test_kueues_mpijob_webhook_offsets_the_workers_when_the_launcher_runs_as_worker() -> None:
    adapter = MPIJobAdapter()
    replicas: dict[str, Any] = {"Launcher": {"template": {}}, "Worker": {"template": {}}}
    body = {"spec": {"runLauncherAsWorker": True, "mpiReplicaSpecs": replicas}}
    path = ("spec", "mpiReplicaSpecs", "Worker", "template", "metadata", "annotations", OFFSET)
    assert adapter.webhook_defaults(body) == [(path, "1")]
    assert adapter.webhook_defaults({"spec": {"mpiReplicaSpecs": replicas}}) == []  # the launcher is no worker
    grouped = copy.deepcopy(body)
    grouped["spec"]["mpiReplicaSpecs"]["Launcher"]["template"] = {
        "metadata": {"annotations": {"kueue.x-k8s.io/podset-group-name": "g"}}}
    assert adapter.webhook_defaults(grouped) == []  # the pod-set group gives the workers their offset


def test_kueues_pod_webhook_copies_the_index_the_pod_group_pod_index_label_annotation_names() -> None:
    out = default_at_creation({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "web-2", "namespace": "default", "labels": {"apps.kubernetes.io/pod-index": "2"},
        "annotations": {"kueue.x-k8s.io/pod-group-pod-index-label": "apps.kubernetes.io/pod-index"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}})
    assert out["metadata"]["labels"]["kueue.x-k8s.io/pod-group-pod-index"] == "2"


def test_no_pod_is_ungated_onto_a_node_listed_unhealthy() -> None:
    """Kueue's ungater skips a pod whose domain is a node in ``status.unhealthyNodes`` (it waits for the
    replacement the scheduler's next pass gives)."""
    tas, wl = admitted_workers("1")
    assert wl.status.admission is not None
    ta = wl.status.admission.pod_set_assignments[0].topology_assignment
    assert ta is not None
    first = ta.domains[0][0][-1]
    wl.status.unhealthy_nodes = [first]
    got = {key.name: selector[HOST] for key, selector in due_ungates(tas)}
    assert got and first not in got.values()
