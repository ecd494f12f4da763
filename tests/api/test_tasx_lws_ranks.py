"""A LeaderWorkerSet's group under topology-aware scheduling, as Kueue sets it up (read at kueue
ff69552e79): its webhook puts ``kueue.x-k8s.io/pod-index-offset: "1"`` on the worker template when
the set has a leader template and the workers name no pod-set group (leaderworkerset_webhook.go,
``podTemplateSpecDefault``); its reconciler's pod sets index the workers by
``leaderworkerset.sigs.k8s.io/worker-index`` and the leader by nothing (``newPodSet``/``podSets``).
The ungater then ranks workers 1..size-1 from 0."""

from __future__ import annotations

import copy
from typing import Any

from hub.api.jobkinds import leaderworkerset as lws_mod
from hub.api.jobkinds.pod import POD_INDEX_LABEL, pod_set_of, read_pod
from hub.api.jobkinds.serving import own_by_parent
from hub.api.jobkinds.tas_ungate import (
    RankRange,
    TasPod,
    assign_gated_pods,
    rank_offsets,
    with_offset_annotation,
)
from hub.api.meta import ObjectMeta
from hub.api.topology_assignment import TopologyAssignment
from hub.api.workload import Workload
from tests.api.test_api_lws import lws, parsed, pod

OFFSET = "kueue.x-k8s.io/pod-index-offset"
RACK = "cloud.provider.com/topology-rack"
HOST = "kubernetes.io/hostname"


def tas(template: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(template)
    out["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}}
    return out


def annotations(manifest: dict[str, Any], template: str) -> dict[str, str]:
    lwt = manifest["spec"]["leaderWorkerTemplate"]
    return dict(lwt[template].get("metadata", {}).get("annotations", {}))


def test_the_webhook_offsets_the_workers_of_a_set_with_a_leader() -> None:
    out = lws_mod.default(lws(lwt={"leaderTemplate": pod("2")}))
    assert annotations(out, "workerTemplate")[OFFSET] == "1"
    assert OFFSET not in annotations(out, "leaderTemplate")


def test_no_offset_without_a_leader_template_or_with_a_pod_set_group() -> None:
    assert OFFSET not in annotations(lws_mod.default(lws()), "workerTemplate")
    grouped = {"metadata": {"annotations": {"kueue.x-k8s.io/podset-group-name": "g"}}, **pod()}
    out = lws_mod.default(lws(lwt={"leaderTemplate": pod("2"), "workerTemplate": grouped}))
    assert OFFSET not in annotations(out, "workerTemplate")


def test_the_sets_pod_sets_index_the_workers_by_worker_index_and_the_leader_by_nothing() -> None:
    obj = parsed(lws_mod.default(lws(lwt={"leaderTemplate": tas(pod("2")), "workerTemplate": tas(pod())})))
    leader, worker = lws_mod.group_pod_sets(obj)
    assert (leader.name, leader.count, leader.topology_request) == ("leader", 1, {"required": RACK})
    assert (worker.name, worker.count, worker.topology_request) == (
        "worker", 3, {"required": RACK, "podIndexLabel": lws_mod.WORKER_INDEX_LABEL})
    (main,) = lws_mod.group_pod_sets(parsed(lws_mod.default(lws(lwt={"workerTemplate": tas(pod())}))))
    assert main.topology_request == {"required": RACK, "podIndexLabel": lws_mod.WORKER_INDEX_LABEL}
    (untouched,) = lws_mod.group_pod_sets(parsed(lws()))
    assert untouched.topology_request is None  # no TAS annotation, no request


def group_pod(annotations: dict[str, str]) -> Any:
    return read_pod({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "serve-0", "namespace": "team",
                                  "annotations": {"kueue.x-k8s.io/podset-required-topology": RACK, **annotations}},
                     "spec": {"containers": [{"name": "c", "image": "vllm"}]}})


def test_a_group_composed_from_the_sets_pods_is_indexed_as_the_reconciler_indexes_it() -> None:
    def composed(first: Any) -> Workload:  # the pod integration's pod sets, indexed by its own label
        return Workload(meta=ObjectMeta(name="g", namespace="team"),
                        pod_sets=(pod_set_of(first, "leader"), pod_set_of(first, "worker", 3)))

    plain = composed(group_pod({}))
    assert [ps.topology_request for ps in plain.pod_sets] == [{"required": RACK, "podIndexLabel": POD_INDEX_LABEL}] * 2
    own_by_parent(plain, group_pod({}))  # not a LeaderWorkerSet's Pod: left alone
    assert [ps.topology_request for ps in plain.pod_sets] == [{"required": RACK, "podIndexLabel": POD_INDEX_LABEL}] * 2
    first = group_pod({"kueue.x-k8s.io/pod-suspending-parent": lws_mod.FRAMEWORK})
    wl = composed(first)
    own_by_parent(wl, first)
    assert [ps.topology_request for ps in wl.pod_sets] == [
        {"required": RACK}, {"required": RACK, "podIndexLabel": lws_mod.WORKER_INDEX_LABEL}]


def test_workers_indexed_from_1_are_placed_by_rank() -> None:
    ta = TopologyAssignment((HOST,), ((("h1",), 1), (("h2",), 1), (("h3",), 1)))
    workers = [TasPod(f"w{i}", True, {}, {lws_mod.WORKER_INDEX_LABEL: str(i)}, created=10.0 - i) for i in (1, 2, 3)]
    base = rank_offsets([("leader", 1, None), ("worker", 3, None)])["worker"]
    ranks = with_offset_annotation(base, {OFFSET: "1"})
    assert ranks == RankRange(1, 4)
    got = assign_gated_pods(ta, 3, workers, {"podIndexLabel": lws_mod.WORKER_INDEX_LABEL}, ranks)
    assert got == [("w1", {HOST: "h1"}), ("w2", {HOST: "h2"}), ("w3", {HOST: "h3"})]
