"""``mkhub dev-cluster --nodes blocks=2,racks=2,hosts=2,gpu=4`` as a process, through the real kubectl:
eight Ready Nodes labelled by block, rack and host with allocatable GPUs, and pods bound only to
nodes of the rack their nodeSelector names while those have room (the rest stay Pending with
kube-scheduler's message)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_dev_cluster import DevClusterProcess

pytestmark = pytest.mark.timeout(240)

RACK = "cloud.provider.com/topology-rack"
JOB = {
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "rack-bound", "namespace": "default", "annotations": {"mkhub.dev/sim-duration": "600s"}},
    "spec": {"parallelism": 3, "completions": 3, "template": {"spec": {
        "restartPolicy": "Never", "nodeSelector": {RACK: "b2-r1"},
        "containers": [{"name": "main", "image": "busybox",
                        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "3"}, "limits": {"nvidia.com/gpu": "3"}}}]}}},
}


@pytest.fixture
def cluster(tmp_path: Path, kubectl_required: None) -> Iterator[DevClusterProcess]:
    dc = DevClusterProcess(tmp_path / "dev", Path("blocks=2,racks=2,hosts=2,gpu=4"))
    dc.start()
    try:
        yield dc
    finally:
        dc.stop()


def test_nodes_from_a_spec_and_pods_bound_where_they_fit(cluster: DevClusterProcess) -> None:
    nodes = cluster.get("nodes")["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == [
        f"b{b}-r{r}-h{h}" for b in (1, 2) for r in (1, 2) for h in (1, 2)]
    node = next(n for n in nodes if n["metadata"]["name"] == "b2-r1-h2")
    labels = node["metadata"]["labels"]
    assert (labels["cloud.provider.com/topology-block"], labels[RACK], labels["kubernetes.io/hostname"]) == (
        "b2", "b2-r1", "b2-r1-h2")
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert [c["type"] for c in node["status"]["conditions"] if c["status"] == "True"] == ["Ready"]

    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(JOB))

    def placed() -> list[dict[str, Any]] | None:
        items = cluster.get("pods", "-n", "default", "-l", "job-name=rack-bound")["items"]
        done = len(items) == 3 and all((p.get("status") or {}).get("conditions") for p in items)
        return items if done else None

    deadline = time.monotonic() + 60
    while (items := placed()) is None:
        assert time.monotonic() < deadline, "the Job's three pods were not all looked at by the scheduler"
        time.sleep(0.2)
    bound = sorted(p["spec"]["nodeName"] for p in items if p["spec"].get("nodeName"))
    assert bound == ["b2-r1-h1", "b2-r1-h2"]  # one 3-GPU pod per 4-GPU host of the rack
    (pending,) = [p for p in items if not p["spec"].get("nodeName")]
    assert pending["status"]["conditions"][0]["message"].startswith(
        "0/8 nodes are available: 2 Insufficient nvidia.com/gpu, 6 node(s) didn't match Pod's node affinity/selector.")
