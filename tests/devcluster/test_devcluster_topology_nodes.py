"""``mkhub dev-cluster --nodes SPEC``: block/rack/host topologies with allocatable resources, and a
scheduler that binds a pod only to a node that matches it and has room for its requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_devcluster import Clock, cluster, job, pods

from hub.devcluster.nodes import NodesError, load_nodes, parse_node_spec, parse_nodes
from hub.store import SQLiteStore

BLOCK, RACK, HOST = "cloud.provider.com/topology-block", "cloud.provider.com/topology-rack", "kubernetes.io/hostname"


def test_a_spec_makes_blocks_of_racks_of_hosts_labelled_as_kueues_examples() -> None:
    nodes = parse_node_spec("blocks=2,racks=4,hosts=8,gpu=8")
    assert len(nodes) == 64 and len({n.name for n in nodes}) == 64
    node = next(n for n in nodes if n.name == "b2-r3-h5")
    assert dict(node.all_labels) | {} == {
        BLOCK: "b2", RACK: "b2-r3", HOST: "b2-r3-h5", "cloud.provider.com/node-group": "tas-group",
        "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    assert node.allocatable == {"cpu": 8000, "memory": 64 * 2**30, "pods": 110, "nvidia.com/gpu": 8}
    assert len({n.labels[RACK] for n in nodes}) == 8  # racks are unique across blocks
    flat = parse_node_spec("racks=2,hosts=3,cpu=500m,group=")
    assert [n.name for n in flat] == ["r1-h1", "r1-h2", "r1-h3", "r2-h1", "r2-h2", "r2-h3"]
    assert BLOCK not in flat[0].labels and "cloud.provider.com/node-group" not in flat[0].labels
    assert flat[0].allocatable["cpu"] == 500 and "nvidia.com/gpu" not in flat[0].allocatable
    assert load_nodes(Path("hosts=2")) == parse_node_spec("hosts=2")  # --nodes takes a spec or a file


@pytest.mark.parametrize(("spec", "message"), [
    ("blocks=2", "hosts is required"),
    ("hosts=0", "hosts must be a positive integer, got '0'"),
    ("hosts=2,zones=3", "unknown key 'zones' (known: blocks, racks, hosts, cpu, memory, pods, gpu, group)"),
    ("hosts=2,hosts=3", "hosts given twice"),
    ("hosts=2,gpu=-1", "gpu must not be negative"),
    ("hosts=2,memory=lots", "memory: 'lots' is not a quantity"),
    ("blocks=100,racks=100,hosts=100", "1000000 nodes is more than the 10000 a dev-cluster simulates"),
])
def test_a_bad_spec_is_refused_naming_the_key(spec: str, message: str) -> None:
    with pytest.raises(NodesError) as err:
        parse_node_spec(spec)
    assert message in str(err.value) and str(err.value).startswith(f"--nodes {spec}: ")


def gpu_job(name: str, count: int, gpus: int, **pod_spec: Any) -> dict[str, Any]:
    return job(name, parallelism=count, completions=count, pod_spec={"containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}}}],
        **pod_spec})


def test_pods_are_bound_only_where_their_requests_fit(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, parse_node_spec("racks=2,hosts=2,gpu=4"))
    node = store.get("Node", "", "r1-h1")
    assert node is not None and node["status"]["allocatable"] == {
        "cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4", "pods": "110"}
    # Four pods of 3 GPUs: one per host, whatever the load order.
    store.create(gpu_job("big", 4, 3))
    dc.step()
    bound = sorted(p["spec"]["nodeName"] for p in pods(store))
    assert bound == ["r1-h1", "r1-h2", "r2-h1", "r2-h2"]
    # Two more GPUs wanted by a pod that must go to rack r2: one GPU is left on each host there.
    store.create(gpu_job("rack", 1, 2, nodeSelector={RACK: "r2"}))
    dc.step()
    (waiting,) = [p for p in pods(store) if p["metadata"]["labels"]["job-name"] == "rack"]
    assert "nodeName" not in waiting["spec"]
    cond = waiting["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("Unschedulable", (
        "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/4 nodes are available: 2 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."))
    # The first Job's pods end: the room they held is free, and the waiting pod is bound in r2.
    clock.t += 11
    dc.step()
    (placed,) = [p for p in pods(store) if p["metadata"]["labels"]["job-name"] == "rack"]
    assert placed["spec"]["nodeName"] in ("r2-h1", "r2-h2")


def test_nodes_of_a_file_without_allocatable_take_any_number_of_pods(store: SQLiteStore, clock: Clock) -> None:
    dc = cluster(store, clock, parse_nodes({"nodes": [{"name": "only"}]}))
    store.create(gpu_job("many", 5, 100))
    dc.step()
    assert [p["spec"].get("nodeName") for p in pods(store)] == ["only"] * 5


def test_kueues_kind_cluster_file_gives_its_nodes(store: SQLiteStore, clock: Clock) -> None:
    """--nodes e2e/kueue-examples/tas/kind-cluster.yaml (Kueue's TAS example cluster, unchanged)."""
    path = Path(__file__).resolve().parents[2] / "e2e" / "kueue-examples" / "tas" / "kind-cluster.yaml"
    nodes = load_nodes(path)
    assert [n.name for n in nodes] == ["kind-control-plane", "kind-worker", *(f"kind-worker{i}" for i in range(2, 9))]
    assert [(n.labels[BLOCK], n.labels[RACK]) for n in nodes[1:]] == [
        ("b1", "r1"), ("b1", "r1"), ("b1", "r2"), ("b1", "r2"), ("b2", "r1"), ("b2", "r1"), ("b2", "r2"), ("b2", "r2")]
    assert nodes[0].taints[0].key == "node-role.kubernetes.io/control-plane"  # kubeadm's: no workload pods there
    dc = cluster(store, clock, nodes)
    store.create(gpu_job("cpu-only", 1, 0, nodeSelector={BLOCK: "b2", RACK: "r1"}))
    dc.step()
    assert pods(store)[0]["spec"]["nodeName"] in ("kind-worker5", "kind-worker6")
