"""What the hub on Kubernetes lists and watches for topology-aware scheduling: Kueue sets up its TAS
controllers (Topologies, Nodes, and every Pod for the non-TAS usage) only with the
TopologyAwareScheduling gate on, whether or not a TAS flavor exists."""

from __future__ import annotations

from hub.api.config import parse_configuration
from hub.service.kubemode import KubeOptions, store_options, watched_job_kinds


def kinds(config: dict[str, object], tas: bool) -> tuple[str, ...]:
    opts = KubeOptions(kubeconfig=None, job_kinds=watched_job_kinds(parse_configuration(config)), tas=tas)
    return tuple(store_options(opts).kinds)


def test_the_gate_on_watches_topologies_nodes_and_every_pod() -> None:
    watched = kinds({}, tas=True)
    assert {"Topology", "Node", "Pod"} <= set(watched)


def test_the_gate_off_watches_no_pod_node_or_topology() -> None:
    watched = kinds({"featureGates": {"TopologyAwareScheduling": False}}, tas=False)
    assert not {"Topology", "Node", "Pod"} & set(watched)


def test_the_gate_off_with_the_pod_framework_still_watches_pods() -> None:
    watched = kinds({"integrations": {"frameworks": ["pod"]}}, tas=False)
    assert "Pod" in watched and "Node" not in watched
