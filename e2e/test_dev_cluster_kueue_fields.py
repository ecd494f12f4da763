"""Every field of Kueue's types through the real kubectl against ``mkhub dev-cluster``: Kueue's
concurrent-admission example (e2e/kueue-examples, unchanged) is applied with kubectl's default
strict field validation and kept whole; a misspelt field is refused naming its path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dev_cluster import NODES, REPO, DevClusterProcess

pytestmark = pytest.mark.timeout(240)

EXAMPLE = Path(__file__).resolve().parent / "kueue-examples" / "concurrent-admission-setup.yaml"


@pytest.fixture
def cluster(tmp_path: Path, kubectl_required: None) -> Iterator[DevClusterProcess]:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(NODES)
    dc = DevClusterProcess(tmp_path / "dev", nodes)
    dc.start()
    try:
        dc.kubectl("apply", "-f", str(REPO / "manifests" / "crds"))
        yield dc
    finally:
        dc.stop()


def test_kueues_concurrent_admission_example_is_applied_whole(cluster: DevClusterProcess) -> None:
    done = cluster.kubectl("apply", "-f", str(EXAMPLE), check=False)
    assert done.returncode == 0 and "unknown field" not in done.stderr, done.stderr
    assert "clusterqueue.kueue.x-k8s.io/team-cluster-queue created" in done.stdout
    cq = cluster.get("clusterqueue", "team-cluster-queue")
    assert cq["spec"]["concurrentAdmissionPolicy"] == {"migration": {"mode": "TryPreferredFlavors"}}
    assert [f["name"] for f in cq["spec"]["resourceGroups"][0]["flavors"]] == ["reservation", "on-demand", "spot"]

    misspelt = EXAMPLE.read_text().replace("  namespaceSelector: {}", "  namespaceSelector: {}\n  bogusField: 3")
    refused = cluster.kubectl("apply", "-f", "-", stdin=misspelt.replace("team-cluster-queue", "other-cq"), check=False)
    assert refused.returncode != 0
    assert 'strict decoding error: unknown field "spec.bogusField"' in refused.stderr
    assert cluster.kubectl("get", "clusterqueue", "other-cq", check=False).returncode != 0
