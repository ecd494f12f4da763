"""Topology-aware scheduling in a real embedded hub, through the real CLI: a Topology, its flavor and
queues, Nodes applied as any object (``mkhub apply -f nodes.yaml``, listed by ``mkhub get nodes``), and
a rack-required Job shaped after Kueue's TAS example, admitted with all its pods in one rack."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_kueue_manifests import SHAPED, mkhub

from hub.api.errors import FieldErrors
from hub.api.topology_assignment import read_topology_assignment
from hub.demo.processes import HubProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubProcess]:
    with HubProcess(tmp_path_factory.mktemp("tas") / "data") as proc:
        for name in ("tas-queues.yaml", "tas-nodes.yaml"):
            code, out, err = mkhub(proc, "apply", "-f", str(SHAPED / name))
            assert code == 0 and not err, (out, err)
        yield proc


def admission(hub: HubProcess) -> Any:
    code, out, err = mkhub(hub, "get", "wl", "-n", "default", "-o", "json")
    assert code == 0, err
    items = json.loads(out)["items"]
    return (items[0].get("status") or {}).get("admission") if items else None


def test_a_rack_required_job_lands_in_one_rack(hub: HubProcess) -> None:
    code, out, err = mkhub(hub, "get", "nodes")
    assert code == 0 and len(out.splitlines()) == 13, (out, err)
    code, out, err = mkhub(hub, "create", "-f", str(SHAPED / "tas-job-required.yaml"))
    assert code == 0, err
    deadline = time.monotonic() + 30
    while (admitted := admission(hub)) is None:
        assert time.monotonic() < deadline, "the Job's Workload was never admitted"
        time.sleep(0.1)
    [psa] = admitted["podSetAssignments"]
    ta = read_topology_assignment(psa["topologyAssignment"], "", FieldErrors())
    assert ta is not None and ta.levels == ("kubernetes.io/hostname",) and ta.pod_count == 10
    racks = {values[0].rsplit("-", 1)[0] for values, _ in ta.domains}
    assert len(racks) == 1 and len(ta.domains) == 3  # 4 + 4 + 2 pods on the three hosts of one rack


def test_a_node_applied_not_ready_moves_the_job_off_it(hub: HubProcess, tmp_path: Any) -> None:
    """Kueue's node failure handling through ``mkhub apply``: the Job's rack has no room for the pods of its
    failed node, so it is evicted (NodeFailures, fail fast) and admitted again in another rack."""
    job = tmp_path / "job.json"
    job.write_text(json.dumps({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "failover", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "tas-user-queue"},
                     "annotations": {"mkhub.dev/sim-duration": "1h"}},
        "spec": {"parallelism": 10, "completions": 10, "completionMode": "Indexed", "template": {
            "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": "cloud.provider.com/topology-rack"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                                                               "resources": {"requests": {"cpu": "1"}}}]}}}}))
    code, out, err = mkhub(hub, "create", "-f", str(job))
    assert code == 0, (out, err)

    def status() -> Any:
        code, out, err = mkhub(hub, "get", "wl", "-n", "default", "-o", "json")
        assert code == 0, err
        mine = [w for w in json.loads(out)["items"] if w["metadata"]["name"].startswith("job-failover-")]
        return (mine[0].get("status") or {}) if mine else {}

    def placed(st: Any) -> Any:
        adm = st.get("admission")
        return read_topology_assignment(adm["podSetAssignments"][0]["topologyAssignment"], "", FieldErrors()) if adm else None

    deadline = time.monotonic() + 30
    while (ta := placed(status())) is None:
        assert time.monotonic() < deadline, "the Job's Workload was never admitted"
        time.sleep(0.1)
    failed = ta.domains[0][0][0]
    block, rack = failed.split("-")[0], failed.rsplit("-", 1)[0]
    manifest = tmp_path / "failed-node.json"
    manifest.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": failed, "labels": {
            "cloud.provider.com/node-group": "tas-group", "cloud.provider.com/topology-block": block,
            "cloud.provider.com/topology-rack": rack, "kubernetes.io/hostname": failed}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "False"}]}}))
    code, out, err = mkhub(hub, "apply", "-f", str(manifest))
    assert code == 0, (out, err)
    deadline = time.monotonic() + 60
    while True:
        st = status()
        evictions = (st.get("schedulingStats") or {}).get("evictions") or []
        ta = placed(st)
        if evictions and ta is not None:
            break
        assert time.monotonic() < deadline, json.dumps(st)
        time.sleep(0.2)
    assert [e["reason"] for e in evictions] == ["NodeFailures"]
    racks = {values[0].rsplit("-", 1)[0] for values, _ in ta.domains}
    assert len(racks) == 1 and racks != {rack} and ta.pod_count == 10
